//! `spec.providers` of `OGXServer` (`ogx.io/v1beta1`): typed providers per API, each split into
//! `remote` and `inline` groups, plus a `custom` list in every group for provider types the API
//! does not model. Field names, limits and CEL rules follow the OGX operator's API so that the
//! same objects are accepted here.

use std::collections::BTreeMap;

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::SecretKeyRef;

// ---------------------------------------------------------------------------------------------
// Top level
// ---------------------------------------------------------------------------------------------

/// Providers per API. Each API that is set replaces the base config's providers of that API.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersSpec {
    /// Inference providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference: Option<InferenceProvidersSpec>,
    /// Vector store providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_io: Option<VectorIoProvidersSpec>,
    /// Tool runtime providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_runtime: Option<ToolRuntimeProvidersSpec>,
    /// File storage providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<FilesProvidersSpec>,
    /// Batch processing providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<BatchesProvidersSpec>,
    /// Responses providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<ResponsesProvidersSpec>,
    /// File processing (parsing and chunking) providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_processors: Option<FileProcessorsProvidersSpec>,
}

impl ProvidersSpec {
    /// The provider ID of every configured provider, in the order OGX lists them: APIs in field
    /// order, `remote` before `inline`, typed providers in field order, then `custom`.
    /// Duplicates are kept, so a caller can report them.
    pub fn ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        if let Some(spec) = &self.inference {
            spec.collect_ids(&mut ids);
        }
        if let Some(spec) = &self.vector_io {
            spec.collect_ids(&mut ids);
        }
        if let Some(spec) = &self.tool_runtime {
            spec.collect_ids(&mut ids);
        }
        if let Some(spec) = &self.files {
            spec.collect_ids(&mut ids);
        }
        if let Some(spec) = &self.batches {
            spec.collect_ids(&mut ids);
        }
        if let Some(spec) = &self.responses {
            spec.collect_ids(&mut ids);
        }
        if let Some(spec) = &self.file_processors {
            spec.collect_ids(&mut ids);
        }
        ids
    }
}

/// The provider ID a provider gets in the generated config.
pub trait DeriveId {
    /// `id` when set and not empty; otherwise the default ID of the provider type
    /// (e.g. `remote-vllm`, `inline-localfs`).
    fn derive_id(&self) -> String;
}

fn id_or(id: Option<&str>, default: &str) -> String {
    match id {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => default.to_owned(),
    }
}

fn list_ids<P: DeriveId>(ids: &mut Vec<String>, providers: Option<&[P]>) {
    ids.extend(providers.unwrap_or_default().iter().map(P::derive_id));
}

fn one_id<P: DeriveId>(ids: &mut Vec<String>, provider: Option<&P>) {
    ids.extend(provider.map(P::derive_id));
}

// ---------------------------------------------------------------------------------------------
// Custom providers (every API)
// ---------------------------------------------------------------------------------------------

/// A provider of any type, given by its full type name; its config is built from `secretRefs`
/// and `settings`.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("self.type.startsWith('remote::') || self.type.startsWith('inline::')").message("type must have a 'remote::' or 'inline::' prefix (e.g., 'remote::llama-guard', 'inline::my-provider')").field_path(".type"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct CustomProvider {
    /// Provider ID, unique among all providers; derived from `type` when unset
    /// (`remote::foo` becomes `remote-foo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Full provider type with its prefix, e.g. `remote::llama-guard` or `inline::my-provider`.
    #[serde(rename = "type")]
    #[schemars(length(min = 1))]
    pub type_: String,
    /// Config keys whose values come from Secrets: each key becomes `config.<key>`, filled from
    /// an environment variable. Each Secret must be in the server's namespace and carry the
    /// label `ogx.io/watch: "true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minProperties" = 1))]
    pub secret_refs: Option<BTreeMap<String, SecretKeyRef>>,
    /// Provider config merged as written into the provider's `config` (no secret lookup; use
    /// `secretRefs` for secrets). A key may not appear in both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::api::schema::free_form_object")]
    pub settings: Option<serde_json::Value>,
}

impl DeriveId for CustomProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), &self.type_.replace("::", "-"))
    }
}

// ---------------------------------------------------------------------------------------------
// Network settings of remote inference providers
// ---------------------------------------------------------------------------------------------

/// Lowest TLS version accepted on a provider connection.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2.
    #[serde(rename = "TLSv1.2")]
    Tls12,
    /// TLS 1.3.
    #[serde(rename = "TLSv1.3")]
    Tls13,
}

/// TLS settings of a provider connection (trust anchors and client certificates are set
/// globally in `spec.tls`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TlsConfig {
    /// Whether the server certificate is verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// Lowest TLS version to accept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<TlsVersion>,
    /// Allowed cipher suites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub ciphers: Option<Vec<String>>,
}

/// HTTP proxy of a provider connection.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.url) || self.url.size() > 0").message("url must not be empty if specified").field_path(".url"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.http) || self.http.size() > 0").message("http must not be empty if specified").field_path(".http"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.https) || self.https.size() > 0").message("https must not be empty if specified").field_path(".https"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.cacert) || self.cacert.size() > 0").message("cacert must not be empty if specified").field_path(".cacert"))]
pub struct ProxyConfig {
    /// Proxy URL for every connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Proxy URL for HTTP connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// Proxy URL for HTTPS connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<String>,
    /// Path of a CA certificate that verifies the proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<String>,
    /// Hosts reached without the proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub no_proxy: Option<Vec<String>>,
}

/// Timeouts of a provider connection, in seconds.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutConfig {
    /// Connect timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub connect: Option<i64>,
    /// Read timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub read: Option<i64>,
}

/// Network settings of a remote provider connection.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfig {
    /// TLS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsConfig>,
    /// Proxy settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyConfig>,
    /// Connect and read timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<TimeoutConfig>,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minProperties" = 1))]
    pub headers: Option<BTreeMap<String, String>>,
}

// ---------------------------------------------------------------------------------------------
// Inference
// ---------------------------------------------------------------------------------------------

/// A `remote::vllm` inference provider.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct VllmProvider {
    /// Provider ID, unique among all providers (default `remote-vllm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only these models may be registered with the provider; unset allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub allowed_models: Option<Vec<String>>,
    /// Whether the provider periodically re-reads its model list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_models: Option<bool>,
    /// Network settings of the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// URL of the vLLM server.
    #[schemars(length(min = 1))]
    pub endpoint: String,
    /// Token for the vLLM server, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "apiToken")]
    pub api_token: Option<SecretKeyRef>,
    /// Upper bound of generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<i64>,
}

impl DeriveId for VllmProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-vllm")
    }
}

/// A `remote::openai` inference provider.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.endpoint) || self.endpoint.size() > 0").message("endpoint must not be empty if specified").field_path(".endpoint"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct OpenAiProvider {
    /// Provider ID, unique among all providers (default `remote-openai`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only these models may be registered with the provider; unset allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub allowed_models: Option<Vec<String>>,
    /// Whether the provider periodically re-reads its model list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_models: Option<bool>,
    /// Network settings of the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// Base URL of the OpenAI API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// API key, read from a Secret in the server's namespace labelled `ogx.io/watch: "true"`.
    pub api_key: SecretKeyRef,
}

impl DeriveId for OpenAiProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-openai")
    }
}

/// A `remote::azure` (Azure OpenAI) inference provider.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.apiVersion) || self.apiVersion.size() > 0").message("apiVersion must not be empty if specified").field_path(".apiVersion"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.apiType) || self.apiType.size() > 0").message("apiType must not be empty if specified").field_path(".apiType"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct AzureProvider {
    /// Provider ID, unique among all providers (default `remote-azure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only these models may be registered with the provider; unset allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub allowed_models: Option<Vec<String>>,
    /// Whether the provider periodically re-reads its model list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_models: Option<bool>,
    /// Network settings of the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// Base URL of the Azure OpenAI resource (e.g. `https://NAME.openai.azure.com/openai/v1`).
    #[schemars(length(min = 1))]
    pub endpoint: String,
    /// API key, read from a Secret in the server's namespace labelled `ogx.io/watch: "true"`.
    pub api_key: SecretKeyRef,
    /// Azure API version (e.g. `2024-12-01-preview`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Azure API type (e.g. `azure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_type: Option<String>,
}

impl DeriveId for AzureProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-azure")
    }
}

/// A `remote::bedrock` (AWS Bedrock) inference provider.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.awsRoleArn) || self.awsRoleArn.size() > 0").message("awsRoleArn must not be empty if specified").field_path(".awsRoleArn"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.awsWebIdentityTokenFile) || self.awsWebIdentityTokenFile.size() > 0").message("awsWebIdentityTokenFile must not be empty if specified").field_path(".awsWebIdentityTokenFile"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.awsRoleSessionName) || self.awsRoleSessionName.size() > 0").message("awsRoleSessionName must not be empty if specified").field_path(".awsRoleSessionName"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.profileName) || self.profileName.size() > 0").message("profileName must not be empty if specified").field_path(".profileName"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.retryMode) || self.retryMode.size() > 0").message("retryMode must not be empty if specified").field_path(".retryMode"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct BedrockProvider {
    /// Provider ID, unique among all providers (default `remote-bedrock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only these models may be registered with the provider; unset allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub allowed_models: Option<Vec<String>>,
    /// Whether the provider periodically re-reads its model list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_models: Option<bool>,
    /// Network settings of the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// AWS region of the Bedrock runtime endpoint.
    #[schemars(length(min = 1))]
    pub region: String,
    /// Bedrock API key, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<SecretKeyRef>,
    /// AWS access key ID, read from a Secret (same namespace and label rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "awsAccessKeyId")]
    pub aws_access_key_id: Option<SecretKeyRef>,
    /// AWS secret access key, read from a Secret (same namespace and label rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_secret_access_key: Option<SecretKeyRef>,
    /// AWS session token, read from a Secret (same namespace and label rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_session_token: Option<SecretKeyRef>,
    /// ARN of a role to assume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_role_arn: Option<String>,
    /// Path of a web identity token file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_web_identity_token_file: Option<String>,
    /// Session name used when assuming the role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_role_session_name: Option<String>,
    /// AWS profile holding the credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_name: Option<String>,
    /// Attempts per request, the first one included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub total_max_attempts: Option<i64>,
    /// Retry mode of the AWS client (e.g. `standard`, `adaptive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_mode: Option<String>,
    /// Connect timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub connect_timeout: Option<i64>,
    /// Read timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub read_timeout: Option<i64>,
    /// Seconds until a session expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "sessionTTL")]
    #[schemars(range(min = 1))]
    pub session_ttl: Option<i64>,
}

impl DeriveId for BedrockProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-bedrock")
    }
}

/// A `remote::vertexai` (Google Vertex AI) inference provider.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.location) || self.location.size() > 0").message("location must not be empty if specified").field_path(".location"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct VertexAiProvider {
    /// Provider ID, unique among all providers (default `remote-vertexai`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only these models may be registered with the provider; unset allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub allowed_models: Option<Vec<String>>,
    /// Whether the provider periodically re-reads its model list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_models: Option<bool>,
    /// Network settings of the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// Google Cloud project ID.
    #[schemars(length(min = 1))]
    pub project: String,
    /// Google Cloud location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl DeriveId for VertexAiProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-vertexai")
    }
}

/// A `remote::watsonx` (IBM watsonx.ai) inference provider.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.endpoint) || self.endpoint.size() > 0").message("endpoint must not be empty if specified").field_path(".endpoint"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.projectId) || self.projectId.size() > 0").message("projectId must not be empty if specified").field_path(".projectId"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct WatsonxProvider {
    /// Provider ID, unique among all providers (default `remote-watsonx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Only these models may be registered with the provider; unset allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(length(min = 1)))]
    pub allowed_models: Option<Vec<String>>,
    /// Whether the provider periodically re-reads its model list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_models: Option<bool>,
    /// Network settings of the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// Base URL of watsonx.ai.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// API key, read from a Secret in the server's namespace labelled `ogx.io/watch: "true"`.
    pub api_key: SecretKeyRef,
    /// watsonx.ai project ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// HTTP request timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout: Option<i64>,
}

impl DeriveId for WatsonxProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-watsonx")
    }
}

/// Remote inference providers, by type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InferenceRemoteProviders {
    /// vLLM servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub vllm: Option<Vec<VllmProvider>>,
    /// OpenAI endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub openai: Option<Vec<OpenAiProvider>>,
    /// Azure OpenAI resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub azure: Option<Vec<AzureProvider>>,
    /// AWS Bedrock endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub bedrock: Option<Vec<BedrockProvider>>,
    /// Google Vertex AI projects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub vertexai: Option<Vec<VertexAiProvider>>,
    /// IBM watsonx.ai endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub watsonx: Option<Vec<WatsonxProvider>>,
    /// Remote inference providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inline (in-process) inference providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InferenceInlineProviders {
    /// Inline inference providers of any type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inference providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InferenceProvidersSpec {
    /// Providers reached over the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<InferenceRemoteProviders>,
    /// Providers running inside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<InferenceInlineProviders>,
}

impl InferenceProvidersSpec {
    fn collect_ids(&self, ids: &mut Vec<String>) {
        if let Some(remote) = &self.remote {
            list_ids(ids, remote.vllm.as_deref());
            list_ids(ids, remote.openai.as_deref());
            list_ids(ids, remote.azure.as_deref());
            list_ids(ids, remote.bedrock.as_deref());
            list_ids(ids, remote.vertexai.as_deref());
            list_ids(ids, remote.watsonx.as_deref());
            list_ids(ids, remote.custom.as_deref());
        }
        if let Some(inline) = &self.inline {
            list_ids(ids, inline.custom.as_deref());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Vector IO
// ---------------------------------------------------------------------------------------------

/// Distance metric of a vector search.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistanceMetric {
    /// Cosine distance.
    #[serde(rename = "COSINE")]
    Cosine,
    /// Euclidean distance.
    #[serde(rename = "L2")]
    L2,
    /// Manhattan distance.
    #[serde(rename = "L1")]
    L1,
    /// Inner product.
    #[serde(rename = "INNER_PRODUCT")]
    InnerProduct,
}

/// An HNSW index.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct HnswConfig {
    /// Maximum connections per node of the graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub m: Option<i64>,
    /// Build-time accuracy against speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub ef_construction: Option<i64>,
    /// Query-time accuracy against speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub ef_search: Option<i64>,
}

/// An IVFFlat index.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct IvfFlatConfig {
    /// Number of lists (clusters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub nlist: Option<i64>,
    /// Number of lists searched per query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub nprobe: Option<i64>,
}

/// The approximate nearest neighbour index of pgvector: exactly one of `hnsw` and `ivfFlat`.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.hnsw) || has(self.ivfFlat)").message("one of hnsw or ivfFlat must be specified"))]
#[x_kube(validation = kube::core::Rule::new("!(has(self.hnsw) && has(self.ivfFlat))").message("only one of hnsw or ivfFlat can be specified"))]
pub struct VectorIndexConfig {
    /// HNSW index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hnsw: Option<HnswConfig>,
    /// IVFFlat index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "ivfFlat")]
    pub ivf_flat: Option<IvfFlatConfig>,
}

/// A `remote::pgvector` (PostgreSQL) vector store.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.host) || self.host.size() > 0").message("host must not be empty if specified").field_path(".host"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.db) || self.db.size() > 0").message("db must not be empty if specified").field_path(".db"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.user) || self.user.size() > 0").message("user must not be empty if specified").field_path(".user"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct PgvectorProvider {
    /// Provider ID, unique among all providers (default `remote-pgvector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// PostgreSQL host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// PostgreSQL port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i64>,
    /// Database name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    /// PostgreSQL user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// PostgreSQL password, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`.
    pub password: SecretKeyRef,
    /// Distance metric of searches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_metric: Option<DistanceMetric>,
    /// Approximate nearest neighbour index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_index: Option<VectorIndexConfig>,
}

impl DeriveId for PgvectorProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-pgvector")
    }
}

/// A `remote::milvus` vector store.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.consistencyLevel) || self.consistencyLevel.size() > 0").message("consistencyLevel must not be empty if specified").field_path(".consistencyLevel"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct MilvusProvider {
    /// Provider ID, unique among all providers (default `remote-milvus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// URI of the Milvus server.
    #[schemars(length(min = 1))]
    pub uri: String,
    /// Token for the Milvus server, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<SecretKeyRef>,
    /// Consistency level of the Milvus server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency_level: Option<String>,
}

impl DeriveId for MilvusProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-milvus")
    }
}

/// A `remote::qdrant` vector store, reached by `url` or `host`.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.url) || has(self.host)").message("at least one of url or host must be specified"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.url) || self.url.size() > 0").message("url must not be empty if specified").field_path(".url"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.host) || self.host.size() > 0").message("host must not be empty if specified").field_path(".host"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.location) || self.location.size() > 0").message("location must not be empty if specified").field_path(".location"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.prefix) || self.prefix.size() > 0").message("prefix must not be empty if specified").field_path(".prefix"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct QdrantProvider {
    /// Provider ID, unique among all providers (default `remote-qdrant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// URL of the Qdrant server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Host of the Qdrant server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// REST port of the Qdrant server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i64>,
    /// API key, read from a Secret in the server's namespace labelled `ogx.io/watch: "true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<SecretKeyRef>,
    /// Location of the Qdrant server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// gRPC port of the Qdrant server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub grpc_port: Option<i64>,
    /// Whether gRPC is used in preference to REST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefer_grpc: Option<bool>,
    /// Whether the connection uses HTTPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<bool>,
    /// URL path prefix of the Qdrant server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Connection timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout: Option<i64>,
}

impl DeriveId for QdrantProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-qdrant")
    }
}

/// Remote vector store providers, by type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VectorIoRemoteProviders {
    /// PostgreSQL (pgvector) stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub pgvector: Option<Vec<PgvectorProvider>>,
    /// Milvus stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub milvus: Option<Vec<MilvusProvider>>,
    /// Qdrant stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub qdrant: Option<Vec<QdrantProvider>>,
    /// Remote vector store providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inline (in-process) vector store providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VectorIoInlineProviders {
    /// Inline vector store providers of any type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Vector store providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VectorIoProvidersSpec {
    /// Providers reached over the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<VectorIoRemoteProviders>,
    /// Providers running inside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<VectorIoInlineProviders>,
}

impl VectorIoProvidersSpec {
    fn collect_ids(&self, ids: &mut Vec<String>) {
        if let Some(remote) = &self.remote {
            list_ids(ids, remote.pgvector.as_deref());
            list_ids(ids, remote.milvus.as_deref());
            list_ids(ids, remote.qdrant.as_deref());
            list_ids(ids, remote.custom.as_deref());
        }
        if let Some(inline) = &self.inline {
            list_ids(ids, inline.custom.as_deref());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tool runtime
// ---------------------------------------------------------------------------------------------

/// A `remote::brave-search` web search tool.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct BraveSearchProvider {
    /// Provider ID, unique among all providers (default `remote-brave-search`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Brave Search API key, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`.
    pub api_key: SecretKeyRef,
    /// Upper bound of results per search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_results: Option<i64>,
}

impl DeriveId for BraveSearchProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-brave-search")
    }
}

/// A `remote::tavily-search` web search tool.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct TavilySearchProvider {
    /// Provider ID, unique among all providers (default `remote-tavily-search`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tavily API key, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`.
    pub api_key: SecretKeyRef,
    /// Upper bound of results per search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_results: Option<i64>,
}

impl DeriveId for TavilySearchProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-tavily-search")
    }
}

/// A `remote::model-context-protocol` tool runtime (MCP servers).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct ModelContextProtocolProvider {
    /// Provider ID, unique among all providers (default `remote-model-context-protocol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl DeriveId for ModelContextProtocolProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "remote-model-context-protocol")
    }
}

/// The `inline::file-search` tool.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.id) || self.id.size() > 0").message("id must not be empty if specified").field_path(".id"))]
pub struct InlineFileSearchProvider {
    /// Provider ID, unique among all providers (default `inline-file-search`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// How file search uses vector stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_stores_config: Option<VectorStoresConfig>,
}

impl DeriveId for InlineFileSearchProvider {
    fn derive_id(&self) -> String {
        id_or(self.id.as_deref(), "inline-file-search")
    }
}

/// Remote tool runtime providers, by type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolRuntimeRemoteProviders {
    /// Brave Search tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub brave_search: Option<Vec<BraveSearchProvider>>,
    /// Tavily Search tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub tavily_search: Option<Vec<TavilySearchProvider>>,
    /// Model Context Protocol runtimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub model_context_protocol: Option<Vec<ModelContextProtocolProvider>>,
    /// Remote tool runtime providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inline (in-process) tool runtime providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolRuntimeInlineProviders {
    /// File search tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub file_search: Option<Vec<InlineFileSearchProvider>>,
    /// Inline tool runtime providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Tool runtime providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolRuntimeProvidersSpec {
    /// Providers reached over the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<ToolRuntimeRemoteProviders>,
    /// Providers running inside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<ToolRuntimeInlineProviders>,
}

impl ToolRuntimeProvidersSpec {
    fn collect_ids(&self, ids: &mut Vec<String>) {
        if let Some(remote) = &self.remote {
            list_ids(ids, remote.brave_search.as_deref());
            list_ids(ids, remote.tavily_search.as_deref());
            list_ids(ids, remote.model_context_protocol.as_deref());
            list_ids(ids, remote.custom.as_deref());
        }
        if let Some(inline) = &self.inline {
            list_ids(ids, inline.file_search.as_deref());
            list_ids(ids, inline.custom.as_deref());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/// The `remote::s3` file store (AWS S3 or a compatible service).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.region) || self.region.size() > 0").message("region must not be empty if specified").field_path(".region"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.endpointUrl) || self.endpointUrl.size() > 0").message("endpointUrl must not be empty if specified").field_path(".endpointUrl"))]
pub struct S3Provider {
    /// Bucket holding the files.
    #[schemars(length(min = 1))]
    pub bucket_name: String,
    /// AWS region of the bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// AWS access key ID, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`; not needed with IAM roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "awsAccessKeyId")]
    pub aws_access_key_id: Option<SecretKeyRef>,
    /// AWS secret access key, read from a Secret (same rules); not needed with IAM roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_secret_access_key: Option<SecretKeyRef>,
    /// Endpoint of an S3-compatible service (MinIO, LocalStack, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "endpointUrl")]
    pub endpoint_url: Option<String>,
    /// Whether a missing bucket is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_create_bucket: Option<bool>,
}

impl DeriveId for S3Provider {
    fn derive_id(&self) -> String {
        "remote-s3".to_owned()
    }
}

/// The `inline::localfs` file store (the server's local disk).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InlineLocalFsProvider {
    /// Seconds an uploaded file is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "ttlSecs")]
    #[schemars(range(min = 1))]
    pub ttl_secs: Option<i64>,
}

impl DeriveId for InlineLocalFsProvider {
    fn derive_id(&self) -> String {
        "inline-localfs".to_owned()
    }
}

/// Remote file store providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FilesRemoteProviders {
    /// S3 file store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Provider>,
    /// Remote file store providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inline (in-process) file store providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FilesInlineProviders {
    /// Local disk file store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "localfs")]
    pub local_fs: Option<InlineLocalFsProvider>,
    /// Inline file store providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// File store providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FilesProvidersSpec {
    /// Providers reached over the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<FilesRemoteProviders>,
    /// Providers running inside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<FilesInlineProviders>,
}

impl FilesProvidersSpec {
    fn collect_ids(&self, ids: &mut Vec<String>) {
        if let Some(remote) = &self.remote {
            one_id(ids, remote.s3.as_ref());
            list_ids(ids, remote.custom.as_deref());
        }
        if let Some(inline) = &self.inline {
            one_id(ids, inline.local_fs.as_ref());
            list_ids(ids, inline.custom.as_deref());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Batches
// ---------------------------------------------------------------------------------------------

/// The `inline::reference` batch processor.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InlineReferenceProvider {
    /// Upper bound of batches processed at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrent_batches: Option<i64>,
    /// Upper bound of requests processed at once within one batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrent_requests_per_batch: Option<i64>,
}

impl DeriveId for InlineReferenceProvider {
    fn derive_id(&self) -> String {
        "inline-reference".to_owned()
    }
}

/// Remote batch providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BatchesRemoteProviders {
    /// Remote batch providers of any type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inline (in-process) batch providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BatchesInlineProviders {
    /// The reference batch processor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<InlineReferenceProvider>,
    /// Inline batch providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Batch providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BatchesProvidersSpec {
    /// Providers reached over the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<BatchesRemoteProviders>,
    /// Providers running inside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<BatchesInlineProviders>,
}

impl BatchesProvidersSpec {
    fn collect_ids(&self, ids: &mut Vec<String>) {
        if let Some(remote) = &self.remote {
            list_ids(ids, remote.custom.as_deref());
        }
        if let Some(inline) = &self.inline {
            one_id(ids, inline.reference.as_ref());
            list_ids(ids, inline.custom.as_deref());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Responses (and the vector store settings file search shares)
// ---------------------------------------------------------------------------------------------

/// A model named by the provider serving it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct QualifiedModel {
    /// ID of the provider serving the model.
    #[schemars(length(min = 1))]
    pub provider_id: String,
    /// Model ID at that provider.
    #[schemars(length(min = 1))]
    pub model_id: String,
    /// Number of dimensions of the model's embeddings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub embedding_dimensions: Option<i64>,
}

/// A reranking model named by the provider serving it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RerankerModel {
    /// ID of the provider serving the model.
    #[schemars(length(min = 1))]
    pub provider_id: String,
    /// Model ID at that provider.
    #[schemars(length(min = 1))]
    pub model_id: String,
}

/// Rewriting (expansion) of search queries by a model.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RewriteQueryParams {
    /// Model that rewrites queries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<QualifiedModel>,
    /// Prompt template; `{query}` stands for the original query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Upper bound of tokens in a rewritten query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<i64>,
    /// Sampling temperature as a decimal string (e.g. `"0.7"`; 0 is deterministic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<String>,
}

/// Text placed around file search results.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileSearchDisplayParams {
    /// Template of the text before the results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_template: Option<String>,
    /// Template of the text after the results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer_template: Option<String>,
}

/// How retrieved chunks are presented to the model.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ContextPromptParams {
    /// Template of one chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_annotation_template: Option<String>,
    /// Template that introduces the search results to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_template: Option<String>,
}

/// Source citations in answers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AnnotationPromptParams {
    /// Whether answers carry source annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_annotations: Option<bool>,
    /// Instructions telling the model how to cite sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_instruction_template: Option<String>,
    /// Template of one chunk with its citation data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_annotation_template: Option<String>,
}

/// Chunking of files as they are ingested.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileIngestionParams {
    /// Chunk size in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub default_chunk_size_tokens: Option<i64>,
    /// Overlap of neighbouring chunks in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub default_chunk_overlap_tokens: Option<i64>,
}

/// How search results are reranked.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RerankerStrategy {
    /// Reciprocal rank fusion.
    #[serde(rename = "rrf")]
    Rrf,
    /// Weighted scores.
    #[serde(rename = "weighted")]
    Weighted,
    /// Normalized scores.
    #[serde(rename = "normalized")]
    Normalized,
}

/// How a vector store is searched.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    /// Embedding similarity.
    #[serde(rename = "vector")]
    Vector,
    /// Keyword match.
    #[serde(rename = "keyword")]
    Keyword,
    /// Both, combined by the reranker.
    #[serde(rename = "hybrid")]
    Hybrid,
}

/// Retrieval and ranking of chunks in a search.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ChunkRetrievalParams {
    /// Factor of extra chunks fetched before ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub chunk_multiplier: Option<i64>,
    /// Upper bound of tokens of retrieved context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens_in_context: Option<i64>,
    /// Reranking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_reranker_strategy: Option<RerankerStrategy>,
    /// Impact factor of reciprocal rank fusion, as a decimal string (e.g. `"60.0"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrf_impact_factor: Option<String>,
    /// Weight (0 to 1) of weighted reranking, as a decimal string (e.g. `"0.5"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weighted_search_alpha: Option<String>,
    /// Search mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_search_mode: Option<SearchMode>,
}

/// Processing of file batches.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileBatchParams {
    /// Upper bound of files processed at once per batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrent_files_per_batch: Option<i64>,
    /// Files handled per step of a batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub file_batch_chunk_size: Option<i64>,
    /// Seconds between clean-ups of expired batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub cleanup_interval_seconds: Option<i64>,
}

/// Contextual retrieval: a model adds document context to each chunk while ingesting.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ContextualRetrievalParams {
    /// Model that writes the context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<QualifiedModel>,
    /// Timeout of one model call in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub default_timeout_seconds: Option<i64>,
    /// Upper bound of model calls at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub default_max_concurrency: Option<i64>,
    /// Upper bound of a document's size in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_document_tokens: Option<i64>,
}

/// How responses and file search use vector stores.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.defaultProviderId) || self.defaultProviderId.size() > 0").message("defaultProviderId must not be empty if specified").field_path(".defaultProviderId"))]
pub struct VectorStoresConfig {
    /// Vector store provider used when several exist and a request names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_provider_id: Option<String>,
    /// Default embedding model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_embedding_model: Option<QualifiedModel>,
    /// Default reranking model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_reranker_model: Option<RerankerModel>,
    /// Query rewriting; unset turns it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_query_params: Option<RewriteQueryParams>,
    /// Text around file search results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_search_params: Option<FileSearchDisplayParams>,
    /// Presentation of retrieved chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_prompt_params: Option<ContextPromptParams>,
    /// Source citations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_prompt_params: Option<AnnotationPromptParams>,
    /// Chunking at ingestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_ingestion_params: Option<FileIngestionParams>,
    /// Retrieval and ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_retrieval_params: Option<ChunkRetrievalParams>,
    /// File batch processing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_batch_params: Option<FileBatchParams>,
    /// Contextual retrieval at ingestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contextual_retrieval_params: Option<ContextualRetrievalParams>,
}

/// Compaction: long conversations are replaced by a model-written summary.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.summarizationPrompt) || self.summarizationPrompt.size() > 0").message("summarizationPrompt must not be empty if specified").field_path(".summarizationPrompt"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.summaryPrefix) || self.summaryPrefix.size() > 0").message("summaryPrefix must not be empty if specified").field_path(".summaryPrefix"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.summarizationModel) || self.summarizationModel.size() > 0").message("summarizationModel must not be empty if specified").field_path(".summarizationModel"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.tokenizerEncoding) || self.tokenizerEncoding.size() > 0").message("tokenizerEncoding must not be empty if specified").field_path(".tokenizerEncoding"))]
pub struct CompactionConfig {
    /// Prompt asking the model to summarize the conversation so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarization_prompt: Option<String>,
    /// Text put before the summary, framing it for the next context window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_prefix: Option<String>,
    /// Model that writes summaries; unset uses the conversation's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarization_model: Option<String>,
    /// Token count above which a conversation is compacted automatically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub default_compact_threshold: Option<i64>,
    /// tiktoken encoding used to count tokens (e.g. `o200k_base`, `cl100k_base`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_encoding: Option<String>,
}

/// The `inline::builtin` responses provider.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InlineBuiltinResponsesProvider {
    /// How file search and retrieval use vector stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_stores_config: Option<VectorStoresConfig>,
    /// Conversation compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_config: Option<CompactionConfig>,
}

impl DeriveId for InlineBuiltinResponsesProvider {
    fn derive_id(&self) -> String {
        "inline-builtin".to_owned()
    }
}

/// Remote responses providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResponsesRemoteProviders {
    /// Remote responses providers of any type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inline (in-process) responses providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResponsesInlineProviders {
    /// The built-in responses provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<InlineBuiltinResponsesProvider>,
    /// Inline responses providers of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Responses providers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResponsesProvidersSpec {
    /// Providers reached over the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<ResponsesRemoteProviders>,
    /// Providers running inside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<ResponsesInlineProviders>,
}

impl ResponsesProvidersSpec {
    fn collect_ids(&self, ids: &mut Vec<String>) {
        if let Some(remote) = &self.remote {
            list_ids(ids, remote.custom.as_deref());
        }
        if let Some(inline) = &self.inline {
            one_id(ids, inline.builtin.as_ref());
            list_ids(ids, inline.custom.as_deref());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// File processors
// ---------------------------------------------------------------------------------------------

/// The `inline::auto` file processor (picks a parser by file type).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InlineAutoFileProcessorProvider {
    /// Chunk size in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 4096))]
    pub default_chunk_size_tokens: Option<i64>,
    /// Chunk overlap in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2048))]
    pub default_chunk_overlap_tokens: Option<i64>,
    /// Whether PDF metadata (title, author, ...) is extracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_metadata: Option<bool>,
    /// Whether extracted text is cleaned (whitespace and line breaks normalized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_text: Option<bool>,
}

impl DeriveId for InlineAutoFileProcessorProvider {
    fn derive_id(&self) -> String {
        "inline-auto".to_owned()
    }
}

/// The `inline::pypdf` file processor.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InlinePyPdfFileProcessorProvider {
    /// Chunk size in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 4096))]
    pub default_chunk_size_tokens: Option<i64>,
    /// Chunk overlap in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2048))]
    pub default_chunk_overlap_tokens: Option<i64>,
    /// Whether PDF metadata (title, author, ...) is extracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_metadata: Option<bool>,
    /// Whether extracted text is cleaned (whitespace and line breaks normalized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_text: Option<bool>,
}

impl DeriveId for InlinePyPdfFileProcessorProvider {
    fn derive_id(&self) -> String {
        "inline-pypdf".to_owned()
    }
}

/// The `inline::markitdown` file processor.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InlineMarkItDownFileProcessorProvider {
    /// Chunk size in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 4096))]
    pub default_chunk_size_tokens: Option<i64>,
    /// Chunk overlap in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2048))]
    pub default_chunk_overlap_tokens: Option<i64>,
}

impl DeriveId for InlineMarkItDownFileProcessorProvider {
    fn derive_id(&self) -> String {
        "inline-markitdown".to_owned()
    }
}

/// The `inline::docling` file processor.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InlineDoclingFileProcessorProvider {
    /// Chunk size in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 4096))]
    pub default_chunk_size_tokens: Option<i64>,
    /// Chunk overlap in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2048))]
    pub default_chunk_overlap_tokens: Option<i64>,
    /// Whether scanned documents go through OCR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "doOcr")]
    pub do_ocr: Option<bool>,
}

impl DeriveId for InlineDoclingFileProcessorProvider {
    fn derive_id(&self) -> String {
        "inline-docling".to_owned()
    }
}

/// The `remote::docling-serve` file processor (a Docling Serve instance).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.baseUrl) || self.baseUrl.size() > 0").message("baseUrl must not be empty if specified").field_path(".baseUrl"))]
pub struct DoclingServeProvider {
    /// Base URL of the Docling Serve instance.
    #[serde(rename = "baseUrl")]
    #[schemars(length(min = 1))]
    pub base_url: String,
    /// API key of Docling Serve, read from a Secret in the server's namespace labelled
    /// `ogx.io/watch: "true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<SecretKeyRef>,
    /// Chunk size in tokens for the `auto` chunking strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 4096))]
    pub default_chunk_size_tokens: Option<i64>,
}

impl DeriveId for DoclingServeProvider {
    fn derive_id(&self) -> String {
        "remote-docling-serve".to_owned()
    }
}

/// Remote file processors.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileProcessorsRemoteProviders {
    /// Docling Serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docling_serve: Option<DoclingServeProvider>,
    /// Remote file processors of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// Inline (in-process) file processors.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileProcessorsInlineProviders {
    /// Parser chosen by file type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<InlineAutoFileProcessorProvider>,
    /// PyPDF parser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "pypdf")]
    pub py_pdf: Option<InlinePyPdfFileProcessorProvider>,
    /// MarkItDown parser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "markitdown")]
    pub mark_it_down: Option<InlineMarkItDownFileProcessorProvider>,
    /// Docling parser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docling: Option<InlineDoclingFileProcessorProvider>,
    /// Inline file processors of other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub custom: Option<Vec<CustomProvider>>,
}

/// File processors.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileProcessorsProvidersSpec {
    /// Providers reached over the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<FileProcessorsRemoteProviders>,
    /// Providers running inside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<FileProcessorsInlineProviders>,
}

impl FileProcessorsProvidersSpec {
    fn collect_ids(&self, ids: &mut Vec<String>) {
        if let Some(remote) = &self.remote {
            one_id(ids, remote.docling_serve.as_ref());
            list_ids(ids, remote.custom.as_deref());
        }
        if let Some(inline) = &self.inline {
            one_id(ids, inline.auto.as_ref());
            one_id(ids, inline.py_pdf.as_ref());
            one_id(ids, inline.mark_it_down.as_ref());
            one_id(ids, inline.docling.as_ref());
            list_ids(ids, inline.custom.as_deref());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `spec.providers` of `config/samples/example-with-generated-config.yaml` (OGX operator),
    /// plus the custom provider of the "explicit non-empty id is valid" case of
    /// `api/v1beta1/ogxserver_cel_test.go`; the `settings`, `secretRefs` and the inline custom
    /// entry are added here.
    #[test]
    fn openai_sample_and_custom_providers_parse() {
        let yaml = r#"
inference:
  remote:
    openai:
    - id: openai-primary
      apiKey:
        name: openai-creds
        key: api-key
    custom:
    - id: my-vllm
      type: remote::vllm
      secretRefs:
        api_token:
          name: vllm-creds
          key: token
      settings:
        url: http://vllm:8000/v1
  inline:
    custom:
    - type: inline::my-provider
"#;
        let spec: ProvidersSpec = serde_saphyr::from_str(yaml).unwrap();
        let remote = spec.inference.as_ref().unwrap().remote.as_ref().unwrap();

        let openai = &remote.openai.as_ref().unwrap()[0];
        assert_eq!(openai.id.as_deref(), Some("openai-primary"));
        assert_eq!(openai.api_key.name, "openai-creds");
        assert_eq!(openai.api_key.key, "api-key");
        assert_eq!(openai.endpoint, None);

        let custom = &remote.custom.as_ref().unwrap()[0];
        assert_eq!(custom.type_, "remote::vllm");
        assert_eq!(
            custom.secret_refs.as_ref().unwrap()["api_token"].name,
            "vllm-creds"
        );
        assert_eq!(custom.settings, Some(json!({"url": "http://vllm:8000/v1"})));

        // Remote before inline; a custom provider without id is named after its type.
        assert_eq!(
            spec.ids(),
            vec!["openai-primary", "my-vllm", "inline-my-provider"]
        );
    }

    /// `spec.providers` of `cmd/configgen/testdata/p0-network-nesting/cr.yaml` (OGX operator),
    /// with `apiToken` and `maxTokens` added (both are fields of the vLLM provider).
    #[test]
    fn vllm_with_network_settings_parses() {
        let yaml = r#"
inference:
  remote:
    vllm:
    - endpoint: https://vllm.example.com:8000
      apiToken:
        name: vllm-token
        key: token
      maxTokens: 4096
      network:
        tls:
          verify: false
          minVersion: TLSv1.3
          ciphers:
          - ECDHE+AESGCM
        proxy:
          url: http://proxy.example.com:3128
          noProxy:
          - localhost
          - .internal
        timeout:
          connect: 30
          read: 120
        headers:
          X-Custom: my-value
"#;
        let spec: ProvidersSpec = serde_saphyr::from_str(yaml).unwrap();
        let inference = spec.inference.as_ref().unwrap();
        let vllm = &inference.remote.as_ref().unwrap().vllm.as_ref().unwrap()[0];
        assert_eq!(vllm.endpoint, "https://vllm.example.com:8000");
        assert_eq!(vllm.api_token.as_ref().unwrap().name, "vllm-token");
        assert_eq!(vllm.max_tokens, Some(4096));

        let network = vllm.network.as_ref().unwrap();
        let tls = network.tls.as_ref().unwrap();
        assert_eq!(tls.verify, Some(false));
        assert_eq!(tls.min_version, Some(TlsVersion::Tls13));
        assert_eq!(
            tls.ciphers.as_deref(),
            Some(&["ECDHE+AESGCM".to_owned()][..])
        );
        let proxy = network.proxy.as_ref().unwrap();
        assert_eq!(proxy.url.as_deref(), Some("http://proxy.example.com:3128"));
        assert_eq!(proxy.no_proxy.as_ref().unwrap().len(), 2);
        let timeout = network.timeout.as_ref().unwrap();
        assert_eq!((timeout.connect, timeout.read), (Some(30), Some(120)));
        assert_eq!(network.headers.as_ref().unwrap()["X-Custom"], "my-value");

        assert_eq!(spec.ids(), vec!["remote-vllm"]);

        // The JSON names survive a round trip.
        let value = serde_json::to_value(&spec).unwrap();
        let vllm = &value["inference"]["remote"]["vllm"][0];
        assert_eq!(vllm["apiToken"]["name"], "vllm-token");
        assert_eq!(vllm["network"]["tls"]["minVersion"], "TLSv1.3");
    }

    /// `spec.providers` of `cmd/configgen/testdata/p1-pgvector-config/cr.yaml` and of
    /// `cmd/configgen/testdata/p1-fileprocessors-config/cr.yaml` (OGX operator), joined.
    #[test]
    fn pgvector_and_file_processors_parse() {
        let yaml = r#"
vectorIo:
  remote:
    pgvector:
    - host: pgvector.example.com
      port: 5432
      db: vectors
      user: pguser
      password:
        name: pgvector-secret
        key: password
      distanceMetric: COSINE
      vectorIndex:
        hnsw:
          m: 16
          efConstruction: 200
          efSearch: 100
fileProcessors:
  remote:
    doclingServe:
      baseUrl: "http://docling.example.com:5001/v1"
      apiKey:
        name: docling-secret
        key: api-key
      defaultChunkSizeTokens: 2048
  inline:
    auto:
      defaultChunkSizeTokens: 1000
      defaultChunkOverlapTokens: 500
      extractMetadata: true
      cleanText: false
    pypdf:
      defaultChunkSizeTokens: 600
      defaultChunkOverlapTokens: 200
      extractMetadata: false
      cleanText: true
    markitdown:
      defaultChunkSizeTokens: 900
      defaultChunkOverlapTokens: 300
    docling:
      defaultChunkSizeTokens: 1200
      defaultChunkOverlapTokens: 100
      doOcr: false
"#;
        let spec: ProvidersSpec = serde_saphyr::from_str(yaml).unwrap();

        let vector_io = spec.vector_io.as_ref().unwrap();
        let pg = &vector_io
            .remote
            .as_ref()
            .unwrap()
            .pgvector
            .as_ref()
            .unwrap()[0];
        assert_eq!(pg.port, Some(5432));
        assert_eq!(pg.password.name, "pgvector-secret");
        assert_eq!(pg.distance_metric, Some(DistanceMetric::Cosine));
        let index = pg.vector_index.as_ref().unwrap();
        assert_eq!(index.hnsw.as_ref().unwrap().m, Some(16));
        assert_eq!(index.ivf_flat, None);

        let processors = spec.file_processors.as_ref().unwrap();
        let serve = processors
            .remote
            .as_ref()
            .unwrap()
            .docling_serve
            .as_ref()
            .unwrap();
        assert_eq!(serve.base_url, "http://docling.example.com:5001/v1");
        assert_eq!(serve.api_key.as_ref().unwrap().name, "docling-secret");
        let inline = processors.inline.as_ref().unwrap();
        assert_eq!(inline.py_pdf.as_ref().unwrap().clean_text, Some(true));
        assert_eq!(
            inline
                .mark_it_down
                .as_ref()
                .unwrap()
                .default_chunk_size_tokens,
            Some(900)
        );
        assert_eq!(inline.docling.as_ref().unwrap().do_ocr, Some(false));

        assert_eq!(
            spec.ids(),
            vec![
                "remote-pgvector",
                "remote-docling-serve",
                "inline-auto",
                "inline-pypdf",
                "inline-markitdown",
                "inline-docling",
            ]
        );

        // The JSON names survive a round trip.
        let value = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            value["vectorIo"]["remote"]["pgvector"][0]["distanceMetric"],
            "COSINE"
        );
        let inline = &value["fileProcessors"]["inline"];
        assert_eq!(inline["pypdf"]["cleanText"], true);
        assert_eq!(inline["markitdown"]["defaultChunkSizeTokens"], 900);
        assert_eq!(inline["docling"]["doOcr"], false);
        assert_eq!(
            value["fileProcessors"]["remote"]["doclingServe"]["baseUrl"],
            "http://docling.example.com:5001/v1"
        );
    }
}
