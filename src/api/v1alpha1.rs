//! `llamastack.io/v1alpha1`: the resource of the upstream operator, kept working for existing
//! users, plus `spec.server.externalProviders`.

use k8s_openapi::api::core::v1::{
    EnvVar, ResourceRequirements, TopologySpreadConstraint, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AllowedFromSpec, AutoscalingSpec, CaBundleConfig, DistributionConfig, DistributionPhase,
    DistributionType, ExternalProviderStatus, ExternalProvidersSpec, PvcStorageSpec,
    RollbackPolicy, VersionInfo,
};

/// Desired state of a llama-stack server (v1alpha1 layout).
// kube-derive takes one `printcolumn(...)` per column; clippy reads the repeated keys as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[kube(
    group = "llamastack.io",
    version = "v1alpha1",
    kind = "LlamaStackDistribution",
    plural = "llamastackdistributions",
    shortname = "llsd",
    namespaced,
    status = "LlamaStackDistributionStatus",
    doc = "A llama-stack server in the layout of the upstream operator (deprecated: use llamastack.io/v1alpha2, to which every v1alpha1 resource converts without loss). The server runs the distribution's image with its own config, or the config in spec.server.userConfig, as a Deployment behind a Service.",
    deprecated = "llamastack.io/v1alpha1 LlamaStackDistribution is deprecated; use llamastack.io/v1alpha2",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Operator Version",
        type_ = "string",
        json_path = ".status.version.operatorVersion"
    ),
    printcolumn(
        name = "Server Version",
        type_ = "string",
        json_path = ".status.version.llamaStackServerVersion"
    ),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    selectable = ".spec.server.userConfig.configMapName",
    selectable = ".spec.server.userConfig.configMapNamespace",
    selectable = ".spec.server.tlsConfig.caBundle.configMapName",
    selectable = ".spec.server.tlsConfig.caBundle.configMapNamespace"
)]
#[serde(rename_all = "camelCase")]
pub struct LlamaStackDistributionSpec {
    /// Number of server replicas (ignored while autoscaling is enabled).
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// The server: distribution, container and pod settings.
    pub server: ServerSpec,
    /// Network exposure and access control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSpec>,
}

fn default_replicas() -> i32 {
    1
}

/// Server settings (v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ServerSpec {
    /// Which distribution to run.
    pub distribution: DistributionType,
    /// The server container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_spec: Option<ContainerSpec>,
    /// Uvicorn worker processes (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub workers: Option<i32>,
    /// Low-level Pod overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_overrides: Option<PodOverrides>,
    /// PodDisruptionBudget of the server Pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
    /// How server Pods spread across the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// Horizontal Pod autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,
    /// Persistent storage for the server's data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<PvcStorageSpec>,
    /// A user-provided config.yaml in a ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_config: Option<UserConfigSpec>,
    /// TLS settings (custom CA bundle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<TlsConfig>,
    /// External providers shipped as container images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_providers: Option<ExternalProvidersSpec>,
    /// When a new revision cannot start and no Pod of an older revision serves: `Automatic`
    /// (default) returns to the last image and config that were Ready; `Never` leaves it to a
    /// person (an addition of this operator; `workload.rollback` in v1alpha2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackPolicy>,
}

fn default_container_name() -> String {
    "llama-stack".to_owned()
}

/// The server container (v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSpec {
    /// Container name.
    #[serde(default = "default_container_name")]
    pub name: String,
    /// Port the server listens on (default 8321).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// CPU and memory requests and limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Extra environment variables, applied after the operator's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Replaces the image entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Replaces the image arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
}

/// Low-level Pod overrides (v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PodOverrides {
    /// ServiceAccount the Pods run as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Grace period for Pod termination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// Extra volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// Extra volume mounts of the server container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
}

/// PodDisruptionBudget settings (v1alpha1: at most one of the two may be set, as for a real PDB).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!(has(self.minAvailable) && has(self.maxUnavailable))").message("set only one of minAvailable or maxUnavailable"))]
pub struct PodDisruptionBudgetSpec {
    /// Pods that must stay available during a voluntary disruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// Pods that may be unavailable during a voluntary disruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// A user-provided config.yaml (v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct UserConfigSpec {
    /// ConfigMap whose `config.yaml` key holds the server config.
    #[schemars(length(min = 1, max = 253))]
    pub config_map_name: String,
    /// Namespace of the ConfigMap (kept for compatibility; the Pod can only mount a ConfigMap
    /// of its own namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_namespace: Option<String>,
}

/// TLS settings (v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TlsConfig {
    /// Custom CA certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<CaBundleConfig>,
}

/// Network settings (v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    /// Create an Ingress for the server.
    #[serde(default)]
    pub expose_route: bool,
    /// Who may reach the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_from: Option<AllowedFromSpec>,
}

/// Observed state (v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LlamaStackDistributionStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DistributionPhase>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Operator and server versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionInfo>,
    /// What the running server reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution_config: Option<DistributionConfig>,
    /// Standard conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Ready replicas of the server Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// In-cluster URL of the server.
    #[serde(
        default,
        rename = "serviceURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_url: Option<String>,
    /// External URL when exposed.
    #[serde(default, rename = "routeURL", skip_serializing_if = "Option::is_none")]
    pub route_url: Option<String>,
    /// Installation state of each external provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_providers: Option<Vec<ExternalProviderStatus>>,
}
