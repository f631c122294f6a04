//! The server workload: generated ConfigMap, Deployment (its Pod is `pod.rs`'s), ServiceAccount
//! and data PVC.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMap, LocalObjectReference, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PodTemplateSpec, ServiceAccount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::inputs::Inputs;
use super::object::{BuildError, common_labels, match_labels, metadata, pod_selector, stamped};
use super::pod;
use crate::core::stack::Stack;
use crate::naming::{
    CA_BUNDLE_HASH, CONFIG_HASH, SECRETS_HASH, config_map_name, labels,
    managed_service_account_name,
};
use crate::stack_config::GeneratedConfig;

/// Size of the data PVC when `workload.storage.size` is not set.
pub const DEFAULT_STORAGE_SIZE: &str = "10Gi";

/// The managed ServiceAccount: no API token (the server never calls the API server), and the
/// pull secrets of the namespace's `default` ServiceAccount, so private images pull as they
/// would without it. `None` when the user names their own.
pub fn service_account(
    stack: &Stack,
    pull_secrets: &[String],
) -> Result<Option<ServiceAccount>, BuildError> {
    if stack.user_service_account().is_some() {
        return Ok(None);
    }
    let secrets = pull_secrets
        .iter()
        .map(|name| LocalObjectReference { name: name.clone() })
        .collect();
    stamped(ServiceAccount {
        metadata: metadata(stack, &managed_service_account_name(stack.name)),
        automount_service_account_token: Some(false),
        image_pull_secrets: Some(secrets),
        ..ServiceAccount::default()
    })
    .map(Some)
}

/// The PersistentVolumeClaim for `workload.storage`, if asked for.
pub fn persistent_volume_claim(stack: &Stack) -> Result<Option<PersistentVolumeClaim>, BuildError> {
    let Some(storage) = stack.storage else {
        return Ok(None);
    };
    let size = storage
        .size
        .clone()
        .unwrap_or_else(|| Quantity(DEFAULT_STORAGE_SIZE.to_owned()));
    stamped(PersistentVolumeClaim {
        metadata: metadata(stack, &stack.claim_name()),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), size)])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    })
    .map(Some)
}

/// The generated, immutable, hash-named ConfigMap.
pub fn config_map(stack: &Stack, generated: &GeneratedConfig) -> ConfigMap {
    let mut metadata = metadata(stack, &config_map_name(stack.name, &generated.hash));
    metadata.annotations = Some(BTreeMap::from([(
        CONFIG_HASH.to_owned(),
        generated.hash.clone(),
    )]));
    ConfigMap {
        metadata,
        immutable: Some(true),
        data: Some(BTreeMap::from([(
            "config.yaml".to_owned(),
            generated.yaml.clone(),
        )])),
        ..ConfigMap::default()
    }
}

/// The Deployment running the server with the resolved image and the config ConfigMap.
pub fn deployment(stack: &Stack, inputs: &Inputs) -> Result<Deployment, BuildError> {
    let workload = stack.workload;
    let mut annotations = BTreeMap::new();
    if let Some(generated) = inputs.generated {
        annotations.insert(CONFIG_HASH.to_owned(), generated.hash.clone());
    }
    if let Some(hash) = inputs.secrets_hash {
        annotations.insert(SECRETS_HASH.to_owned(), hash.to_owned());
    }
    if let Some(pem) = inputs.ca_bundle {
        let hash = llama_stack_resolver::sha256_hex(pem.as_bytes());
        annotations.insert(CA_BUNDLE_HASH.to_owned(), hash);
    }
    let mut pod_labels = common_labels(stack);
    for (key, value) in stack.door.pod_labels() {
        pod_labels.insert((*key).to_owned(), (*value).to_owned());
    }
    if stack.has_external_providers() {
        pod_labels.insert(labels::EXTERNAL_PROVIDERS.to_owned(), "true".to_owned());
    }
    let selector = match inputs.existing_selector {
        Some(existing) => {
            for (k, v) in existing {
                pod_labels.entry(k.clone()).or_insert_with(|| v.clone());
            }
            match_labels(existing.clone())
        }
        None => pod_selector(stack),
    };
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        }),
        spec: Some(pod::pod(stack, inputs)),
    };
    stamped(Deployment {
        metadata: metadata(stack, stack.name),
        spec: Some(DeploymentSpec {
            selector,
            template,
            replicas: workload
                .autoscaling
                .is_none()
                .then(|| workload.replicas.unwrap_or(1)),
            // A ReadWriteOnce volume cannot be attached to the old and the new Pod at once.
            strategy: stack.storage.map(|_| DeploymentStrategy {
                type_: Some("Recreate".to_owned()),
                rolling_update: None,
            }),
            progress_deadline_seconds: workload.progress_deadline_seconds,
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    })
}
