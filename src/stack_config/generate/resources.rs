//! Stage 4: models, shields and tool groups, registered in addition to the base config's.

use super::*;

/// The raw `provider_id`s of `api` in the config.
pub(super) fn raw_ids_of<'c>(
    config: &'c Map<String, Value>,
    api: &str,
) -> impl Iterator<Item = &'c str> {
    providers_of(config, api).filter_map(|p| p.get("provider_id").and_then(Value::as_str))
}

pub(super) fn ids_of(config: &Map<String, Value>, api: &str) -> Vec<String> {
    raw_ids_of(config, api)
        .map(|id| effective_id(id).to_owned())
        .collect()
}

/// The provider IDs of `api` that do not depend on an environment variable (`${env.X:+id}`).
pub(super) fn unconditional_ids_of(config: &Map<String, Value>, api: &str) -> Vec<String> {
    raw_ids_of(config, api)
        .filter(|id| !id.starts_with("${"))
        .map(str::to_owned)
        .collect()
}

pub(super) fn types_of(config: &Map<String, Value>, api: &str) -> Vec<String> {
    providers_of(config, api)
        .filter_map(|p| {
            p.get("provider_type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// Appends to `registered_resources.<kind>`, replacing entries `same` says are the same.
pub(super) fn register(
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
pub(super) const TOOL_GROUPS: &[(&str, &[&str])] = &[
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

pub(super) fn resources(
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

/// Drops the base config's models when the spec lists its own ([`ModelMerge::Replace`]).
pub(super) fn replace_base_models(
    spec: &LlamaStackDistributionSpec,
    config: &mut Map<String, Value>,
) {
    let listed = spec
        .resources
        .as_ref()
        .is_some_and(|r| r.models.as_ref().is_some_and(|m| !m.is_empty()));
    if let (true, Some(Value::Object(resources))) = (listed, config.get_mut("registered_resources"))
    {
        resources.remove("models");
    }
}

/// Registers the models; returns how many.
pub(super) fn models(
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
pub(super) fn model_entry(
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
pub(super) fn shields(
    ctx: &mut Ctx<'_>,
    shields: &[String],
    config: &mut Map<String, Value>,
) -> usize {
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
pub(super) fn tool_groups(
    ctx: &mut Ctx<'_>,
    tools: &[String],
    config: &Map<String, Value>,
) -> usize {
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
