//! Stage 1: the user's providers, replacing the base config's per API, and telemetry.

use super::*;

pub(super) fn resolve_type<'t>(
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

pub(super) fn secret_ref_in(value: &Value) -> Option<Result<SecretKeyRef, String>> {
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
pub(super) struct ProviderDraft<'a> {
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

    /// A vector store's `persistence` (where it keeps its index metadata) nothing set: the kv
    /// store every config has unless it names its backends without it (`kv_default`: the
    /// server's own default when the config says nothing), under a namespace of the provider's
    /// id, as the base configs give their own vector stores.
    fn default_persistence(&mut self, api: &str, id: &str, kv_default: bool) {
        if api == "vector_io"
            && kv_default
            && self.info.required_keys.iter().any(|k| k == PERSISTENCE)
            && !self.config.contains_key(PERSISTENCE)
        {
            self.config.insert(
                PERSISTENCE.to_owned(),
                json!({"backend": KV_DEFAULT, "namespace": format!("vector_io::{id}")}),
            );
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

/// The provider setting naming a store (`{backend, namespace}`) a vector store keeps its
/// metadata in.
const PERSISTENCE: &str = "persistence";
/// The kv backend every config of both lines has by default.
const KV_DEFAULT: &str = "kv_default";

/// Whether `config` has the kv backend [`KV_DEFAULT`]: named in `storage.backends`, or the
/// server's own default storage when the config names no backends (llama-stack 0.7.3 and OGX 1.x
/// both default to a sqlite `kv_default`).
fn has_kv_default(config: &Map<String, Value>) -> bool {
    match config.get("storage").and_then(|s| s.get("backends")) {
        Some(backends) => backends.get(KV_DEFAULT).is_some(),
        None => true,
    }
}

/// One user provider to a config entry, starting from the base config's entry of its type.
/// `kv_default`: whether the config has the default kv backend a vector store's persistence can
/// use.
pub(super) fn build_provider(
    ctx: &mut Ctx<'_>,
    api: &str,
    p: &ProviderConfig,
    path: &str,
    base: &[Value],
    kv_default: bool,
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
    draft.default_persistence(api, &id, kv_default);
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

pub(super) const USER_APIS: &[(&str, &str)] = &[
    ("inference", "inference"),
    ("safety", "safety"),
    ("vectorIo", "vector_io"),
    ("toolRuntime", "tool_runtime"),
    ("responses", "responses"),
    ("batches", "batches"),
    ("files", "files"),
    ("fileProcessors", "file_processors"),
];

/// Why a spec section has no target on this server: its API does not exist there (the
/// `safety` API on OGX 1.x), with the APIs the server does have.
pub(super) fn absent_api(table: &ProviderTable, api: &str) -> String {
    format!(
        "the image runs {}, which has no {api} API (OGX removed safety, eval, datasetio and scoring in 1.0); its APIs: {}. Remove this section, or run an image of a release that has it",
        table.server_name(),
        table.apis().collect::<Vec<_>>().join(", ")
    )
}

/// `ids`: provider id → the spec field that gave it, across every section (telemetry too).
pub(super) fn providers(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    config: &mut Map<String, Value>,
    seen: &mut BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut configured = BTreeSet::new();
    let Some(user) = &spec.providers else {
        return configured;
    };
    // Only `providers` changes below: whether the config has a default kv store holds throughout.
    let kv_default = has_kv_default(config);
    let fields = [
        &user.inference,
        &user.safety,
        &user.vector_io,
        &user.tool_runtime,
        &user.responses,
        &user.batches,
        &user.files,
        &user.file_processors,
    ];
    for ((spec_api, api), field) in USER_APIS.iter().zip(fields) {
        let Some(field) = field else { continue };
        if !ctx.table.providers.contains_key(*api) {
            let message = absent_api(ctx.table, api);
            ctx.error(format!("spec.providers.{spec_api}"), message);
            continue;
        }
        let base: Vec<Value> = providers_of(config, api).cloned().collect();
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
            if let Some((id, entry)) = build_provider(ctx, api, p, &path, &base, kv_default) {
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
pub(super) fn telemetry(
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
