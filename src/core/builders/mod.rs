//! Desired objects of a v1alpha2 LlamaStackDistribution (pure). Only the fields the operator owns
//! are set (server-side apply). Every object carries [`DESIRED_HASH`](crate::naming::DESIRED_HASH), the hash of what the
//! operator wants, so an unchanged object is recognised without a write.

mod ca_bundle;
mod derived;
pub mod external;
mod inputs;
mod migration;
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
use object::Common;

pub use ca_bundle::{CaBundleError, collect_certificates};
pub use inputs::{Inputs, ServerConfig};
pub use monitoring::{prometheus_rule_resource, service_monitor_resource};
pub use network::{exposure_warning, gateway_warnings, route_resource};
pub use object::BuildError;
pub use pod::config_dir;
pub use scaling::{minimum_replicas, pdb_warning};
pub use workload::DEFAULT_STORAGE_SIZE;
use workload::{config_map, deployment, persistent_volume_claim};

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

/// The Praxis migration Job running `attempt` of `wanted`: the server's Pod as `inputs` build
/// it, running the migration instead of the server, owned and labelled as the stack's objects.
/// Not yet part of [`Desired`]: the act that keeps one attempt from running twice comes first.
pub fn migration_job(
    stack: &Stack,
    inputs: &Inputs,
    wanted: &crate::api::v1alpha2::PraxisMigration,
    attempt: &crate::core::migration::Attempt,
) -> Option<k8s_openapi::api::batch::v1::Job> {
    let common = Common::of(stack, inputs.ca_bundle);
    let server = deployment(stack, &common, inputs).spec?.template.spec?;
    let mut job = migration::job(&common, &server, wanted, attempt)?;
    object::owned(&common, &mut job);
    Some(job)
}

/// The labels that select the stack's server Pods (what its Service selects).
pub fn pod_selector_labels(stack: &Stack) -> std::collections::BTreeMap<String, String> {
    object::selector_labels(stack)
}

/// Builds every desired object: each builder makes what its objects are, then every one is
/// given the stack's namespace, labels and owner, and (but for the two named by their content's
/// hash) the hash of all of it.
pub fn desired(stack: &Stack, inputs: &Inputs) -> Result<Desired, BuildError> {
    let common = Common::of(stack, inputs.ca_bundle);
    let config_map = match (&inputs.config, inputs.generated) {
        (ServerConfig::Generated(_), Some(generated)) => Some(config_map(stack, generated)),
        _ => None,
    };
    let deployment = deployment(stack, &common, inputs);
    let service_account = workload::service_account(stack, inputs.pull_secrets);
    let pvc = persistent_volume_claim(stack);
    let service = network::service(stack, &common);
    let network_policy = network::network_policy(stack, &common, inputs.operator_namespace);
    let (ingress, route) = network::exposure(stack, inputs.routes_available);
    let (hpa, pdb) = (scaling::hpa(stack), scaling::pdb(stack, &common));
    let ca_bundle = (inputs.ca_bundle.zip(common.ca_bundle_name.as_deref()))
        .map(|(pem, name)| ca_bundle::managed_copy(name, pem));
    let derived_secret = inputs
        .derived
        .and_then(|data| derived::secret(stack, data, inputs.secrets_hash.unwrap_or_default()));
    let (service_monitor, prometheus_rule) =
        monitoring::monitoring(stack, &common, inputs.monitoring_available);
    let mut desired = Desired {
        config_map,
        deployment,
        service,
        service_account,
        pvc,
        ca_bundle,
        network_policy,
        ingress,
        route,
        hpa,
        pdb,
        derived_secret,
        service_monitor,
        prometheus_rule,
    };
    desired.finish(&common)?;
    Ok(desired)
}

impl Desired {
    /// Gives every object the stack's namespace, labels and owner, then stamps its hash: the
    /// generated ConfigMap is named by its content's hash already, and the derived Secret carries
    /// none (see `derived.rs`).
    fn finish(&mut self, common: &Common) -> Result<(), BuildError> {
        fn stamped<K: serde::Serialize + kube::Resource>(
            common: &Common,
            kind: &'static str,
            object: Option<&mut K>,
        ) -> Result<(), BuildError> {
            match object {
                Some(object) => {
                    object::owned(common, object);
                    object::stamp(kind, object)
                }
                None => Ok(()),
            }
        }
        let Self {
            config_map,
            deployment,
            service,
            service_account,
            pvc,
            ca_bundle,
            network_policy,
            ingress,
            route,
            hpa,
            pdb,
            derived_secret,
            service_monitor,
            prometheus_rule,
        } = self;
        if let Some(config_map) = config_map {
            object::owned(common, config_map);
        }
        if let Some(secret) = derived_secret {
            object::owned(common, secret);
        }
        stamped(common, "Deployment", Some(deployment))?;
        stamped(common, "Service", Some(service))?;
        stamped(common, "ServiceAccount", service_account.as_mut())?;
        stamped(common, "PersistentVolumeClaim", pvc.as_mut())?;
        stamped(common, "ConfigMap", ca_bundle.as_mut())?;
        stamped(common, "NetworkPolicy", network_policy.as_mut())?;
        stamped(common, "Ingress", ingress.as_mut())?;
        stamped(common, "Route", route.as_mut())?;
        stamped(common, "HorizontalPodAutoscaler", hpa.as_mut())?;
        stamped(common, "PodDisruptionBudget", pdb.as_mut())?;
        stamped(common, "ServiceMonitor", service_monitor.as_mut())?;
        stamped(common, "PrometheusRule", prometheus_rule.as_mut())
    }
}

#[cfg(test)]
mod tests;
