//! Types shared by both API versions. Sharing the Rust type keeps the schema of a field identical
//! in `v1alpha1` and `v1alpha2`, which conversion relies on.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::schema;

/// Phase of a LlamaStackDistribution, as reported in `status.phase`: `Pending` (accepted, nothing
/// deployed yet), `Initializing` (deployed, waiting for ready Pods), `Ready` (the desired replicas
/// are ready with the current config), `Failed` (the spec cannot be served until a person acts:
/// the config or its Secrets are refused, an external provider failed, the rollout was rolled
/// back or is stuck; older Pods may keep serving, and the `Stalled` condition says why; a
/// transient error never sets it), `Terminating` (never set by this operator, which deletes
/// through owner references; accepted for statuses the upstream operator wrote).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DistributionPhase {
    /// Accepted, nothing deployed yet.
    #[default]
    Pending,
    /// Deployed, waiting for a ready Pod.
    Initializing,
    /// At least the desired replicas are ready with the current config.
    Ready,
    /// The spec cannot be served until a person acts (see the enum's documentation); older Pods
    /// may keep serving. Transient errors never set it.
    Failed,
    /// Never set by this operator (deletion goes through owner references, with no finalizer);
    /// kept so that statuses written by the upstream operator still parse.
    Terminating,
}

/// Which distribution to run: a name from the operator's catalog, or an image reference.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[x_kube(validation = kube::core::Rule::new("!(has(self.name) && has(self.image))").message("set only one of name or image: name selects a distribution from the operator's catalog, image runs the given image"))]
#[x_kube(validation = kube::core::Rule::new("has(self.name) || has(self.image)").message("set name (a distribution such as starter) or image (a container image reference)").reason(kube::core::Reason::FieldValueRequired))]
#[x_kube(validation = kube::core::Rule::new("!has(self.serverVersion) || has(self.image)").message("serverVersion describes an image: a catalog name's release comes from the catalog").field_path(".serverVersion"))]
#[serde(rename_all = "camelCase")]
pub struct DistributionType {
    /// Distribution name from the operator's catalog (e.g. `starter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub name: Option<String>,
    /// Container image reference, used instead of a catalog name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub image: Option<String>,
    /// The server release `image` runs, for in-house images whose labels do not say: an OGX
    /// release (0.8 and later, e.g. `1.3.0`) or a llama-stack one (e.g. `0.7.3`). It decides how
    /// the server is started (OGX: the image's entrypoint with `OGX_*` variables; llama-stack:
    /// `llama stack run`), which provider table a generated config follows, and whether the
    /// server must be told it may serve plain HTTP (OGX from 1.2.0). Labels that name the release
    /// (`com.ogx.distribution.version`) win; labels that name only the line (`com.ogx.config.*`,
    /// `io.llamastack.config.*`, or RHOAI's version labels of `0.0`) take the release from here
    /// when it is of that line; with neither, the image is taken for llama-stack 0.x.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 3, max = 32),
        regex(pattern = r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?$")
    )]
    pub server_version: Option<String>,
    /// Which of the image's own configs to start from, for images labelled by OGX's build: one
    /// of the files its `com.ogx.distribution.configs` label lists (e.g.
    /// `run-with-postgres-store.yaml`). Unset: the file the image runs
    /// (`com.ogx.distribution.default-config`). A file the image does not carry is refused
    /// (`InvalidBaseConfig`, naming the files it has), and the operator's embedded config never
    /// stands in for it while the registry cannot be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 6, max = 253),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]*\.ya?ml$")
    )]
    pub image_config: Option<String>,
}

/// Custom CA certificates read from a ConfigMap and trusted by the server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CaBundleConfig {
    /// ConfigMap holding the PEM certificates.
    #[schemars(length(min = 1, max = 253))]
    pub config_map_name: String,
    /// Namespace of the ConfigMap; defaults to the namespace of the LlamaStackDistribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub config_map_namespace: Option<String>,
    /// Keys of the ConfigMap to concatenate (default `ca-bundle.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 50),
        inner(
            length(max = 253),
            regex(pattern = r"^[a-zA-Z0-9]([a-zA-Z0-9\-_.]*[a-zA-Z0-9])?$")
        )
    )]
    pub config_map_keys: Option<Vec<String>>,
}

/// Which namespaces may reach the server (rendered as a NetworkPolicy).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct AllowedFromSpec {
    /// Namespace names; `*` allows every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 63)))]
    pub namespaces: Option<Vec<String>>,
    /// Namespace label keys; a namespace carrying any of them is allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 317)))]
    pub labels: Option<Vec<String>>,
}

/// Horizontal Pod autoscaling of the server Deployment.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.minReplicas) || self.maxReplicas >= self.minReplicas").message("maxReplicas must be greater than or equal to minReplicas: raise maxReplicas or lower minReplicas"))]
pub struct AutoscalingSpec {
    /// Lower bound of replicas (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_replicas: Option<i32>,
    /// Upper bound of replicas.
    #[schemars(range(min = 1))]
    pub max_replicas: i32,
    /// Target average CPU utilization in percent of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    #[serde(rename = "targetCPUUtilizationPercentage")]
    pub target_cpu_utilization_percentage: Option<i32>,
    /// Target average memory utilization in percent of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub target_memory_utilization_percentage: Option<i32>,
}

/// A PersistentVolumeClaim for the server's data directory.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PvcStorageSpec {
    /// Requested size (default 10Gi). A PVC is never shrunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    /// Where the volume is mounted in the server container (default `/.llama`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096), regex(pattern = "^/"))]
    pub mount_path: Option<String>,
}

/// What the operator does when the newest revision of a stack cannot start and nothing else
/// serves (`workload.rollback` in v1alpha2, `server.rollback` in v1alpha1).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RollbackPolicy {
    /// Return the Deployment to the last image and config that were Ready, name the rejected
    /// pair in the status, and do not try it again until the spec, a referenced Secret or
    /// ConfigMap, or the resolved image changes.
    #[default]
    Automatic,
    /// Leave the new revision crash-looping until a person acts.
    Never,
}

/// Image pull policy of an external provider image.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PullPolicy {
    /// Always pull.
    Always,
    /// Never pull; the image must be on the node.
    Never,
    /// Pull when the image is not on the node.
    #[default]
    IfNotPresent,
}

fn default_pull_policy() -> PullPolicy {
    PullPolicy::IfNotPresent
}

/// An external provider shipped as a container image.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExternalProviderRef {
    /// Unique provider instance ID (`provider_id` in the generated config).
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub provider_id: String,
    /// Image containing `/lls-provider/lls-provider-spec.yaml` and `/lls-provider/packages/*.whl`.
    #[schemars(length(min = 1, max = 1024))]
    pub image: String,
    /// Pull policy of the provider image.
    #[serde(default = "default_pull_policy")]
    pub image_pull_policy: PullPolicy,
    /// Provider-specific configuration, written to the provider's `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::free_form_object")]
    pub config: Option<Map<String, Value>>,
}

pub(crate) const REMOVED_AGENTS: &str = "the agents API was replaced by responses in llama-stack 0.7: move this provider to externalProviders.responses";
pub(crate) const REMOVED_POST_TRAINING: &str = "the postTraining API was removed in llama-stack 0.7 and cannot host a provider: remove this entry";

/// External providers per API, in the order their init containers run.
///
/// `agents` and `postTraining` were API names of older llama-stack releases but no longer exist
/// in llama-stack 0.7; they stay in the schema so the API server rejects them with a fix instead
/// of silently pruning them.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.agents)").message(REMOVED_AGENTS).field_path(".agents"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.postTraining)").message(REMOVED_POST_TRAINING).field_path(".postTraining"))]
pub struct ExternalProvidersSpec {
    /// Inference providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub inference: Option<Vec<ExternalProviderRef>>,
    /// Safety providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub safety: Option<Vec<ExternalProviderRef>>,
    /// Responses providers (the 0.7 successor of agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub responses: Option<Vec<ExternalProviderRef>>,
    /// Batches providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub batches: Option<Vec<ExternalProviderRef>>,
    /// Vector store providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub vector_io: Option<Vec<ExternalProviderRef>>,
    /// Dataset providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub dataset_io: Option<Vec<ExternalProviderRef>>,
    /// Scoring providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub scoring: Option<Vec<ExternalProviderRef>>,
    /// Eval providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub eval: Option<Vec<ExternalProviderRef>>,
    /// Tool runtime providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub tool_runtime: Option<Vec<ExternalProviderRef>>,
    /// Files providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub files: Option<Vec<ExternalProviderRef>>,
    /// File processor providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = schema::list_map_by_provider_id)]
    pub file_processors: Option<Vec<ExternalProviderRef>>,
    /// Removed in llama-stack 0.7 (use `responses`); rejected with that fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub agents: Option<Vec<ExternalProviderRef>>,
    /// Removed in llama-stack 0.7; rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub post_training: Option<Vec<ExternalProviderRef>>,
}

impl ExternalProvidersSpec {
    /// The providers of one API section, by its spec name (`agents` and `postTraining` are
    /// refused by the API server, so they are no section here).
    pub fn section(&self, api: &str) -> Option<&[ExternalProviderRef]> {
        let list = match api {
            "inference" => &self.inference,
            "safety" => &self.safety,
            "responses" => &self.responses,
            "batches" => &self.batches,
            "vectorIo" => &self.vector_io,
            "datasetIo" => &self.dataset_io,
            "scoring" => &self.scoring,
            "eval" => &self.eval,
            "toolRuntime" => &self.tool_runtime,
            "files" => &self.files,
            "fileProcessors" => &self.file_processors,
            _ => return None,
        };
        list.as_deref()
    }

    /// Every provider in CRD order (sections in the order of [`super::apis::APIS`], then list
    /// order), with its section's name.
    pub fn ordered(&self) -> Vec<(&'static str, &ExternalProviderRef)> {
        super::apis::APIS
            .iter()
            .flat_map(|(api, _)| {
                self.section(api)
                    .into_iter()
                    .flatten()
                    .map(move |provider| (*api, provider))
            })
            .collect()
    }
}

/// Installation phase of one external provider.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExternalProviderPhase {
    /// Waiting for the Pod to start its init container.
    #[default]
    Pending,
    /// The provider's init container is running.
    Installing,
    /// Installed and validated.
    Ready,
    /// Installation or validation failed; see the message.
    Failed,
}

/// Status of one external provider.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ExternalProviderStatus {
    /// Provider instance ID.
    pub provider_id: String,
    /// Provider image.
    pub image: String,
    /// Installation phase.
    pub phase: ExternalProviderPhase,
    /// What happened and how to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Name of the init container that installs this provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_container_name: Option<String>,
    /// When the phase last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// Versions of the operator and of the running server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// Version of the operator that last reconciled the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_version: Option<String>,
    /// Version reported by the server's `/v1/version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llama_stack_server_version: Option<String>,
    /// When the versions were last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,
}

/// Health of one provider, as reported by the server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct ProviderHealth {
    /// Health status string from the server.
    pub status: String,
    /// Details from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One provider as listed by the server's `/v1/providers` (keys as the server writes them).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
pub struct ProviderInfo {
    /// API the provider serves.
    pub api: String,
    /// Provider instance ID.
    pub provider_id: String,
    /// Provider type, e.g. `remote::vllm`.
    pub provider_type: String,
    /// Provider configuration as reported by the server (secrets are `${env.…}` references).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::free_form_object")]
    pub config: Option<Map<String, Value>>,
    /// Health as reported by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ProviderHealth>,
}

/// What the running server reports about its distribution.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DistributionConfig {
    /// Distribution name in use, or `custom` for an image reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_distribution: Option<String>,
    /// Distribution names known to the operator and their images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_distributions: Option<std::collections::BTreeMap<String, String>>,
    /// Providers reported by the running server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Vec<ProviderInfo>>,
    /// The operator's own memory, never serialized nor in the schema: in its cache the list of
    /// providers is replaced by this digest (`controller::slim_cache`).
    #[doc(hidden)]
    #[serde(skip)]
    #[schemars(skip)]
    pub providers_digest: Option<ProvidersDigest>,
    /// The operator's own memory, as `providers_digest` is: in its cache the map of available
    /// distributions (the same for every stack) is replaced by the first 16 bytes of its digest.
    #[doc(hidden)]
    #[serde(skip)]
    #[schemars(skip)]
    pub available_digest: Option<[u8; 16]>,
}

/// A list of providers as the operator remembers it between reads of the server: how many, and
/// a digest of all they say (identity, config in any key order, health). Twenty bytes in place
/// of the list, which is the largest part of a stack's object.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ProvidersDigest {
    /// How many providers the list holds.
    pub count: u32,
    /// The first 16 bytes of the list's SHA-256 (see `controller::slim_cache`).
    pub digest: [u8; 16],
}
