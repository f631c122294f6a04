//! Desired objects of a v1alpha2 LlamaStackDistribution (pure). Only the fields the operator owns
//! are set (server-side apply). Every object carries [`DESIRED_HASH`], the hash of what the
//! operator wants, so an unchanged object is recognised without a write.

mod ca_bundle;
mod derived;
pub mod external;
mod inputs;
mod monitoring;
mod network;
mod object;
mod pod;
mod scaling;
pub(crate) mod user_parts;
mod workload;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::DynamicObject;

use crate::core::stack::Stack;

pub use ca_bundle::{CaBundleError, collect_certificates};
pub use inputs::{Inputs, ServerConfig};
pub use monitoring::{prometheus_rule_resource, service_monitor_resource};
pub use network::{exposure_warning, gateway_warnings, route_resource};
pub use object::BuildError;
pub use pod::config_dir;
pub use scaling::{minimum_replicas, pdb_warning};
pub use workload::{DEFAULT_STORAGE_SIZE, config_map, deployment, persistent_volume_claim};

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
    /// Scrapes the `metrics` port (an `OGXServer`'s `monitoring`, where the cluster serves
    /// the Prometheus Operator's kinds).
    pub service_monitor: Option<DynamicObject>,
    /// Its recording rules, beside it.
    pub prometheus_rule: Option<DynamicObject>,
}

/// The labels that select the stack's server Pods (what its Service selects).
pub fn pod_selector_labels(stack: &Stack) -> std::collections::BTreeMap<String, String> {
    object::selector_labels(stack)
}

/// Builds every desired object.
pub fn desired(stack: &Stack, inputs: &Inputs) -> Result<Desired, BuildError> {
    let config_map = match (&inputs.config, inputs.generated) {
        (ServerConfig::Generated(_), Some(generated)) => Some(config_map(stack, generated)),
        _ => None,
    };
    let ca_bundle = inputs
        .ca_bundle
        .map(|pem| ca_bundle::config_map(stack, pem))
        .transpose()?;
    let (ingress, route) = network::exposure(stack, inputs.routes_available)?;
    let (service_monitor, prometheus_rule) =
        monitoring::monitoring(stack, inputs.monitoring_available)?;
    Ok(Desired {
        config_map,
        deployment: deployment(stack, inputs)?,
        service: network::service(stack)?,
        service_account: workload::service_account(stack, inputs.pull_secrets)?,
        pvc: persistent_volume_claim(stack)?,
        ca_bundle,
        network_policy: network::network_policy(stack, inputs.operator_namespace)?,
        ingress,
        route,
        hpa: scaling::hpa(stack)?,
        pdb: scaling::pdb(stack)?,
        derived_secret: inputs
            .derived
            .and_then(|data| derived::secret(stack, data, inputs.secrets_hash.unwrap_or_default())),
        service_monitor,
        prometheus_rule,
    })
}

#[cfg(test)]
mod tests;
