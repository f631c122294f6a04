//! Desired objects of a v1alpha2 LlamaStackDistribution (pure). Only the fields the operator owns
//! are set (server-side apply). Every object carries [`DESIRED_HASH`], the hash of what the
//! operator wants, so an unchanged object is recognised without a write.

mod ca_bundle;
pub mod external;
mod network;
mod scaling;
mod workload;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Resource;
use kube::api::DynamicObject;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::api::v1alpha2::LlamaStackDistribution;
use crate::config::GeneratedConfig;

pub use ca_bundle::{CA_BUNDLE_KEY, CaBundleError, ca_bundle_name, collect_certificates};
pub use network::{ingress_name, network_policy_name, route_resource, service_name};
pub use scaling::{hpa_name, minimum_replicas, pdb_name};
pub use workload::{
    CONFIG_DIR, DEFAULT_STORAGE_SIZE, config_map, deployment, managed_service_account_name,
    persistent_volume_claim, pvc_name, service_account_name,
};

/// Field manager of every apply.
pub const FIELD_MANAGER: &str = "llama-stack-operator";
/// Pod-template annotation carrying the generated config's hash (a change rolls the Pods).
pub const CONFIG_HASH: &str = "llamastack.io/config-hash";
/// Pod-template annotation carrying the hash of the referenced Secret values (a change rolls).
pub const SECRETS_HASH: &str = "llamastack.io/secrets-hash";
/// Pod-template annotation carrying the hash of the managed CA bundle (a change rolls).
pub const CA_BUNDLE_HASH: &str = "llamastack.io/ca-bundle-hash";
/// Annotation carrying the hash of everything the operator applied to an object.
pub const DESIRED_HASH: &str = "llamastack.io/desired-hash";
const DEFAULT_PORT: i32 = 8321;

/// What the builders need besides the resource itself.
#[derive(Clone, Debug, Default)]
pub struct Inputs<'a> {
    /// Digest-pinned (or catalog) image of the server.
    pub image: &'a str,
    /// The generated config (or the user's, for `overrideConfig`).
    pub generated: Option<&'a GeneratedConfig>,
    /// Name of the ConfigMap the Pods mount.
    pub config_map: &'a str,
    /// Whether that ConfigMap is generated (and so built here).
    pub generated_config_map: bool,
    /// Validated PEM certificates of the managed CA bundle.
    pub ca_bundle: Option<&'a str>,
    /// Hash of the referenced Secret values (rolls the Pods when a value changes).
    pub secrets_hash: Option<&'a str>,
    /// Pull secrets of the namespace's default ServiceAccount, given to the server's own.
    pub pull_secrets: &'a [String],
    /// Namespace of the operator (allowed by the NetworkPolicy).
    pub operator_namespace: Option<&'a str>,
    /// Whether the cluster serves OpenShift Routes (exposure by Route instead of Ingress).
    pub routes_available: bool,
    /// The operator's own image (its static binary runs the external-provider steps).
    pub operator_image: &'a str,
    /// The selector of a Deployment of the same name that already exists (immutable): kept, and
    /// its labels put on the Pods, so one made by the upstream operator is taken over in place.
    pub existing_selector: Option<&'a BTreeMap<String, String>>,
}

/// Every object the operator wants for one LlamaStackDistribution; `None` means "must not exist".
#[derive(Clone, Debug)]
pub struct Desired {
    /// The generated config (absent for `overrideConfig`).
    pub config_map: Option<ConfigMap>,
    /// The server.
    pub deployment: Deployment,
    /// ClusterIP Service in front of it.
    pub service: Service,
    /// The server's own ServiceAccount (absent when the user names one).
    pub service_account: Option<ServiceAccount>,
    /// Data volume for `workload.storage`.
    pub pvc: Option<PersistentVolumeClaim>,
    /// Managed copy of the validated CA bundle.
    pub ca_bundle: Option<ConfigMap>,
    /// For `networking.allowedFrom`.
    pub network_policy: Option<NetworkPolicy>,
    /// For `networking.expose` without Routes.
    pub ingress: Option<Ingress>,
    /// For `networking.expose` on OpenShift.
    pub route: Option<DynamicObject>,
    /// For `workload.autoscaling`.
    pub hpa: Option<HorizontalPodAutoscaler>,
    /// When more than one replica runs (never blocks a drain of a single replica).
    pub pdb: Option<PodDisruptionBudget>,
}

/// Builds every desired object.
pub fn desired(cr: &LlamaStackDistribution, inputs: &Inputs) -> Result<Desired, serde_json::Error> {
    let config_map = match (inputs.generated_config_map, inputs.generated) {
        (true, Some(generated)) => Some(config_map(cr, generated)?),
        _ => None,
    };
    let ca_bundle = inputs
        .ca_bundle
        .map(|pem| ca_bundle::config_map(cr, pem))
        .transpose()?;
    let (ingress, route) = network::exposure(cr, inputs.routes_available)?;
    Ok(Desired {
        config_map,
        deployment: deployment(cr, inputs)?,
        service: network::service(cr)?,
        service_account: workload::service_account(cr, inputs.pull_secrets)?,
        pvc: persistent_volume_claim(cr)?,
        ca_bundle,
        network_policy: network::network_policy(cr, inputs.operator_namespace)?,
        ingress,
        route,
        hpa: scaling::hpa(cr)?,
        pdb: scaling::pdb(cr)?,
    })
}

fn name_of(cr: &LlamaStackDistribution) -> String {
    cr.metadata.name.clone().unwrap_or_default()
}

fn labels(cr: &LlamaStackDistribution) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_owned(),
            "llama-stack".to_owned(),
        ),
        ("app.kubernetes.io/instance".to_owned(), name_of(cr)),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            FIELD_MANAGER.to_owned(),
        ),
    ])
}

fn selector(cr: &LlamaStackDistribution) -> Value {
    json!({"app.kubernetes.io/name": "llama-stack", "app.kubernetes.io/instance": cr.metadata.name})
}

/// The controller owner reference; none for an object not yet stored (no uid, e.g. `render`).
fn owners(cr: &LlamaStackDistribution) -> Value {
    Value::Array(
        cr.controller_owner_ref(&())
            .and_then(|o| serde_json::to_value(o).ok())
            .into_iter()
            .collect(),
    )
}

/// Standard metadata of an owned object.
fn metadata(cr: &LlamaStackDistribution, name: &str) -> Value {
    json!({"name": name, "namespace": cr.metadata.namespace, "labels": labels(cr), "ownerReferences": owners(cr)})
}

fn port(cr: &LlamaStackDistribution) -> i32 {
    cr.spec.networking.as_ref().map_or(DEFAULT_PORT, |n| n.port)
}

/// Converts to the typed object and adds [`DESIRED_HASH`]: the hash of its canonical form (the
/// typed serialization, whose maps are sorted), so equal content always hashes equal, whatever
/// order the builder inserted keys in.
fn stamped<K>(object: Value) -> Result<K, serde_json::Error>
where
    K: DeserializeOwned + serde::Serialize + Resource,
{
    let mut typed: K = serde_json::from_value(object)?;
    let canonical = serde_json::to_string(&typed)?;
    let hash = llama_stack_resolver::base_config::sha256_hex(canonical.as_bytes());
    typed
        .meta_mut()
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESIRED_HASH.to_owned(), hash);
    Ok(typed)
}

#[cfg(test)]
mod tests;
