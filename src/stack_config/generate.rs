//! v1alpha2 spec + base config -> the server's `config.yaml` (pure, deterministic), for the
//! server line the base config belongs to (llama-stack 0.7.3 or OGX 1.x: the provider table, the
//! APIs it has, where its state goes, and whether it must be told it may serve plain HTTP).
//!
//! Pipeline: providers (replace per API) -> resources (additive) -> storage (per subsection)
//! -> disabled (subtractive) -> repair of references the changes left dangling -> serialize ->
//! sha256. Secrets never enter the config: they become `${env.LLSD_…}` references plus
//! environment variables filled from Secrets.
//!
//! Choices where the specs and llama-stack 0.7.3 disagree (see docs/config-generation.md):
//! - `endpoint` and `apiKey` go to the provider's own URL and secret keys from the provider
//!   table (vLLM: `base_url`, `api_token`), not to `url`/`api_key`.
//! - A user provider of a type the base config already has starts from that provider's config
//!   (defaults such as `persistence` and `${env.…}` knobs), then gets the user's fields. The base
//!   providers of that API are otherwise dropped (providers are replaced per API, never merged).
//! - An API both configured and disabled is an error, not a warning: one of the two is a mistake.

use std::collections::{BTreeMap, BTreeSet};

use llama_stack_resolver::base_config::{
    BaseConfig, BaseConfigError, ConfigSource, parse_base_config,
};
use llama_stack_resolver::server_line::{ServerLine, ServerRelease};
use serde_json::{Map, Value, json};

use super::env::{EnvSource, EnvVarSpec, UrlPart, env_name, env_ref};
use super::table::{ProviderInfo, ProviderTable};
use crate::api::apis;
use crate::api::polymorphic::NameOrObject;
use crate::api::v1alpha2::{
    KvStorageSpec, KvStorageType, LlamaStackDistributionSpec, ModelConfig, ModelConfigOrString,
    ProviderConfig, SecretKeyRef, SecretValue, SqlStorageSpec, SqlStorageType,
};

/// A generation problem at a field path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FieldError {
    /// Path from the object root, e.g. `spec.providers.inference[1].id`.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Why no config was generated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// The base config is not usable.
    #[error("the base config is not a llama-stack config: {0}")]
    BaseConfig(String),
    /// The base config's schema version is not one this operator generates from.
    #[error("the base config is not a llama-stack config: {0}")]
    UnsupportedVersion(llama_stack_resolver::base_config::BaseConfigError),
    /// The spec cannot be turned into a working config.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
}

/// The generated config and what goes with it (empty by default: no config).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GeneratedConfig {
    /// `config.yaml` bytes.
    pub yaml: String,
    /// `sha256:<hex>` of `yaml`.
    pub hash: String,
    /// Environment variables the server container needs (secrets by reference only).
    pub env: Vec<EnvVarSpec>,
    /// Providers in the config.
    pub provider_count: usize,
    /// Registered models, shields and tool groups asked for.
    pub resource_count: usize,
    /// Schema version of the config.
    pub config_version: u64,
    /// Things the user should know (ignored keys, repaired references, removed APIs).
    pub warnings: Vec<String>,
}

struct Ctx<'a> {
    table: &'a ProviderTable,
    errors: Vec<FieldError>,
    warnings: Vec<String>,
    env: BTreeMap<String, EnvVarSpec>,
    /// Which spec field each Secret's variable is for: two fields must never share one (the
    /// server would read one Secret for both).
    env_owners: BTreeMap<String, String>,
}

impl Ctx<'_> {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError {
            path: path.into(),
            message: message.into(),
        });
    }

    /// The `${env.NAME}` reference of a variable read from `secret` for the spec field `path`;
    /// an error when another field already uses that variable name (ids that differ only in
    /// case or punctuation, `my-vllm` and `my_vllm`, give one name).
    fn secret_env(&mut self, name: String, secret: &SecretKeyRef, path: &str) -> String {
        let reference = env_ref(&name);
        if let Some(owner) = self.env_owners.get(&name).filter(|owner| *owner != path) {
            let owner = owner.clone();
            self.error(
                path,
                format!("its Secret would be passed as {name}, which {owner} already uses, so the server would read one Secret for both; give the providers ids that differ in more than case or punctuation"),
            );
            return reference;
        }
        self.env_owners.insert(name.clone(), path.to_owned());
        self.env.insert(
            name.clone(),
            EnvVarSpec {
                name,
                source: EnvSource::SecretKeyRef(secret.clone()),
            },
        );
        reference
    }
}

/// The id part of a base `provider_id` such as `${env.OLLAMA_URL:+ollama}` (conditional ids).
fn effective_id(raw: &str) -> &str {
    raw.strip_prefix("${env.")
        .and_then(|rest| rest.split_once(":+"))
        .and_then(|(_, id)| id.strip_suffix('}'))
        .unwrap_or(raw)
}

fn base_provider_ids(config: &Map<String, Value>) -> BTreeMap<String, String> {
    let mut ids = BTreeMap::new();
    if let Some(Value::Object(providers)) = config.get("providers") {
        for (api, list) in providers {
            for p in list.as_array().into_iter().flatten() {
                if let Some(id) = p.get("provider_id").and_then(Value::as_str) {
                    ids.insert(effective_id(id).to_owned(), api.clone());
                }
            }
        }
    }
    ids
}

/// Where the serving certificate Secret is mounted (`kubernetes.io/tls` keys).
pub const TLS_DIR: &str = "/etc/llama-stack-tls";

/// `networking.tls` and `workload.workers` in the server section, and, for a server that refuses
/// plain HTTP unless told (OGX from 1.2), `insecure: true` when the operator serves no TLS (the
/// key is ignored by the servers before it, and only images built after ogx-ai/ogx#6288 pass
/// `--insecure` themselves). Returns whether anything was set. (The port is passed in the
/// environment: `llama stack run` ignores `server.port`.)
fn server(
    spec: &LlamaStackDistributionSpec,
    release: ServerRelease,
    config: &mut Map<String, Value>,
) -> bool {
    let tls = spec
        .networking
        .as_ref()
        .and_then(|n| n.tls.as_ref())
        .is_some_and(|t| t.enabled && t.secret_name.is_some());
    let workers = spec.workload.as_ref().and_then(|w| w.workers);
    let insecure = !tls && release.requires_tls_opt_out();
    if !tls && workers.is_none() && !insecure {
        return false;
    }
    let server = config
        .entry("server")
        .or_insert_with(|| Value::Object(Map::new()));
    if !server.is_object() {
        *server = Value::Object(Map::new());
    }
    if tls {
        server["tls_certfile"] = Value::String(format!("{TLS_DIR}/tls.crt"));
        server["tls_keyfile"] = Value::String(format!("{TLS_DIR}/tls.key"));
    }
    if let Some(workers) = workers {
        server["workers"] = Value::from(workers);
    }
    if insecure {
        server["insecure"] = Value::Bool(true);
    }
    true
}

/// Parses a URL of the form `scheme://[user[:password]@]host[:port][/path]`.
struct ParsedUrl<'a> {
    user: Option<&'a str>,
    has_password: bool,
    host: &'a str,
    port: Option<&'a str>,
    path: Option<&'a str>,
}

fn parse_url(url: &str) -> Option<ParsedUrl<'_>> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (authority, path) = match rest.find('/') {
        Some(i) => (
            &rest[..i],
            Some(rest[i + 1..].split(['?', '#']).next().unwrap_or_default())
                .filter(|p| !p.is_empty()),
        ),
        None => (rest, None),
    };
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (user, has_password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((user, _)) => (Some(user), true),
            None => (Some(u), false),
        },
        None => (None, false),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (hostport, None),
    };
    (!host.is_empty()).then_some(ParsedUrl {
        user,
        has_password,
        host,
        port,
        path,
    })
}

fn resolve_type<'t>(
    ctx: &mut Ctx<'t>,
    api: &str,
    provider: &str,
    path: &str,
) -> Option<(String, &'t ProviderInfo)> {
    let table = ctx.table;
    let candidates: Vec<String> = if provider.contains("::") {
        vec![provider.to_owned()]
    } else {
        vec![format!("remote::{provider}"), format!("inline::{provider}")]
    };
    let found: Vec<&String> = candidates
        .iter()
        .filter(|t| table.get(api, t).is_some())
        .collect();
    let Some(chosen) = found.first() else {
        ctx.error(
            format!("{path}.provider"),
            format!(
                "{provider:?} is not a {api} provider of {}; available: {}",
                table.server_name(),
                table.types(api).join(", ")
            ),
        );
        return None;
    };
    if found.len() > 1 {
        ctx.warnings.push(format!(
            "{path}.provider: {provider:?} is ambiguous, using {chosen}; write {} for the other",
            found[1]
        ));
    }
    let info = table.get(api, chosen)?;
    if let Some(err) = &info.deprecation_error {
        ctx.error(
            format!("{path}.provider"),
            format!("{chosen} can no longer be used: {err}"),
        );
        return None;
    }
    if let Some(warning) = &info.deprecation_warning {
        ctx.warnings.push(format!(
            "{path}.provider: {chosen} is deprecated: {warning}"
        ));
    }
    Some(((*chosen).clone(), info))
}

fn secret_ref_in(value: &Value) -> Option<Result<SecretKeyRef, String>> {
    let obj = value.as_object()?;
    let inner = obj.get("secretKeyRef")?;
    if obj.len() != 1 {
        return Some(Err(
            "a secretKeyRef value must have no other keys".to_owned()
        ));
    }
    Some(
        serde_json::from_value(inner.clone())
            .map_err(|e| format!("secretKeyRef needs name and key: {e}")),
    )
}

/// The config of one provider entry being built, and the keys `endpoint` and `apiKey` set (a
/// setting may not set them again).
struct ProviderDraft<'a> {
    provider_type: String,
    info: &'a ProviderInfo,
    path: &'a str,
    config: Map<String, Value>,
    set_by_fields: BTreeSet<String>,
}

impl ProviderDraft<'_> {
    fn set_by_field(&mut self, key: &str, value: Value) {
        self.config.insert(key.to_owned(), value);
        self.set_by_fields.insert(key.to_owned());
    }

    fn takes(&self, key: &str) -> bool {
        self.info.config_keys.iter().any(|k| k == key)
    }

    /// `endpoint`: the provider's URL setting, or host/port/db/user for those that take them.
    fn endpoint(&mut self, ctx: &mut Ctx<'_>, endpoint: &str) {
        let path = format!("{}.endpoint", self.path);
        if let Some(field) = self.info.url_field.clone() {
            self.set_by_field(&field, json!(endpoint));
            return;
        }
        if !self.info.host_port {
            ctx.error(
                path,
                format!(
                    "{} has no URL setting in {}; configure it with settings (its keys: {})",
                    self.provider_type,
                    ctx.table.server_name(),
                    self.info.config_keys.join(", ")
                ),
            );
            return;
        }
        match parse_url(endpoint) {
            Some(url) if url.has_password => ctx.error(
                path,
                "the endpoint contains a password; put it in a Secret and reference it with settings.password.secretKeyRef",
            ),
            Some(url) => {
                self.set_by_field("host", json!(url.host));
                if let Some(port) = url.port.and_then(|p| p.parse::<u64>().ok()) {
                    self.set_by_field("port", json!(port));
                }
                if let (Some(db), true) = (url.path, self.takes("db")) {
                    self.set_by_field("db", json!(db));
                }
                if let (Some(user), true) = (url.user, self.takes("user")) {
                    self.set_by_field("user", json!(user));
                }
            }
            None => ctx.error(
                path,
                format!("{endpoint:?} is not a URL like scheme://host:port/db"),
            ),
        }
    }

    /// `apiKey`: an environment variable from the Secret, in the provider's key setting.
    fn api_key(&mut self, ctx: &mut Ctx<'_>, id: &str, secret_key_ref: &SecretKeyRef) {
        match self.info.secret_field.clone() {
            Some(field) => {
                let path = format!("{}.apiKey", self.path);
                let reference = ctx.secret_env(env_name(id, "api_key"), secret_key_ref, &path);
                self.set_by_field(&field, json!(reference));
            }
            None => ctx.error(
                format!("{}.apiKey", self.path),
                format!("{} takes no API key in {} (the server would ignore it and run without authentication); remove apiKey", self.provider_type, ctx.table.server_name()),
            ),
        }
    }

    /// `settings`: copied as they are, Secret references as environment variables.
    fn settings(&mut self, ctx: &mut Ctx<'_>, id: &str, settings: &Map<String, Value>) {
        for (key, value) in settings {
            let path = format!("{}.settings.{key}", self.path);
            if self.set_by_fields.contains(key) {
                ctx.error(
                    path,
                    format!("{key} is already set by endpoint or apiKey; set it in one place"),
                );
                continue;
            }
            if !self.takes(key) {
                ctx.warnings.push(format!(
                    "{path}: {} has no setting {key:?} in {}; the server would ignore it (known: {})",
                    self.provider_type,
                    ctx.table.server_name(),
                    self.info.config_keys.join(", ")
                ));
            }
            match secret_ref_in(value) {
                Some(Ok(secret)) => {
                    let reference = ctx.secret_env(env_name(id, key), &secret, &path);
                    self.config.insert(key.clone(), json!(reference));
                }
                Some(Err(message)) => ctx.error(path, message),
                None => {
                    self.config.insert(key.clone(), value.clone());
                }
            }
        }
    }

    /// Reports the keys the server requires that nothing set.
    fn check_required(&self, ctx: &mut Ctx<'_>) {
        let missing: Vec<&str> = self
            .info
            .required_keys
            .iter()
            .filter(|k| !self.config.contains_key(*k))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            ctx.error(
                self.path.to_owned(),
                format!(
                    "{} requires {} (set them with endpoint or settings)",
                    self.provider_type,
                    missing.join(", ")
                ),
            );
        }
    }
}

/// One user provider to a config entry, starting from the base config's entry of its type.
fn build_provider(
    ctx: &mut Ctx<'_>,
    api: &str,
    p: &ProviderConfig,
    path: &str,
    base: &[Value],
) -> Option<(String, Value)> {
    let (provider_type, info) = resolve_type(ctx, api, &p.provider, path)?;
    let id = p.config_id();
    let config: Map<String, Value> = base
        .iter()
        .find(|b| b.get("provider_type").and_then(Value::as_str) == Some(provider_type.as_str()))
        .and_then(|b| b.get("config"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut draft = ProviderDraft {
        provider_type,
        info,
        path,
        config,
        set_by_fields: BTreeSet::new(),
    };
    if let Some(endpoint) = &p.endpoint {
        draft.endpoint(ctx, endpoint);
    }
    if let Some(SecretValue { secret_key_ref }) = &p.api_key {
        draft.api_key(ctx, &id, secret_key_ref);
    }
    if let Some(settings) = &p.settings {
        draft.settings(ctx, &id, settings);
    }
    draft.check_required(ctx);
    let ProviderDraft {
        provider_type,
        config,
        ..
    } = draft;
    Some((
        id.clone(),
        json!({"provider_id": id, "provider_type": provider_type, "config": Value::Object(config)}),
    ))
}

const USER_APIS: &[(&str, &str)] = &[
    ("inference", "inference"),
    ("safety", "safety"),
    ("vectorIo", "vector_io"),
    ("toolRuntime", "tool_runtime"),
];

/// Why a spec section has no target on this server: its API does not exist there (the
/// `safety` API on OGX 1.x), with the APIs the server does have.
fn absent_api(table: &ProviderTable, api: &str) -> String {
    format!(
        "the image runs {}, which has no {api} API (OGX removed safety, eval, datasetio and scoring in 1.0); its APIs: {}. Remove this section, or run an image of a release that has it",
        table.server_name(),
        table.apis().collect::<Vec<_>>().join(", ")
    )
}

/// `ids`: provider id → the spec field that gave it, across every section (telemetry too).
fn providers(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    config: &mut Map<String, Value>,
    seen: &mut BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut configured = BTreeSet::new();
    let Some(user) = &spec.providers else {
        return configured;
    };
    let fields = [
        &user.inference,
        &user.safety,
        &user.vector_io,
        &user.tool_runtime,
    ];
    for ((spec_api, api), field) in USER_APIS.iter().zip(fields) {
        let Some(field) = field else { continue };
        if !ctx.table.providers.contains_key(*api) {
            let message = absent_api(ctx.table, api);
            ctx.error(format!("spec.providers.{spec_api}"), message);
            continue;
        }
        let base: Vec<Value> = config
            .get("providers")
            .and_then(|p| p.get(*api))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut entries = Vec::new();
        let many = field.items().len() > 1;
        for (i, p) in field.items().iter().enumerate() {
            let path = if field.is_list() {
                format!("spec.providers.{spec_api}[{i}]")
            } else {
                format!("spec.providers.{spec_api}")
            };
            if many && p.id.is_none() {
                ctx.error(
                    format!("{path}.id"),
                    format!("id is required when {spec_api} lists more than one provider"),
                );
            }
            if let Some((id, entry)) = build_provider(ctx, api, p, &path, &base) {
                if let Some(first) = seen.insert(id.clone(), path.clone()) {
                    ctx.error(format!("{path}.id"), format!("provider id {id:?} is already used by {first}; provider ids must be unique across all APIs"));
                }
                entries.push(entry);
            }
        }
        configured.insert((*api).to_owned());
        if let Some(Value::Object(providers)) = config.get_mut("providers") {
            providers.insert((*api).to_owned(), Value::Array(entries));
        }
    }
    configured
}

/// The telemetry backend as OpenTelemetry variables. Its id (`id`, default `telemetry`) is unique
/// with the other providers' (`ids`), so its token's variable is its own.
fn telemetry(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    ids: &mut BTreeMap<String, String>,
) {
    let Some(telemetry) = spec.providers.as_ref().and_then(|p| p.telemetry.as_ref()) else {
        return;
    };
    if telemetry.items().len() != 1 {
        ctx.error("spec.providers.telemetry", "give one telemetry backend; llama-stack 0.7 exports OpenTelemetry to a single endpoint");
        return;
    }
    let t = &telemetry.items()[0];
    let path = if telemetry.is_list() {
        "spec.providers.telemetry[0]"
    } else {
        "spec.providers.telemetry"
    };
    if !matches!(t.provider.as_str(), "opentelemetry" | "otel" | "otlp") {
        ctx.error(format!("{path}.provider"), format!("{:?} is not supported: llama-stack 0.7 telemetry is OpenTelemetry; use provider: opentelemetry", t.provider));
        return;
    }
    let id = t.id.clone().unwrap_or_else(|| "telemetry".to_owned());
    if let Some(first) = ids.insert(id.clone(), path.to_owned()) {
        ctx.error(format!("{path}.id"), format!("provider id {id:?} is already used by {first}; provider ids must be unique across all APIs, telemetry too (the telemetry backend's id defaults to \"telemetry\")"));
        return;
    }
    let mut put = |name: &str, value: String| {
        ctx.env.insert(
            name.to_owned(),
            EnvVarSpec {
                name: name.to_owned(),
                source: EnvSource::Value(value),
            },
        );
    };
    if let Some(endpoint) = &t.endpoint {
        put("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone());
    }
    for (key, value) in t.settings.iter().flatten() {
        let var = match key.as_str() {
            "serviceName" | "service_name" => "OTEL_SERVICE_NAME",
            "protocol" => "OTEL_EXPORTER_OTLP_PROTOCOL",
            "sampler" => "OTEL_TRACES_SAMPLER",
            _ => {
                ctx.warnings.push(format!("{path}.settings.{key}: unknown telemetry setting; known: serviceName, protocol, sampler"));
                continue;
            }
        };
        let text = value
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| value.to_string());
        put(var, text);
    }
    if let Some(SecretValue { secret_key_ref }) = &t.api_key {
        let name = env_name(&id, "api_key");
        ctx.secret_env(name.clone(), secret_key_ref, &format!("{path}.apiKey"));
        // Kubernetes expands $(VAR) from earlier variables of the same container.
        ctx.env.insert(
            "OTEL_EXPORTER_OTLP_HEADERS".into(),
            EnvVarSpec {
                name: "OTEL_EXPORTER_OTLP_HEADERS".into(),
                source: EnvSource::Value(format!("Authorization=Bearer $({name})")),
            },
        );
    }
}

/// The raw `provider_id`s of `api` in the config.
fn raw_ids_of<'c>(config: &'c Map<String, Value>, api: &str) -> impl Iterator<Item = &'c str> {
    config
        .get("providers")
        .and_then(|p| p.get(api))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("provider_id").and_then(Value::as_str))
}

fn ids_of(config: &Map<String, Value>, api: &str) -> Vec<String> {
    raw_ids_of(config, api)
        .map(|id| effective_id(id).to_owned())
        .collect()
}

/// The provider IDs of `api` that do not depend on an environment variable (`${env.X:+id}`).
fn unconditional_ids_of(config: &Map<String, Value>, api: &str) -> Vec<String> {
    raw_ids_of(config, api)
        .filter(|id| !id.starts_with("${"))
        .map(str::to_owned)
        .collect()
}

fn types_of(config: &Map<String, Value>, api: &str) -> Vec<String> {
    config
        .get("providers")
        .and_then(|p| p.get(api))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            p.get("provider_type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// Appends to `registered_resources.<kind>`, replacing entries `same` says are the same.
fn register(
    config: &mut Map<String, Value>,
    kind: &str,
    entry: Value,
    same: impl Fn(&Value) -> bool,
) {
    let resources = config
        .entry("registered_resources")
        .or_insert_with(|| json!({}));
    if !resources.is_object() {
        *resources = json!({});
    }
    if let Value::Object(resources) = resources {
        let list = resources
            .entry(kind.to_owned())
            .or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        if let Value::Array(items) = list {
            items.retain(|existing| !same(existing));
            items.push(entry);
        }
    }
}

/// Tool groups llama-stack 0.7 registers by itself, by the tool-runtime provider types that bring them.
const TOOL_GROUPS: &[(&str, &[&str])] = &[
    (
        "websearch",
        &[
            "remote::brave-search",
            "remote::tavily-search",
            "remote::bing-search",
        ],
    ),
    ("rag", &["inline::file-search"]),
    ("file_search", &["inline::file-search"]),
    ("wolfram_alpha", &["remote::wolfram-alpha"]),
    ("mcp", &["remote::model-context-protocol"]),
];

fn resources(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    config: &mut Map<String, Value>,
) -> usize {
    let Some(res) = &spec.resources else { return 0 };
    let models = models(ctx, spec, res.models.as_deref().unwrap_or_default(), config);
    let shields = shields(ctx, res.shields.as_deref().unwrap_or_default(), config);
    let tools = tool_groups(ctx, res.tools.as_deref().unwrap_or_default(), config);
    models + shields + tools
}

/// Registers the models; returns how many.
fn models(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    models: &[ModelConfigOrString],
    config: &mut Map<String, Value>,
) -> usize {
    let inference_ids = ids_of(config, "inference");
    let first_user_inference = spec
        .providers
        .as_ref()
        .and_then(|p| p.inference.as_ref())
        .and_then(|i| i.items().first())
        .map(|p| p.config_id());
    // Without a provider of the user's, the first of the base config that is always on: one
    // written `${env.X:+id}` exists only when the server's environment sets X, which the
    // operator does not, so a model registered with it would fail the server's start-up.
    let default_provider =
        first_user_inference.or_else(|| unconditional_ids_of(config, "inference").first().cloned());
    let mut count = 0;
    for (i, model) in models.iter().enumerate() {
        let path = format!("spec.resources.models[{i}]");
        let (name, provider, details) = match model {
            NameOrObject::Name(name) => (name.clone(), None, None),
            NameOrObject::Object(m) => (m.name.clone(), m.provider.clone(), Some(m)),
        };
        let provider = match provider.or_else(|| default_provider.clone()) {
            Some(p) if inference_ids.contains(&p) => p,
            Some(p) => {
                ctx.error(
                    format!("{path}.provider"),
                    format!(
                        "no inference provider has id {p:?}; available: {}",
                        inference_ids.join(", ")
                    ),
                );
                continue;
            }
            None => {
                ctx.error(
                    path,
                    "resources.models requires at least one inference provider to be configured",
                );
                continue;
            }
        };
        let Some(entry) = model_entry(ctx, &path, &name, &provider, details) else {
            continue;
        };
        register(config, "models", entry, |m| {
            m.get("model_id").and_then(Value::as_str) == Some(name.as_str())
                && m.get("provider_id").and_then(Value::as_str) == Some(provider.as_str())
        });
        count += 1;
    }
    count
}

/// The `registered_resources.models` entry of one model; `None` (reported) for a bad type.
fn model_entry(
    ctx: &mut Ctx<'_>,
    path: &str,
    name: &str,
    provider: &str,
    details: Option<&ModelConfig>,
) -> Option<Value> {
    let model_type = details
        .and_then(|m| m.model_type.clone())
        .unwrap_or_else(|| "llm".to_owned());
    if !matches!(model_type.as_str(), "llm" | "embedding" | "rerank") {
        ctx.error(
            format!("{path}.modelType"),
            format!("{model_type:?} is not a model type; use llm, embedding or rerank"),
        );
        return None;
    }
    let mut metadata = Map::new();
    if let Some(n) = details.and_then(|m| m.context_length) {
        metadata.insert("context_length".into(), json!(n));
    }
    if let Some(q) = details.and_then(|m| m.quantization.clone()) {
        metadata.insert("quantization".into(), json!(q));
    }
    let mut entry = json!({"model_id": name, "provider_id": provider, "provider_model_id": name, "model_type": model_type});
    if !metadata.is_empty() {
        entry["metadata"] = Value::Object(metadata);
    }
    Some(entry)
}

/// Registers the shields with the first safety provider; returns how many.
fn shields(ctx: &mut Ctx<'_>, shields: &[String], config: &mut Map<String, Value>) -> usize {
    let safety_ids = ids_of(config, "safety");
    let mut count = 0;
    if !shields.is_empty() && !ctx.table.providers.contains_key("safety") {
        let message = format!(
            "{}; shields are served by a safety provider",
            absent_api(ctx.table, "safety")
        );
        ctx.error("spec.resources.shields", message);
        return 0;
    }
    for (i, shield) in shields.iter().enumerate() {
        let Some(provider) = safety_ids.first().cloned() else {
            ctx.error(
                format!("spec.resources.shields[{i}]"),
                "resources.shields requires at least one safety provider to be configured",
            );
            break;
        };
        let entry =
            json!({"shield_id": shield, "provider_id": provider, "provider_shield_id": shield});
        register(config, "shields", entry, |s| {
            s.get("shield_id").and_then(Value::as_str) == Some(shield.as_str())
        });
        count += 1;
    }
    count
}

/// Checks the tool groups against the toolRuntime providers (llama-stack registers them
/// itself); returns how many are served.
fn tool_groups(ctx: &mut Ctx<'_>, tools: &[String], config: &Map<String, Value>) -> usize {
    let tool_types = types_of(config, "tool_runtime");
    let mut count = 0;
    for (i, tool) in tools.iter().enumerate() {
        let path = format!("spec.resources.tools[{i}]");
        if tool_types.is_empty() {
            ctx.error(
                path,
                "resources.tools requires at least one toolRuntime provider to be configured",
            );
            break;
        }
        let group = tool.strip_prefix("builtin::").unwrap_or(tool);
        match TOOL_GROUPS.iter().find(|(g, _)| *g == group) {
            Some((_, types)) if types.iter().any(|t| tool_types.iter().any(|c| c == t)) => count += 1,
            Some((_, types)) => ctx.error(path, format!("tool group {tool:?} needs a toolRuntime provider of type {}; configured: {}", types.join(" or "), tool_types.join(", "))),
            None => ctx.error(path, format!("unknown tool group {tool:?}; llama-stack 0.7 registers {} from the toolRuntime providers", TOOL_GROUPS.iter().map(|(g, _)| *g).collect::<Vec<_>>().join(", "))),
        }
    }
    count
}

fn storage(ctx: &mut Ctx<'_>, spec: &LlamaStackDistributionSpec, config: &mut Map<String, Value>) {
    let Some(storage) = &spec.storage else { return };
    let distro = config
        .get("distro_name")
        .and_then(Value::as_str)
        .unwrap_or("llama-stack")
        .to_owned();
    let home = if ctx.table.line() == ServerLine::Ogx {
        "~/.ogx"
    } else {
        "~/.llama"
    };
    let sqlite_dir = format!("${{env.SQLITE_STORE_DIR:={home}/distributions/{distro}}}");
    let mut backends: Vec<(&str, Value)> = Vec::new();
    if let Some(kv) = &storage.kv
        && let Some(backend) = kv_backend(ctx, kv, &sqlite_dir)
    {
        backends.push(("kv_default", backend));
    }
    if let Some(sql) = &storage.sql
        && let Some(backend) = sql_backend(ctx, sql, &sqlite_dir)
    {
        backends.push(("sql_default", backend));
    }
    let storage = config.entry("storage").or_insert_with(|| json!({}));
    if !storage.is_object() {
        *storage = json!({});
    }
    if let Some(storage) = storage.as_object_mut() {
        let backends_value = storage.entry("backends").or_insert_with(|| json!({}));
        if let Some(map) = backends_value.as_object_mut() {
            for (name, backend) in backends {
                map.insert(name.to_owned(), backend);
            }
        }
    }
}

/// The `kv_default` backend; `None` (reported) when its endpoint is not a URL.
fn kv_backend(ctx: &mut Ctx<'_>, kv: &KvStorageSpec, sqlite_dir: &str) -> Option<Value> {
    match kv.type_ {
        KvStorageType::Sqlite => {
            Some(json!({"type": "kv_sqlite", "db_path": format!("{sqlite_dir}/kvstore.db")}))
        }
        KvStorageType::Redis => {
            let endpoint = kv.endpoint.as_deref().unwrap_or_default();
            if kv.password.is_some() {
                ctx.error("spec.storage.kv.password", "llama-stack 0.7.3's redis backend has no password setting (it would connect without one); use a Redis that needs no password on the cluster network, or sqlite/postgres");
            }
            let Some(url) = parse_url(endpoint) else {
                ctx.error(
                    "spec.storage.kv.endpoint",
                    format!("{endpoint:?} is not a URL like redis://host:6379"),
                );
                return None;
            };
            let port = url.port.and_then(|p| p.parse::<u64>().ok()).unwrap_or(6379);
            Some(json!({"type": "kv_redis", "host": url.host, "port": port}))
        }
    }
}

/// The `sql_default` backend. PostgreSQL takes host, port, db, user and password separately:
/// each is an environment variable read from the `<name>-derived` Secret, which the controller
/// splits from the user's connection string.
fn sql_backend(ctx: &mut Ctx<'_>, sql: &SqlStorageSpec, sqlite_dir: &str) -> Option<Value> {
    match sql.type_ {
        SqlStorageType::Sqlite => {
            Some(json!({"type": "sql_sqlite", "db_path": format!("{sqlite_dir}/sql_store.db")}))
        }
        SqlStorageType::Postgres => {
            let SecretValue { secret_key_ref } = sql.connection_string.as_ref()?;
            let mut backend = Map::new();
            backend.insert("type".into(), json!("sql_postgres"));
            for (key, part) in [
                ("host", UrlPart::Host),
                ("port", UrlPart::Port),
                ("db", UrlPart::Db),
                ("user", UrlPart::User),
                ("password", UrlPart::Password),
            ] {
                let name = env_name("storage_sql", key);
                backend.insert(key.into(), json!(env_ref(&name)));
                let source = EnvSource::SecretUrlPart {
                    secret_key_ref: secret_key_ref.clone(),
                    part,
                };
                ctx.env.insert(name.clone(), EnvVarSpec { name, source });
            }
            // TLS options of the URL, read by the client from its own variables (set only when
            // the URL has them: optional keys of the derived Secret).
            for (part, _, variable) in UrlPart::QUERY_OPTIONS {
                let source = EnvSource::SecretUrlPart {
                    secret_key_ref: secret_key_ref.clone(),
                    part,
                };
                ctx.env.insert(
                    variable.to_owned(),
                    EnvVarSpec {
                        name: variable.to_owned(),
                        source,
                    },
                );
            }
            Some(Value::Object(backend))
        }
    }
}

fn disabled(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    configured: &BTreeSet<String>,
    config: &mut Map<String, Value>,
) -> BTreeSet<String> {
    let mut off = BTreeSet::new();
    for (i, name) in spec.disabled.iter().flatten().enumerate() {
        let path = format!("spec.disabled[{i}]");
        if let Some(why) = apis::removed(name) {
            ctx.warnings.push(format!(
                "{path}: {name:?} does not exist in llama-stack 0.7 or OGX ({why}); nothing to disable"
            ));
            continue;
        }
        let Some(api) = apis::stack_name(name) else {
            ctx.error(path, format!("unknown API {name:?}"));
            continue;
        };
        if !ctx.table.providers.contains_key(api) {
            ctx.warnings.push(format!(
                "{path}: {name:?} does not exist in {}; nothing to disable",
                ctx.table.server_name()
            ));
            continue;
        }
        if configured.contains(api) {
            ctx.error(path, format!("{name} is both configured under spec.providers and disabled; remove one of them"));
            continue;
        }
        off.insert(api.to_owned());
    }
    remove_apis(config, &off);
    off
}

fn remove_apis(config: &mut Map<String, Value>, apis_off: &BTreeSet<String>) {
    if let Some(Value::Object(providers)) = config.get_mut("providers") {
        providers.retain(|api, _| !apis_off.contains(api));
    }
    if let Some(Value::Array(list)) = config.get_mut("apis") {
        list.retain(|a| a.as_str().is_none_or(|a| !apis_off.contains(a)));
    }
}

/// Drops providers whose API dependencies are gone, to a fixpoint, and APIs left empty.
fn prune_dependencies(ctx: &mut Ctx<'_>, config: &mut Map<String, Value>) {
    loop {
        let served: BTreeSet<String> = config
            .get("providers")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .filter(|(_, l)| l.as_array().is_some_and(|l| !l.is_empty()))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut dropped = false;
        if let Some(Value::Object(providers)) = config.get_mut("providers") {
            for (api, list) in providers.iter_mut() {
                let Some(list) = list.as_array_mut() else {
                    continue;
                };
                list.retain(|p| {
                    let ptype = p.get("provider_type").and_then(Value::as_str).unwrap_or_default();
                    let missing: Vec<&String> = ctx
                        .table
                        .get(api, ptype)
                        // Routing-table and internal APIs (models, datasets, tool_groups, …) are
                        // served automatically; only provider-hosting APIs can go missing.
                        .map(|info| {
                            info.api_dependencies
                                .iter()
                                .filter(|d| apis::APIS.iter().any(|(_, n)| n == d) && !served.contains(*d))
                                .collect()
                        })
                        .unwrap_or_default();
                    if missing.is_empty() {
                        return true;
                    }
                    let id = p.get("provider_id").and_then(Value::as_str).map(effective_id).unwrap_or(ptype);
                    ctx.warnings.push(format!("removed {api} provider {id:?} ({ptype}): it needs the {} API, which is no longer served", missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
                    dropped = true;
                    false
                });
            }
            let empty: BTreeSet<String> = providers
                .iter()
                .filter(|(_, l)| l.as_array().is_some_and(Vec::is_empty))
                .map(|(k, _)| k.clone())
                .collect();
            if !empty.is_empty() {
                remove_apis(config, &empty);
            }
        }
        if !dropped {
            return;
        }
    }
}

/// Repairs references to providers that no longer exist (they would stop the server).
fn repair_references(
    ctx: &mut Ctx<'_>,
    config: &mut Map<String, Value>,
    before: &BTreeMap<String, String>,
) {
    let now = base_provider_ids(config);
    // OGX resolves `provider_id: all` at start-up to whichever provider lists the model.
    let wildcard = ctx.table.line() == ServerLine::Ogx;
    let gone = |id: &str| !(now.contains_key(effective_id(id)) || (wildcard && id == "all"));
    // (what was removed, the provider it referred to)
    let mut notes: Vec<(String, String)> = Vec::new();
    if let Some(Value::Object(vs)) = config.get_mut("vector_stores") {
        drop_vector_store_defaults(vs, &gone, &mut notes);
    }
    let removed_shields = match config.get_mut("registered_resources") {
        Some(Value::Object(resources)) => drop_registered_resources(resources, &gone, &mut notes),
        _ => BTreeSet::new(),
    };
    drop_default_shield(config, &removed_shields, &mut notes);
    for (what, provider) in notes {
        let provider = effective_id(&provider);
        let origin = if before.contains_key(provider) {
            "which the spec's providers replaced or disabled"
        } else {
            "which does not exist"
        };
        ctx.warnings.push(format!(
            "removed {what} from the base config: it referred to {provider:?}, {origin}"
        ));
    }
}

/// Drops the vector store defaults whose provider is gone.
fn drop_vector_store_defaults(
    vs: &mut Map<String, Value>,
    gone: &dyn Fn(&str) -> bool,
    notes: &mut Vec<(String, String)>,
) {
    if let Some(id) = vs
        .get("default_provider_id")
        .and_then(Value::as_str)
        .filter(|id| gone(id))
        .map(str::to_owned)
    {
        notes.push(("vector_stores.default_provider_id".to_owned(), id));
        vs.remove("default_provider_id");
    }
    for key in ["default_embedding_model", "default_reranker_model"] {
        if let Some(id) = vs
            .get(key)
            .and_then(|m| m.get("provider_id"))
            .and_then(Value::as_str)
            .filter(|id| gone(id))
            .map(str::to_owned)
        {
            notes.push((format!("vector_stores.{key}"), id));
            vs.remove(key);
        }
    }
}

/// Drops registered resources whose provider is gone; returns the shields dropped.
fn drop_registered_resources(
    resources: &mut Map<String, Value>,
    gone: &dyn Fn(&str) -> bool,
    notes: &mut Vec<(String, String)>,
) -> BTreeSet<String> {
    let mut removed_shields = BTreeSet::new();
    for (kind, list) in resources.iter_mut() {
        let Some(list) = list.as_array_mut() else {
            continue;
        };
        list.retain(|r| {
            let Some(provider) = r.get("provider_id").and_then(Value::as_str) else {
                return true;
            };
            if !gone(provider) {
                return true;
            }
            let id = r
                .as_object()
                .and_then(|o| {
                    o.iter()
                        .find(|(k, _)| k.ends_with("_id") && *k != "provider_id")
                })
                .and_then(|(_, v)| v.as_str())
                .unwrap_or("?");
            if kind == "shields" {
                removed_shields.insert(id.to_owned());
            }
            notes.push((
                format!("registered_resources.{kind} {id:?}"),
                provider.to_owned(),
            ));
            false
        });
    }
    removed_shields
}

/// Drops `safety.default_shield_id` when that shield no longer exists.
fn drop_default_shield(
    config: &mut Map<String, Value>,
    removed_shields: &BTreeSet<String>,
    notes: &mut Vec<(String, String)>,
) {
    let Some(shield) = config
        .get("safety")
        .and_then(|s| s.get("default_shield_id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return;
    };
    let shields_left = config_shield_ids(config);
    if shields_left.contains(&shield) && !removed_shields.contains(&shield) {
        return;
    }
    if let Some(Value::Object(safety)) = config.get_mut("safety") {
        safety.remove("default_shield_id");
    }
    notes.push((
        "safety.default_shield_id".to_owned(),
        format!("shield {shield:?}"),
    ));
}

fn config_shield_ids(config: &Map<String, Value>) -> BTreeSet<String> {
    config
        .get("registered_resources")
        .and_then(|r| r.get("shields"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            s.get("shield_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

fn ensure_apis(config: &mut Map<String, Value>, configured: &BTreeSet<String>) {
    let list = config.entry("apis").or_insert_with(|| json!([]));
    if let Value::Array(list) = list {
        for api in configured {
            if !list.iter().any(|a| a.as_str() == Some(api)) {
                list.push(json!(api));
            }
        }
    }
}

/// A base config from YAML text, when it is one this operator generates from.
pub fn parse_base(base_yaml: &str) -> Result<BaseConfig, GenerateError> {
    parse_base_config(base_yaml.as_bytes(), None, ConfigSource::Embedded).map_err(|e| match e {
        BaseConfigError::UnsupportedVersion { .. } => GenerateError::UnsupportedVersion(e),
        other => GenerateError::BaseConfig(other.to_string()),
    })
}

/// [`generate`] over a base config given as YAML text, parsed first.
pub fn generate_from_yaml(
    spec: &LlamaStackDistributionSpec,
    base_yaml: &str,
    table: &ProviderTable,
) -> Result<GeneratedConfig, GenerateError> {
    generate(spec, &parse_base(base_yaml)?, table)
}

/// Generates the config for a spec over a parsed base config.
pub fn generate(
    spec: &LlamaStackDistributionSpec,
    base: &BaseConfig,
    table: &ProviderTable,
) -> Result<GeneratedConfig, GenerateError> {
    if !base.document.get("providers").is_some_and(Value::is_object) {
        return Err(GenerateError::BaseConfig(
            "it has no providers mapping".to_owned(),
        ));
    }
    let config_version = base.version;
    let before = base_provider_ids(&base.document);
    let mut config = Map::clone(&base.document);
    let mut ctx = Ctx {
        table,
        errors: Vec::new(),
        warnings: Vec::new(),
        env: BTreeMap::new(),
        env_owners: BTreeMap::new(),
    };

    let mut ids = BTreeMap::new();
    let configured = providers(&mut ctx, spec, &mut config, &mut ids);
    telemetry(&mut ctx, spec, &mut ids);
    ensure_apis(&mut config, &configured);
    disabled(&mut ctx, spec, &configured, &mut config);
    prune_dependencies(&mut ctx, &mut config);
    repair_references(&mut ctx, &mut config, &before);
    let resource_count = resources(&mut ctx, spec, &mut config);
    storage(&mut ctx, spec, &mut config);
    let serving = server(
        spec,
        base.server.unwrap_or_else(|| table.release()),
        &mut config,
    );

    if !ctx.errors.is_empty() {
        return Err(GenerateError::Invalid(ctx.errors));
    }
    let provider_count = config
        .get("providers")
        .and_then(Value::as_object)
        .map(|p| p.values().filter_map(Value::as_array).map(Vec::len).sum())
        .unwrap_or(0);
    // Nothing to generate: the distribution's config is used byte for byte.
    let untouched = spec.providers.is_none()
        && spec.resources.is_none()
        && spec.storage.is_none()
        && spec.disabled.is_none()
        && !serving;
    let yaml = if untouched {
        base.yaml.to_string()
    } else {
        serde_saphyr::to_string(&Value::Object(config))
            .map_err(|e| GenerateError::BaseConfig(e.to_string()))?
    };
    let hash = llama_stack_resolver::digest::sha256_hex(yaml.as_bytes());
    Ok(GeneratedConfig {
        yaml,
        hash,
        env: ctx.env.into_values().collect(),
        provider_count,
        resource_count,
        config_version,
        warnings: ctx.warnings,
    })
}
