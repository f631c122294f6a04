//! The server workload: generated ConfigMap, Deployment (its Pod is `pod.rs`'s), ServiceAccount
//! and data PVC.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMap, LocalObjectReference, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PodTemplateSpec, ServiceAccount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::inputs::Inputs;
use super::object::Common;
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
pub(super) fn service_account(stack: &Stack, pull_secrets: &[String]) -> Option<ServiceAccount> {
    if stack.user_service_account().is_some() {
        return None;
    }
    let secrets = pull_secrets
        .iter()
        .map(|name| LocalObjectReference { name: name.clone() })
        .collect();
    Some(ServiceAccount {
        metadata: ObjectMeta {
            name: Some(managed_service_account_name(stack.name())),
            ..ObjectMeta::default()
        },
        automount_service_account_token: Some(false),
        image_pull_secrets: Some(secrets),
        ..ServiceAccount::default()
    })
}

/// The PersistentVolumeClaim for `workload.storage`, if asked for.
pub(super) fn persistent_volume_claim(stack: &Stack) -> Option<PersistentVolumeClaim> {
    let storage = stack.storage?;
    let size = storage
        .size
        .clone()
        .unwrap_or_else(|| Quantity(DEFAULT_STORAGE_SIZE.to_owned()));
    Some(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(stack.claim_name()),
            ..ObjectMeta::default()
        },
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
}

/// The generated, immutable, hash-named ConfigMap.
pub(super) fn config_map(stack: &Stack, generated: &GeneratedConfig) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(stack.name(), &generated.hash)),
            annotations: Some(BTreeMap::from([(
                CONFIG_HASH.to_owned(),
                generated.hash.clone(),
            )])),
            ..ObjectMeta::default()
        },
        immutable: Some(true),
        data: Some(BTreeMap::from([(
            "config.yaml".to_owned(),
            generated.yaml.clone(),
        )])),
        ..ConfigMap::default()
    }
}

/// The Deployment running the server with the resolved image and the config ConfigMap.
pub(super) fn deployment(stack: &Stack, common: &Common, inputs: &Inputs) -> Deployment {
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
    let mut pod_labels = common.labels.clone();
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
            LabelSelector {
                match_labels: Some(existing.clone()),
                ..LabelSelector::default()
            }
        }
        None => common.selector.clone(),
    };
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        }),
        spec: Some(pod::pod(stack, common, inputs)),
    };
    Deployment {
        metadata: ObjectMeta {
            name: Some(stack.name().to_owned()),
            ..ObjectMeta::default()
        },
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
    }
}
