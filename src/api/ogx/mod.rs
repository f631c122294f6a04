//! `ogx.io/v1beta1` `OGXServer`: the API of the OGX operator (ogx-ai/ogx-k8s-operator), served by
//! this operator beside `LlamaStackDistribution` so its users can move here without rewriting
//! their manifests. The schema follows the OGX operator's main branch after v0.14 (field names,
//! types, defaults, limits, CEL rules and messages; `tests/fixtures/ogx-operator/README.md`); the
//! facts are in `shared/research/ogx.md` §2 and `ogx-after-v0.14.md`.
//!
//! The reconciler does not read these types: `crate::ogx_server` maps an `OGXServer` into the
//! operator's own model of a stack, and its status back.

pub mod providers;
pub mod storage;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EnvVar, PodResourceClaim, ResourceRequirements, TopologySpreadConstraint, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{NetworkPolicyEgressRule, NetworkPolicyIngressRule};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use providers::ProvidersSpec;
pub use storage::{
    KvStorageSpec, KvStorageType, SqlStorageSpec, SqlStorageType, StateStorageSpec,
    StorageBackendSpec, StorageBackendType, StorageStoresSpec,
};

/// API group of `OGXServer`.
pub const GROUP: &str = "ogx.io";
/// The one served version.
pub const VERSION: &str = "v1beta1";
/// `apiVersion` of an `OGXServer`.
pub const API_VERSION: &str = "ogx.io/v1beta1";

/// Desired state of an OGX server, as the OGX operator's `OGXServer` describes it.
// kube-derive takes one `printcolumn(...)` per column; clippy reads the repeated keys as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "ogx.io",
    version = "v1beta1",
    kind = "OGXServer",
    plural = "ogxservers",
    namespaced,
    status = "OGXServerStatus",
    doc = "An OGX server in the OGX operator's API (ogx.io/v1beta1), served by llama-stack-operator from the same core as LlamaStackDistribution: the distribution is resolved to an image pinned by digest, the config generated from providers, resources and storage, and the server run as a Deployment behind a Service.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Distribution",
        type_ = "string",
        json_path = ".status.resolvedDistribution.image",
        priority = 1
    ),
    printcolumn(
        name = "Config",
        type_ = "string",
        json_path = ".status.configGeneration.configMapName",
        priority = 1
    ),
    printcolumn(
        name = "Providers",
        type_ = "integer",
        json_path = ".status.configGeneration.providerCount"
    ),
    printcolumn(
        name = "Operator Version",
        type_ = "string",
        json_path = ".status.version.operatorVersion",
        priority = 1
    ),
    printcolumn(
        name = "Server Version",
        type_ = "string",
        json_path = ".status.version.serverVersion",
        priority = 1
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
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.overrideConfig) || !has(self.providers)").message("overrideConfig and providers are mutually exclusive").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.overrideConfig) || !has(self.resources)").message("overrideConfig and resources are mutually exclusive").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.overrideConfig) || !has(self.storage)").message("overrideConfig and storage are mutually exclusive").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.overrideConfig) || !has(self.disabledAPIs)").message("overrideConfig and disabledAPIs are mutually exclusive").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.overrideConfig) || !has(self.baseConfig)").message("overrideConfig and baseConfig are mutually exclusive").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.providers) || !has(self.disabledAPIs) || !self.disabledAPIs.exists(d, d == 'inference') || !has(self.providers.inference)").message("inference cannot be both in providers and disabledAPIs").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.providers) || !has(self.disabledAPIs) || !self.disabledAPIs.exists(d, d == 'vector_io') || !has(self.providers.vectorIo)").message("vector_io cannot be both in providers and disabledAPIs").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.providers) || !has(self.disabledAPIs) || !self.disabledAPIs.exists(d, d == 'tool_runtime') || !has(self.providers.toolRuntime)").message("tool_runtime cannot be both in providers and disabledAPIs").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.providers) || !has(self.disabledAPIs) || !self.disabledAPIs.exists(d, d == 'files') || !has(self.providers.files)").message("files cannot be both in providers and disabledAPIs").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.providers) || !has(self.disabledAPIs) || !self.disabledAPIs.exists(d, d == 'batches') || !has(self.providers.batches)").message("batches cannot be both in providers and disabledAPIs").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.providers) || !has(self.disabledAPIs) || !self.disabledAPIs.exists(d, d == 'responses') || !has(self.providers.responses)").message("responses cannot be both in providers and disabledAPIs").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.providers) || !has(self.disabledAPIs) || !self.disabledAPIs.exists(d, d == 'file_processors') || !has(self.providers.fileProcessors)").message("file_processors cannot be both in providers and disabledAPIs").reason(Reason::FieldValueForbidden))]
pub struct OGXServerSpec {
    /// The distribution to run: a name from the catalog, or an image.
    pub distribution: DistributionSpec,
    /// Providers per API, typed per provider type, with a `custom` escape hatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Box<ProvidersSpec>>,
    /// Resources registered when the server starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Box<ResourcesSpec>>,
    /// The server's own key-value and SQL stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Box<StateStorageSpec>>,
    /// APIs the server does not serve (their providers are removed too).
    #[serde(
        default,
        rename = "disabledAPIs",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1, max = 8))]
    pub disabled_apis: Option<Vec<DisabledApi>>,
    /// How often the server refreshes its model registry, in seconds (the server's default
    /// when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub registry_refresh_interval_seconds: Option<i32>,
    /// How the server is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Box<NetworkSpec>>,
    /// TLS of the server's outbound connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Box<TlsClientConfig>>,
    /// How the server runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Box<WorkloadSpec>>,
    /// Prometheus metrics of the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<Box<MonitoringSpec>>,
    /// A ConfigMap key holding the config the generated one starts from, instead of the image's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_config: Option<Box<ConfigMapKeyRef>>,
    /// A ConfigMap key holding the whole config, used as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_config: Option<Box<ConfigMapKeyRef>>,
    /// Serving behind Praxis, which then answers `/v1/responses` and `/v1/conversations` (the
    /// OGX operator's opt-in mode for RHOAI 3.6; absent, the server serves them itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub praxis_mode: Option<Box<PraxisModeSpec>>,
}

/// Praxis in front of the server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PraxisModeSpec {
    /// Whether the mode is on (true when `praxisMode` is written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// The Praxis Pods allowed to reach the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub praxis_selector: Option<PraxisSelector>,
    /// The Job that moves responses and conversations into Praxis's database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration_job: Option<MigrationJobSpec>,
}

impl PraxisModeSpec {
    /// Whether the mode is on: written, and not turned off.
    pub fn is_on(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
}

/// The Praxis Pods, by namespace and labels.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("(has(self.podSelector.matchLabels) && size(self.podSelector.matchLabels) > 0) || (has(self.podSelector.matchExpressions) && size(self.podSelector.matchExpressions) > 0)").message("podSelector must not be empty"))]
pub struct PraxisSelector {
    /// Their namespace.
    #[schemars(length(min = 1))]
    pub namespace: String,
    /// Their labels.
    pub pod_selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
}

/// The migration Job.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MigrationJobSpec {
    /// Whether the Job runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// Praxis's database connection string.
    pub target_connection_string: SecretKeyRef,
    /// The tenant of records that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128), regex(pattern = r"^[a-z0-9][a-z0-9_-]{0,127}$"))]
    pub fallback_tenant: Option<String>,
    /// The owner of records that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    #[x_kube(validation = kube::core::Rule::new("self.trim() != ''").message("must contain a non-whitespace character"))]
    pub fallback_owner_subject: Option<String>,
}

/// Which distribution runs.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[x_kube(validation = kube::core::Rule::new("!(has(self.name) && has(self.image))").message("only one of name or image can be specified"))]
#[x_kube(validation = kube::core::Rule::new("has(self.name) || has(self.image)").message("one of name or image must be specified").reason(kube::core::Reason::FieldValueRequired))]
pub struct DistributionSpec {
    /// A distribution of the catalog, e.g. `starter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A container image reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// One key of a Secret in the server's namespace.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
pub struct SecretKeyRef {
    /// Secret name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Key in the Secret.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-zA-Z0-9]([a-zA-Z0-9\-_.]*[a-zA-Z0-9])?$")
    )]
    pub key: String,
}

/// One key of a ConfigMap in the server's namespace.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
pub struct ConfigMapKeyRef {
    /// ConfigMap name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Key in the ConfigMap.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-zA-Z0-9]([a-zA-Z0-9\-_.]*[a-zA-Z0-9])?$")
    )]
    pub key: String,
}

/// A model registered at start.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.provider) || self.provider.size() > 0").message("provider must not be empty if specified"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.modelType) || self.modelType.size() > 0").message("modelType must not be empty if specified"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.quantization) || self.quantization.size() > 0").message("quantization must not be empty if specified"))]
pub struct ModelConfig {
    /// The model's name at its provider.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The provider id serving it (default: the first inference provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<i64>,
    /// `llm`, `embedding`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
    /// Quantization method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
}

/// Resources registered at start.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct ResourcesSpec {
    /// Models; replace the base config's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub models: Option<Vec<ModelConfig>>,
}

/// An API that can be switched off.
#[derive(
    Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum DisabledApi {
    /// `batches`.
    Batches,
    /// `conversations`.
    Conversations,
    /// `file_processors`.
    FileProcessors,
    /// `inference`.
    Inference,
    /// `responses`.
    Responses,
    /// `tool_runtime`.
    ToolRuntime,
    /// `vector_io`.
    VectorIo,
    /// `files`.
    Files,
}

impl DisabledApi {
    /// The API's name in the server's config.
    pub fn config_name(self) -> &'static str {
        match self {
            DisabledApi::Batches => "batches",
            DisabledApi::FileProcessors => "file_processors",
            DisabledApi::Inference => "inference",
            DisabledApi::Responses => "responses",
            DisabledApi::ToolRuntime => "tool_runtime",
            DisabledApi::VectorIo => "vector_io",
            DisabledApi::Files => "files",
            DisabledApi::Conversations => "conversations",
        }
    }
}

/// The serving certificate.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// A `kubernetes.io/tls` Secret the server serves HTTPS with.
    #[schemars(length(min = 1))]
    pub secret_name: String,
}

/// CA certificates the server trusts for its outbound connections.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TrustConfig {
    /// ConfigMap keys holding PEM certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub ca_certificates: Option<Vec<ConfigMapKeyRef>>,
}

/// A client certificate the server presents (mutual TLS).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct IdentityConfig {
    /// The certificate.
    pub cert: ConfigMapKeyRef,
    /// Its private key.
    pub key: SecretKeyRef,
}

/// TLS of outbound connections.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct TlsClientConfig {
    /// CA certificates to trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<TrustConfig>,
    /// The client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityConfig>,
}

/// Direction of a NetworkPolicy.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyType {
    /// Incoming traffic.
    Ingress,
    /// Outgoing traffic.
    Egress,
}

/// The server's NetworkPolicy.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Whether a NetworkPolicy is made (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// Which directions the policy governs (default: from the rules given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_types: Option<Vec<PolicyType>>,
    /// Who may connect (default: the server's namespace and the operator's, on the server
    /// port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<Vec<NetworkPolicyIngressRule>>,
    /// Where the server may connect (DNS is always allowed when egress is governed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<NetworkPolicyEgressRule>>,
}

/// Access from outside the cluster.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[x_kube(validation = kube::core::Rule::new("!has(self.hostname) || self.hostname.size() > 0").message("hostname must not be empty if specified"))]
pub struct ExternalAccessConfig {
    /// Whether an Ingress (or Route) is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,
    /// The host name to serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The certificate the Ingress terminates TLS with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
}

/// How the server is reached.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    /// The server port (default 8321).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535), extend("default" = 8321))]
    pub port: Option<i32>,
    /// HTTPS served by the server itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
    /// Access from outside the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_access: Option<ExternalAccessConfig>,
    /// The NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<NetworkPolicySpec>,
}

/// Prometheus metrics.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringSpec {
    /// Whether the server exports metrics (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// The metrics port (default 9464).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub metrics_port: Option<i32>,
}

/// The data volume.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.mountPath) || self.mountPath.size() > 0").message("mountPath must not be empty if specified"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.size) || quantity(self.size).isGreaterThan(quantity('0'))").message("size must be a positive quantity"))]
pub struct PvcStorageSpec {
    /// Requested size (default 10Gi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    /// Where it is mounted (default `/.ogx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "/.ogx"))]
    pub mount_path: Option<String>,
}

/// The PodDisruptionBudget.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.minAvailable) || has(self.maxUnavailable)").message("at least one of minAvailable or maxUnavailable must be specified").reason(kube::core::Reason::FieldValueRequired))]
#[x_kube(validation = kube::core::Rule::new("!(has(self.minAvailable) && has(self.maxUnavailable))").message("minAvailable and maxUnavailable are mutually exclusive"))]
pub struct PodDisruptionBudgetSpec {
    /// Pods that must stay available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// Pods that may be unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// The HorizontalPodAutoscaler.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.minReplicas) || self.maxReplicas >= self.minReplicas").message("maxReplicas must be greater than or equal to minReplicas"))]
pub struct AutoscalingSpec {
    /// Fewest replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_replicas: Option<i32>,
    /// Most replicas.
    #[schemars(range(min = 1))]
    pub max_replicas: i32,
    /// Target CPU use, percent.
    #[serde(
        default,
        rename = "targetCPUUtilizationPercentage",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = 100))]
    pub target_cpu_utilization_percentage: Option<i32>,
    /// Target memory use, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub target_memory_utilization_percentage: Option<i32>,
}

/// What the user adds to the server Pod.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.serviceAccountName) || self.serviceAccountName.size() > 0").message("serviceAccountName must not be empty if specified"))]
pub struct WorkloadOverrides {
    /// Run as this ServiceAccount instead of the managed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Variables; replace any the operator sets with the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub env: Option<Vec<EnvVar>>,
    /// The container command (default: the image's entrypoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub command: Option<Vec<String>>,
    /// The container arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub args: Option<Vec<String>>,
    /// Extra volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub volumes: Option<Vec<Volume>>,
    /// Extra mounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub volume_mounts: Option<Vec<VolumeMount>>,
}

/// How the server runs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// Replicas (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 1))]
    pub replicas: Option<i32>,
    /// Server worker processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub workers: Option<i32>,
    /// CPU and memory of the server container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Dynamic resource claims of the Pod (the container uses them by name in
    /// `resources.claims`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resource_claims: Option<Vec<PodResourceClaim>>,
    /// The HorizontalPodAutoscaler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,
    /// The data volume (a PVC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<PvcStorageSpec>,
    /// The PodDisruptionBudget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
    /// How Pods spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// What the user adds to the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<WorkloadOverrides>,
}

/// Lifecycle phase, as OGXServer users read it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Accepted; nothing runs yet.
    Pending,
    /// Starting.
    Initializing,
    /// Serving.
    Ready,
    /// Cannot run until something changes.
    Failed,
    /// Being deleted.
    Terminating,
}

/// Health of one provider, as the server reports it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct ProviderHealth {
    /// `OK`, `Error`, `Not Implemented`.
    pub status: String,
    /// The server's message.
    pub message: String,
}

/// One provider the server runs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct ProviderInfo {
    /// Its API.
    pub api: String,
    /// Its id.
    pub provider_id: String,
    /// Its type.
    pub provider_type: String,
    /// Its config, as the server reports it (secrets masked).
    #[schemars(schema_with = "crate::api::schema::free_form_object")]
    pub config: Value,
    /// Its health.
    pub health: ProviderHealth,
}

/// What the running server reports.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DistributionConfig {
    /// The distribution the server runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_distribution: Option<String>,
    /// Its providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Vec<ProviderInfo>>,
    /// The catalog: distribution names and their images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_distributions: Option<BTreeMap<String, String>>,
    /// The operator's own memory, never serialized nor in the schema: in its cache the list of
    /// providers is kept as this digest (`controller::slim_cache`), as a stack's is.
    #[doc(hidden)]
    #[serde(skip)]
    #[schemars(skip)]
    pub providers_digest: Option<crate::api::common::ProvidersDigest>,
    /// The same for the catalog.
    #[doc(hidden)]
    #[serde(skip)]
    #[schemars(skip)]
    pub available_digest: Option<[u8; 16]>,
}

/// Versions.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// The operator's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_version: Option<String>,
    /// The server's version (`/v1/version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// When they were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,
}

/// The distribution as resolved; `image`, `configSource` and `configHash` are the OGX operator's
/// fields, the rest this operator's (the pin and the server line).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedDistributionStatus {
    /// The image that runs, pinned by digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Where the base config came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_source: Option<String>,
    /// `sha256:` of the base config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// The reference the image was pinned from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// When the image last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_at: Option<Time>,
    /// The repin request last honoured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repin_request: Option<String>,
    /// The server line (`ogx`, `llama-stack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_line: Option<String>,
    /// The server version the image declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// What told the server line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_line_source: Option<String>,
    /// The image's config file the base config was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_config: Option<String>,
}

/// The generated config.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConfigGenerationStatus {
    /// The spec generation it was made for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The ConfigMap holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_name: Option<String>,
    /// When its content last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_at: Option<Time>,
    /// Providers in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_count: Option<i32>,
    /// Registered resources in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_count: Option<i32>,
    /// Its schema version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_version: Option<i32>,
}

/// Observed state: the OGX operator's fields, then this operator's.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OGXServerStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Operator and server versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionInfo>,
    /// What the running server reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution_config: Option<DistributionConfig>,
    /// The distribution as resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_distribution: Option<ResolvedDistributionStatus>,
    /// The generated config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_generation: Option<ConfigGenerationStatus>,
    /// Conditions: the OGX operator's types (DeploymentReady, HealthCheck, StorageReady,
    /// ServiceReady, ConfigGenerated) and this operator's (Ready, Reconciling, Stalled,
    /// SecretsResolved, DeploymentUpdated, Available, ServerResponding, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The operator's own memory, never serialized nor in the schema: in its cache the
    /// conditions are kept here, compact (`controller::slim_cache`), and read back into the model
    /// with the rest of the status (`ogx_server::status::into_model`).
    #[doc(hidden)]
    #[serde(skip)]
    #[schemars(skip)]
    pub compact_conditions: Option<crate::api::compact_conditions::CompactConditions>,
    /// Ready replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// In-cluster URL.
    #[serde(
        default,
        rename = "serviceURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_url: Option<String>,
    /// External URL, when exposed.
    #[serde(
        default,
        rename = "externalURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub external_url: Option<String>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Installation state of each external provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_providers: Option<Vec<crate::api::common::ExternalProviderStatus>>,
    /// The revision rollbacks return to, and the one rejected last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<crate::api::v1alpha2::RollbackStatus>,
    /// The Praxis migration (the OGX operator's field; this operator runs no migration yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration: Option<MigrationStatus>,
}

/// Where the Praxis migration stands, as the OGX operator records it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MigrationStatus {
    /// `Pending`, `PreflightFailed`, `Running`, `Failed` or `Validated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The spec generation it describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The inputs of the attempt, hashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_key: Option<String>,
    /// The Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// What happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What a rollback would not undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_rollback_warning: Option<String>,
}

#[cfg(test)]
mod tests;
