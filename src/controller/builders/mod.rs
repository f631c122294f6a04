//! Desired objects of a v1alpha2 LlamaStackDistribution (pure). Only the fields the operator owns
//! are set (server-side apply). Every object carries [`DESIRED_HASH`], the hash of what the
//! operator wants, so an unchanged object is recognised without a write.

mod ca_bundle;
mod derived;
pub mod external;
mod names;
mod network;
mod scaling;
pub(crate) mod user_parts;
mod workload;

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Resource;
use kube::api::DynamicObject;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::api::v1alpha2::LlamaStackDistribution;
use crate::stack_config::GeneratedConfig;

pub use ca_bundle::{CA_BUNDLE_KEY, CaBundleError, ca_bundle_name, collect_certificates};
pub use derived::{derived_secret_key, derived_secret_name};
pub use names::{CONFIG_DIR, DEFAULT_PORT, PORT_NAME, labels, volumes};
pub use network::{
    SERVICE_SUFFIX, exposure_warning, ingress_name, network_policy_name, route_resource,
    service_name,
};
pub use scaling::{hpa_name, minimum_replicas, pdb_name, pdb_warning};
pub use workload::{
    DEFAULT_STORAGE_SIZE, config_dir, config_map, config_map_name, deployment,
    generated_config_map_prefix, managed_service_account_name, persistent_volume_claim, pvc_name,
    service_account_name,
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

/// Why an owned object could not be built. Always a bug in a builder, never the user's input.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The built JSON is not a valid object of its kind.
    #[error("cannot build the {kind}")]
    Invalid {
        /// Kind of the object.
        kind: &'static str,
        /// Cause.
        source: serde_json::Error,
    },
    /// The builder set a field the object's type does not have (a misspelt key), which the
    /// conversion to the typed object would otherwise drop without a word.
    #[error("the {kind} builder set {path}, which a {kind} does not have")]
    UnknownField {
        /// Kind of the object.
        kind: &'static str,
        /// JSON path of the field.
        path: String,
    },
}

/// What the builders need besides the resource itself.
#[derive(Clone, Debug, Default)]
pub struct Inputs<'a> {
    /// Digest-pinned (or catalog) image of the server.
    pub image: &'a str,
    /// The generated config (or the user's, for `overrideConfig`).
    pub generated: Option<&'a GeneratedConfig>,
    /// Which config the server runs and how it reaches the container.
    pub config: ServerConfig<'a>,
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
    /// The parts of connection strings the server reads from the `<name>-derived` Secret.
    pub derived: Option<&'a BTreeMap<String, ByteString>>,
}

/// Which config the server runs, and how it reaches the server container.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerConfig<'a> {
    /// The generated, hash-named ConfigMap of this name (built here), key `config.yaml`.
    Generated(&'a str),
    /// The user's ConfigMap, mounted whole (as the upstream operator did); the server runs `key`.
    User {
        /// The ConfigMap.
        config_map: &'a str,
        /// The key holding the config.
        key: &'a str,
    },
    /// The image's own config and entrypoint: no config is mounted and no command set.
    #[default]
    Image,
}

impl ServerConfig<'_> {
    /// The ConfigMap the Pods mount, if any.
    pub fn config_map(&self) -> Option<&str> {
        match *self {
            Self::Generated(name)
            | Self::User {
                config_map: name, ..
            } => Some(name),
            Self::Image => None,
        }
    }

    /// The file name of the config inside the mounted ConfigMap.
    pub fn key(&self) -> &str {
        match *self {
            Self::User { key, .. } => key,
            Self::Generated(_) | Self::Image => "config.yaml",
        }
    }
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
    /// The user's budget, else one when more than one replica runs.
    pub pdb: Option<PodDisruptionBudget>,
    /// The parts of connection strings (`<name>-derived`), when the config needs any.
    pub derived_secret: Option<Secret>,
}

/// Builds every desired object.
pub fn desired(cr: &LlamaStackDistribution, inputs: &Inputs) -> Result<Desired, BuildError> {
    let config_map = match (inputs.config, inputs.generated) {
        (ServerConfig::Generated(_), Some(generated)) => Some(config_map(cr, generated)?),
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
        derived_secret: inputs
            .derived
            .map(|data| derived::secret(cr, data))
            .transpose()?
            .flatten(),
    })
}

fn name_of(cr: &LlamaStackDistribution) -> String {
    cr.metadata.name.clone().unwrap_or_default()
}

/// The labels of every owned object.
fn common_labels(cr: &LlamaStackDistribution) -> BTreeMap<String, String> {
    let mut labels = selector_labels(cr);
    labels.insert(labels::MANAGED_BY.to_owned(), FIELD_MANAGER.to_owned());
    labels
}

/// The labels that select the server Pods.
fn selector_labels(cr: &LlamaStackDistribution) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::NAME.to_owned(), labels::APP.to_owned()),
        (labels::INSTANCE.to_owned(), name_of(cr)),
    ])
}

fn selector(cr: &LlamaStackDistribution) -> Value {
    json!(selector_labels(cr))
}

/// The label selector of everything the operator made for the resource named `name`.
pub fn owned_by_selector(name: &str) -> String {
    format!(
        "{}={name},{}={FIELD_MANAGER}",
        labels::INSTANCE,
        labels::MANAGED_BY
    )
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
    json!({"name": name, "namespace": cr.metadata.namespace, "labels": common_labels(cr), "ownerReferences": owners(cr)})
}

fn port(cr: &LlamaStackDistribution) -> i32 {
    cr.spec.networking.as_ref().map_or(DEFAULT_PORT, |n| n.port)
}

/// Converts the builder's JSON to the typed object, refusing any field the type would drop.
fn typed<K>(kind: &'static str, object: Value) -> Result<K, BuildError>
where
    K: DeserializeOwned + serde::Serialize,
{
    let invalid = |source| BuildError::Invalid { kind, source };
    let typed: K = serde_json::from_value(object.clone()).map_err(invalid)?;
    let kept = serde_json::to_value(&typed).map_err(invalid)?;
    match dropped_field(&object, &kept, "") {
        Some(path) => Err(BuildError::UnknownField { kind, path }),
        None => Ok(typed),
    }
}

/// The path of the first field set (not null) in `built` that is missing from `kept`.
fn dropped_field(built: &Value, kept: &Value, path: &str) -> Option<String> {
    match (built, kept) {
        (Value::Object(built), Value::Object(kept)) => built.iter().find_map(|(key, value)| {
            let here = format!("{path}.{key}");
            match kept.get(key) {
                _ if value.is_null() => None,
                None => Some(here),
                Some(kept) => dropped_field(value, kept, &here),
            }
        }),
        (Value::Array(built), Value::Array(kept)) => built
            .iter()
            .zip(kept)
            .enumerate()
            .find_map(|(i, (b, k))| dropped_field(b, k, &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// The typed object (checked by [`typed`]) with [`DESIRED_HASH`].
fn stamped<K>(object: Value) -> Result<K, BuildError>
where
    K: DeserializeOwned + serde::Serialize + Resource<DynamicType = ()>,
{
    let kind = match K::kind(&()) {
        std::borrow::Cow::Borrowed(kind) => kind,
        std::borrow::Cow::Owned(_) => "object",
    };
    stamp(kind, typed(kind, object)?)
}

/// Adds [`DESIRED_HASH`]: the hash of the object's canonical form (the typed serialization,
/// whose maps are sorted), so equal content always hashes equal, whatever order the builder
/// inserted keys in.
fn stamp<K>(kind: &'static str, mut typed: K) -> Result<K, BuildError>
where
    K: serde::Serialize + Resource,
{
    let canonical =
        serde_json::to_string(&typed).map_err(|source| BuildError::Invalid { kind, source })?;
    let hash = llama_stack_resolver::digest::sha256_hex(canonical.as_bytes());
    typed
        .meta_mut()
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESIRED_HASH.to_owned(), hash);
    Ok(typed)
}

#[cfg(test)]
mod tests;
