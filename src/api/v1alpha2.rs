//! `llamastack.io/v1alpha2`, the storage version: the operator generates the server's
//! `config.yaml` from providers, resources, storage and disabled APIs.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EnvVar, PodResourceClaim, ResourceRequirements, TopologySpreadConstraint, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{NetworkPolicyEgressRule, NetworkPolicyIngressRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{
    AllowedFromSpec, AutoscalingSpec, CaBundleConfig, DistributionConfig, DistributionPhase,
    DistributionType, ExternalProviderStatus, ExternalProvidersSpec, PvcStorageSpec,
    RollbackPolicy, VersionInfo,
};
use super::polymorphic::{BoolOrObject, Described, NameOrObject, OneOrMany};
use super::schema;

/// Desired state of a llama-stack server (v1alpha2 layout).
// kube-derive takes one `printcolumn(...)` per column; clippy reads the repeated keys as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "llamastack.io",
    version = "v1alpha2",
    kind = "LlamaStackDistribution",
    plural = "llamastackdistributions",
    shortname = "llsd",
    namespaced,
    status = "LlamaStackDistributionStatus",
    doc = "A llama-stack server: which distribution to run, and the providers, models, storage, networking and workload it runs with. The operator resolves the distribution to an image pinned by digest, generates the server's config.yaml from this spec, and runs it as a Deployment behind a Service. `kubectl explain llsd.spec` describes each part.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
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
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    selectable = ".spec.overrideConfig.configMapName",
    selectable = ".spec.networking.tls.caBundle.configMapName"
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.overrideConfig) && has(self.providers))").message("overrideConfig cannot be combined with providers: the ConfigMap replaces the whole generated config; remove providers or overrideConfig").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!(has(self.overrideConfig) && has(self.resources))").message("overrideConfig cannot be combined with resources: register models, tools and shields in the ConfigMap's config.yaml, or remove overrideConfig").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!(has(self.overrideConfig) && has(self.storage))").message("overrideConfig cannot be combined with storage: configure storage in the ConfigMap's config.yaml, or remove overrideConfig").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!(has(self.overrideConfig) && has(self.baseConfig))").message("overrideConfig cannot be combined with baseConfig: the ConfigMap of overrideConfig is the whole config; remove one").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!(has(self.overrideConfig) && has(self.disabled))").message("overrideConfig cannot be combined with disabled: leave the APIs out of the ConfigMap's config.yaml, or remove overrideConfig").reason(Reason::FieldValueForbidden))]
pub struct LlamaStackDistributionSpec {
    /// Which distribution to run.
    pub distribution: DistributionType,
    /// Providers per API; each replaces the distribution's providers of that API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Box<ProvidersSpec>>,
    /// Models, tools and shields registered at startup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesSpec>,
    /// State storage backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Box<StateStorageSpec>>,
    /// APIs to turn off (camelCase names, e.g. `eval`, `vectorIo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_set, transform = schema::disabled_items)]
    pub disabled: Option<Vec<String>>,
    /// Port, TLS, exposure and access control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<Box<NetworkingSpec>>,
    /// Deployment settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Box<WorkloadSpec>>,
    /// External providers shipped as container images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_providers: Option<Box<ExternalProvidersSpec>>,
    /// A complete config.yaml in a ConfigMap, used instead of a generated one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_config: Option<Box<OverrideConfigSpec>>,
    /// A config.yaml in a ConfigMap the config is generated from, instead of the image's own
    /// (its labels) or the embedded one; the image is still resolved and pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_config: Option<Box<BaseConfigSpec>>,
    /// A gateway in front of the server that authenticates every caller and serves some APIs
    /// itself: the server trusts the identity headers the gateway sets, keeps each tenant's
    /// resources apart, leaves those APIs to the gateway, and is reached only from it (no
    /// Ingress or Route is made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<Box<GatewaySpec>>,
}

/// The gateway in front of the server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// Praxis (Open Data Hub's payload-processing gateway), as the OGX operator's Praxis mode
    /// fronts OGX: the server trusts `x-user-id` and `x-tenant-id`, runs multi-tenant, and leaves
    /// `responses` and `conversations` to Praxis. OGX servers only.
    pub praxis: PraxisGateway,
}

/// Where the Praxis Pods that reach the server run.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.podSelector) || (has(self.podSelector.matchLabels) && size(self.podSelector.matchLabels) > 0) || (has(self.podSelector.matchExpressions) && size(self.podSelector.matchExpressions) > 0)").message("podSelector must not be empty: an empty selector admits every Pod of the namespace").reason(Reason::FieldValueInvalid).field_path(".podSelector"))]
pub struct PraxisGateway {
    /// The namespace of the Praxis Pods (default `openshift-ingress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// The Praxis Pods (default `app: payload-processing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<LabelSelector>,
    /// Moves the server's responses and conversations into Praxis's database, once, by a Job
    /// running `ogx migrate praxis` with the server's image and config (an `OGXServer`'s
    /// `praxisMode.migrationJob`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration: Option<PraxisMigration>,
}

/// What the Praxis migration Job moves the server's data into, and how it names the rows that
/// name no tenant or owner.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PraxisMigration {
    /// Praxis's PostgreSQL database, as a connection string read from a Secret (the Job's
    /// `PRAXIS_DATABASE_URL`); never the server's own database.
    pub target_connection_string: SecretValue,
    /// The tenant of rows that name none (a server without tenancy names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128), regex(pattern = r"^[a-z0-9][a-z0-9_-]{0,127}$"))]
    pub fallback_tenant: Option<String>,
    /// The owner of rows that name none (a server without authentication names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    #[x_kube(validation = Rule::new("self.trim() != ''").message("must contain a non-whitespace character"))]
    pub fallback_owner_subject: Option<String>,
}

/// The Praxis Pods' namespace when `gateway.praxis.namespace` is not set (where Open Data Hub
/// runs them, and the OGX operator's default).
pub const DEFAULT_PRAXIS_NAMESPACE: &str = "openshift-ingress";
/// The Praxis Pods' `app` label when `gateway.praxis.podSelector` is not set.
pub const DEFAULT_PRAXIS_APP: &str = "payload-processing";

impl PraxisGateway {
    /// The namespace of the Praxis Pods, with its default.
    pub fn namespace(&self) -> &str {
        self.namespace
            .as_deref()
            .unwrap_or(DEFAULT_PRAXIS_NAMESPACE)
    }

    /// The Praxis Pods' selector, with its default.
    pub fn pods(&self) -> LabelSelector {
        self.pod_selector.clone().unwrap_or_else(|| LabelSelector {
            match_labels: Some(BTreeMap::from([(
                "app".to_owned(),
                DEFAULT_PRAXIS_APP.to_owned(),
            )])),
            match_expressions: None,
        })
    }
}

/// A ConfigMap key holding the base config.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BaseConfigSpec {
    /// ConfigMap in the same namespace.
    #[schemars(length(min = 1, max = 253))]
    pub config_map_name: String,
    /// The key holding the config (default: `config.yaml`, else `run.yaml`, else the only key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub key: Option<String>,
}

/// Reference to one key of a Secret in the namespace of the LlamaStackDistribution.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
pub struct SecretKeyRef {
    /// Secret name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// A value read from a Secret: `{secretKeyRef: {name, key}}`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SecretValue {
    /// The Secret key holding the value.
    pub secret_key_ref: SecretKeyRef,
}

/// One provider instance.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    /// Provider ID; required in the list form, defaults to `provider` in the single form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Provider type, e.g. `vllm`, `openai`, `llama-guard`, `pgvector`.
    pub provider: String,
    /// URL of the provider's service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// API key or token, read from a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<SecretValue>,
    /// Provider-specific settings merged into its config; a top-level `{secretKeyRef: …}` value
    /// is read from a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Map<String, Value>>,
}

impl ProviderConfig {
    /// The provider ID in the generated config: `id`, else the provider name without its
    /// `remote::`/`inline::` prefix.
    pub fn config_id(&self) -> String {
        self.id.clone().unwrap_or_else(|| {
            self.provider
                .rsplit("::")
                .next()
                .unwrap_or(&self.provider)
                .to_owned()
        })
    }
}

impl Described for ProviderConfig {
    const WHAT: &'static str = "provider object";
}

/// A provider field: one provider object or a list of them.
pub type ProviderConfigOrList = OneOrMany<ProviderConfig>;

/// Providers per API, by the camelCase API names.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersSpec {
    /// Inference providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference: Option<ProviderConfigOrList>,
    /// Safety providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<ProviderConfigOrList>,
    /// Vector store providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_io: Option<ProviderConfigOrList>,
    /// Tool runtime providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_runtime: Option<ProviderConfigOrList>,
    /// Telemetry backend (rendered as OpenTelemetry settings of the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<ProviderConfigOrList>,
    /// Responses providers (OGX 1.x: `builtin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<ProviderConfigOrList>,
    /// Batches providers (OGX 1.x: `reference`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<ProviderConfigOrList>,
    /// Files providers, e.g. `localfs`, `s3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<ProviderConfigOrList>,
    /// File processors (OGX 1.x), e.g. `pypdf`, `docling-serve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_processors: Option<ProviderConfigOrList>,
}

impl ProvidersSpec {
    /// Every configured provider with its API's field name (`inference`, `vectorIo`, ...).
    pub fn all(&self) -> Vec<(&'static str, &ProviderConfig)> {
        [
            ("inference", &self.inference),
            ("safety", &self.safety),
            ("vectorIo", &self.vector_io),
            ("toolRuntime", &self.tool_runtime),
            ("telemetry", &self.telemetry),
            ("responses", &self.responses),
            ("batches", &self.batches),
            ("files", &self.files),
            ("fileProcessors", &self.file_processors),
        ]
        .into_iter()
        .flat_map(|(api, list)| list.iter().flat_map(|l| l.items()).map(move |p| (api, p)))
        .collect()
    }
}

/// A model with details.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ModelConfig {
    /// Model name as the provider knows it.
    pub name: String,
    /// Provider ID serving the model (default: the first inference provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<i64>,
    /// Model type, e.g. `llm` or `embedding`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
    /// Quantization method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
}

impl Described for ModelConfig {
    const WHAT: &'static str = "model object";
}

/// A model: a name, or an object with details.
pub type ModelConfigOrString = NameOrObject<ModelConfig>;

/// Resources registered when the server starts.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct ResourcesSpec {
    /// Models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1000))]
    pub models: Option<Vec<ModelConfigOrString>>,
    /// Tool groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100), inner(length(min = 1, max = 253)), transform = schema::list_set)]
    pub tools: Option<Vec<String>>,
    /// Safety shields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100), inner(length(min = 1, max = 253)), transform = schema::list_set)]
    pub shields: Option<Vec<String>>,
}

/// Key-value store backend type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum KvStorageType {
    /// SQLite file in the data directory.
    #[default]
    Sqlite,
    /// Redis server.
    Redis,
}

/// SQL store backend type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SqlStorageType {
    /// SQLite file in the data directory.
    #[default]
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

/// Key-value store.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[x_kube(validation = Rule::new("self.type != 'redis' || has(self.endpoint)").message("endpoint is required when type is redis: set it to the Redis address, e.g. redis://redis:6379").reason(Reason::FieldValueRequired).field_path(".endpoint"))]
pub struct KvStorageSpec {
    /// Backend type (default sqlite).
    #[serde(default, rename = "type")]
    pub type_: KvStorageType,
    /// Redis address, required for redis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2048))]
    pub endpoint: Option<String>,
    /// Redis password, read from a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretValue>,
}

/// SQL store.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.type != 'postgres' || has(self.connectionString)").message("connectionString is required when type is postgres: reference the Secret key that holds the PostgreSQL connection string").reason(Reason::FieldValueRequired).field_path(".connectionString"))]
pub struct SqlStorageSpec {
    /// Backend type (default sqlite).
    #[serde(default, rename = "type")]
    pub type_: SqlStorageType,
    /// PostgreSQL connection string, read from a Secret; required for postgres.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_string: Option<SecretValue>,
}

/// State storage; an absent subsection keeps the distribution's default. Either `kv`/`sql`
/// (each replaces one default backend) or named `backends` with their `stores` (which replace
/// the whole storage section), not both.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[x_kube(validation = Rule::new("!(has(self.backends) || has(self.stores)) || !(has(self.kv) || has(self.sql))").message("backends/stores replace the whole storage section: they cannot be combined with kv or sql").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new("!has(self.stores) || has(self.backends)").message("stores name backends: set backends too").reason(Reason::FieldValueRequired).field_path(".backends"))]
pub struct StateStorageSpec {
    /// Key-value store (registry, prompts, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv: Option<KvStorageSpec>,
    /// SQL store (inference records, conversations, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<SqlStorageSpec>,
    /// Named PostgreSQL backends (`kv_postgres`, `sql_postgres`) in the OGX operator's form:
    /// host, port, database and user in the config, the password read from its Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = crate::api::ogx::storage::MAX_BACKENDS))]
    pub backends: Option<BTreeMap<String, crate::api::ogx::storage::StorageBackendSpec>>,
    /// Which backend each store uses; without it, the one `kv_postgres` backend holds the
    /// registry and the one `sql_postgres` backend every SQL store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<crate::api::ogx::storage::StorageStoresSpec>,
}

/// TLS of the server endpoint.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!self.enabled || has(self.secretName)").message("secretName is required when enabled is true: name a kubernetes.io/tls Secret holding the server certificate").reason(Reason::FieldValueRequired).field_path(".secretName"))]
#[x_kube(validation = Rule::new("!has(self.additionalCaBundles) || has(self.caBundle)").message("additionalCaBundles adds to caBundle: set caBundle first").reason(Reason::FieldValueRequired).field_path(".caBundle"))]
pub struct TlsSpec {
    /// Serve HTTPS.
    #[serde(default)]
    pub enabled: bool,
    /// `kubernetes.io/tls` Secret with the server certificate and key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub secret_name: Option<String>,
    /// Custom CA certificates trusted by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<CaBundleConfig>,
    /// More ConfigMaps of CA certificates, trusted beside `caBundle`'s (each read as `caBundle`
    /// is; all are joined into the one bundle the server trusts), e.g. a cluster's injected
    /// bundle and a private CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8))]
    pub additional_ca_bundles: Option<Vec<CaBundleConfig>>,
    /// A client certificate the server presents to the providers it connects to (mutual TLS):
    /// set as `network.tls.client_cert`/`client_key` of every provider that takes them (the
    /// remote inference providers of OGX 1.x). Independent of `enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_identity: Option<ClientIdentity>,
}

/// A client certificate and its key, for mutual TLS with providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClientIdentity {
    /// The PEM certificate (with its chain), in a key of a ConfigMap of the namespace.
    pub certificate: ConfigMapKey,
    /// Its PEM private key, in a key of a Secret of the namespace.
    pub private_key: SecretKeyRef,
}

/// One key of a ConfigMap in the namespace of the LlamaStackDistribution.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
pub struct ConfigMapKey {
    /// ConfigMap name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the ConfigMap.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// Options of external exposure.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ExposeOptions {
    /// Explicit switch; an object without it means enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Host name of the Ingress or Route (generated when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The IngressClass of the Ingress (the cluster's default class when unset). Not used for
    /// a Route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    /// A `kubernetes.io/tls` Secret in the resource's namespace holding the certificate the
    /// ingress controller serves for `hostname`: the Ingress gets a TLS section and clients reach
    /// it over HTTPS (`status.routeURL` says `https://`). Not used for a Route, which terminates
    /// TLS at the router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_secret_name: Option<String>,
}

impl Described for ExposeOptions {
    const WHAT: &'static str =
        "an object with enabled, hostname, ingressClassName and tlsSecretName";
}

/// `expose: true`, `expose: {}` or `expose: {hostname: …}`.
pub type ExposeConfig = BoolOrObject<ExposeOptions>;

fn default_port() -> i32 {
    8321
}

/// Networking of the server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkingSpec {
    /// Port the server listens on. The server runs as non-root, so ports below 1024 are refused.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1024, max = 65535))]
    pub port: i32,
    /// TLS of the server endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Box<TlsSpec>>,
    /// External exposure through an Ingress (or a Route on OpenShift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expose: Option<ExposeConfig>,
    /// Who may reach the server (NetworkPolicy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_from: Option<Box<AllowedFromSpec>>,
    /// NetworkPolicy rules of your own, in Kubernetes' terms (with or without `allowedFrom`): the
    /// ingress rules are added to the default one (the server's namespace, the operator's and
    /// `allowedFrom`, on the server port); egress is governed when rules are given or `Egress`
    /// is listed in `policyTypes`, and DNS to kube-dns is then always allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Box<PolicyRules>>,
}

/// NetworkPolicy rules of the user's own.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRules {
    /// `Ingress`, `Egress` (default: `Ingress`, and `Egress` when egress rules are given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2), inner(regex(pattern = "^(Ingress|Egress)$")))]
    pub policy_types: Option<Vec<String>>,
    /// Who else may connect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub ingress: Option<Vec<NetworkPolicyIngressRule>>,
    /// Where the server may connect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub egress: Option<Vec<NetworkPolicyEgressRule>>,
}

impl Default for NetworkingSpec {
    fn default() -> Self {
        Self {
            port: default_port(),
            tls: None,
            expose: None,
            allowed_from: None,
            policy: None,
        }
    }
}

/// PodDisruptionBudget settings: exactly one of the two.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.minAvailable) != has(self.maxUnavailable)").message("set exactly one of minAvailable or maxUnavailable"))]
pub struct PodDisruptionBudgetSpec {
    /// Pods that must stay available during a voluntary disruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// Pods that may be unavailable during a voluntary disruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// Low-level Pod overrides.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadOverrides {
    /// ServiceAccount the Pods run as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Grace period for Pod termination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// Extra environment variables of the server container (applied last, so they win).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Replaces the container command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Replaces the container arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Extra volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// Extra volume mounts of the server container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
}

/// Deployment settings.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// Replicas (default 1; ignored while autoscaling is enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 1))]
    pub replicas: Option<i32>,
    /// Uvicorn worker processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub workers: Option<i32>,
    /// CPU and memory requests and limits of the server container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Horizontal Pod autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,
    /// PersistentVolumeClaim for the data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<PvcStorageSpec>,
    /// PodDisruptionBudget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
    /// How Pods spread across the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// Dynamic resource claims (DRA) allocated before a Pod starts; the server container uses
    /// them by name in `resources.claims`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32))]
    pub resource_claims: Option<Vec<PodResourceClaim>>,
    /// Low-level Pod overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<WorkloadOverrides>,
    /// When a new revision cannot start (its server or an init container crash-loops, or it
    /// is not ready within `progressDeadlineSeconds`) and no Pod of an older revision serves:
    /// `Automatic` (default) returns to the last image and config that were Ready; `Never`
    /// leaves it to a person. With Pods of an older revision serving, nothing is rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackPolicy>,
    /// Seconds a new revision has to become ready before its rollout counts as stalled
    /// (the Deployment's `progressDeadlineSeconds`; Kubernetes' default is 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub progress_deadline_seconds: Option<i32>,
}

/// A user-provided config.yaml.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OverrideConfigSpec {
    /// ConfigMap in the same namespace whose `config.yaml` key holds the server config.
    #[schemars(length(min = 1, max = 253))]
    pub config_map_name: String,
    /// The key holding the config (default: `config.yaml`, else `run.yaml`, else the only key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub key: Option<String>,
}

/// Where the base config of the resolved distribution came from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// Embedded in the operator for the distribution name.
    #[serde(rename = "embedded")]
    Embedded,
    /// Read from the image's OCI config labels.
    #[serde(rename = "oci-label")]
    OciLabel,
    /// The user's `overrideConfig` ConfigMap.
    #[serde(rename = "override-config")]
    OverrideConfig,
    /// The user's `baseConfig` ConfigMap, generated on.
    #[serde(rename = "config-map")]
    ConfigMap,
    /// The image's own config, run by its own entrypoint: the image has no config labels, the
    /// operator no embedded config for it, and the resource asks for nothing to generate.
    #[serde(rename = "image")]
    Image,
}

/// The resolved distribution.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedDistributionStatus {
    /// Image reference deployed (digest-pinned when resolved at a registry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Origin of the base config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_source: Option<ConfigSource>,
    /// `sha256:…` of the base config bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// The reference `image` was pinned from (catalog, overrides and mirrors applied). While it
    /// stays the same, the pin stands: the tag is not looked up again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// When `image` last changed (the start of the operator's `repin-interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_at: Option<Time>,
    /// The value of the `llamastack.io/repin` annotation that was last honoured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repin_request: Option<String>,
    /// The server line the image runs: `ogx` (OGX 0.8 and 1.x) or `llama-stack` (0.x), told
    /// from the image's labels, else the catalog; an image that says nothing is taken for
    /// `llama-stack`. It decides how the server is started and which config it is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_line: Option<String>,
    /// The server version the image's labels (or the catalog) give, when they give one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// What told the server line (`label com.ogx.distribution.version`, `catalog`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_line_source: Option<String>,
    /// The image's config file the base config was read from (`com.ogx.config.<file>`), on an
    /// image labelled by OGX's build: `distribution.imageConfig`, else the file the image runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_config: Option<String>,
}

/// The last generated config.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConfigGenerationStatus {
    /// ConfigMap holding the generated config.yaml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_name: Option<String>,
    /// When the config content last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_at: Option<Time>,
    /// Providers in the generated config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_count: Option<i32>,
    /// Registered resources in the generated config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_count: Option<i32>,
    /// Schema version of the generated config.yaml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_version: Option<i32>,
}

/// Observed state (v1alpha2).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LlamaStackDistributionStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DistributionPhase>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions. Summaries kstatus and `kubectl wait` read: Ready, Reconciling, Stalled. Steps:
    /// ConfigGenerated, SecretsResolved, DeploymentUpdated, Available, DeploymentReady,
    /// HealthCheck, ServiceReady, StorageReady, ExternalProvidersReady, ServerResponding; on an
    /// OGXServer taking over another stack's objects, StorageAdopted, NetworkingAdopted,
    /// AdoptionConfigInvalid; behind Praxis, PraxisReachable and TLSConfigured, and with its
    /// migration MigrationPreflightReady, MigrationJobSucceeded, MigrationValidated and
    /// PraxisCutoverReady (docs/troubleshooting.md explains each type and reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The operator's own memory, never serialized nor in the schema: in its cache the
    /// conditions are kept here, compact (`controller::slim_cache`); see [`Self::all_conditions`].
    #[doc(hidden)]
    #[serde(skip)]
    #[schemars(skip)]
    pub compact_conditions: Option<crate::api::compact_conditions::CompactConditions>,
    /// The resolved distribution image and base config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_distribution: Option<ResolvedDistributionStatus>,
    /// The last generated config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_generation: Option<ConfigGenerationStatus>,
    /// Installation state of each external provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_providers: Option<Vec<ExternalProviderStatus>>,
    /// Operator and server versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionInfo>,
    /// What the running server reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution_config: Option<DistributionConfig>,
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
    /// The revision rollbacks return to, and the one rejected last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackStatus>,
    /// An `OGXServer`'s Praxis migration, where it stands (its `status.migration`).
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
    /// What the attempt migrates, hashed (never a Secret's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_key: Option<String>,
    /// The attempt's Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// What happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What turning the migration off would not undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_rollback_warning: Option<String>,
}

impl LlamaStackDistributionStatus {
    /// The conditions, whether this status is as served or as the operator's cache keeps it.
    pub fn all_conditions(&self) -> std::borrow::Cow<'_, [Condition]> {
        match (&self.conditions, &self.compact_conditions) {
            (Some(list), _) => std::borrow::Cow::Borrowed(list),
            (None, Some(compact)) => std::borrow::Cow::Owned(compact.expand()),
            (None, None) => std::borrow::Cow::Borrowed(&[]),
        }
    }
}

/// A revision of the server Deployment: what its Pods run.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RevisionStatus {
    /// The Deployment's `llamastack.io/desired-hash` for this revision (its ReplicaSet
    /// carries the same annotation).
    pub desired_hash: String,
    /// Image of the server container.
    pub image: String,
    /// ConfigMap mounted as the server's config (none when the image runs its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
}

/// A revision that could not start and was rolled back from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RejectedRevision {
    /// The rejected revision.
    #[serde(flatten)]
    pub revision: RevisionStatus,
    /// The resource's `metadata.generation` it was built from: a new generation tries again.
    pub generation: i64,
    /// Why it could not start (`ServerCrashLooping`, `InitContainerCrashLooping`,
    /// `RolloutStalled`).
    pub reason: String,
    /// What the Pods showed, with the container's last words.
    pub message: String,
    /// When it was rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_at: Option<Time>,
}

/// Automatic rollback's memory, kept in the cluster so that it survives an operator restart.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RollbackStatus {
    /// The last revision whose every replica was Ready: what a rollback returns to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ready: Option<RevisionStatus>,
    /// The revision rolled back from; the operator does not try it again until the spec, a
    /// referenced Secret or ConfigMap, or the resolved image changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Box<RejectedRevision>>,
}
