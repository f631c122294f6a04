//! Stages 2 and 3: APIs turned off (with their providers and dependants), and the references the
//! changes left dangling repaired.

use super::*;

pub(super) fn disabled(
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
        if let Some(api) = apis::route_only(name) {
            // Taken out of `apis` as the OGX operator does, but both servers add it back.
            ctx.warnings.push(format!(
                "{path}: {name:?} leaves the config's apis, but {} serves it with every config (it adds it itself)",
                ctx.release.describe()
            ));
            off.insert(api.to_owned());
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

pub(super) fn remove_apis(config: &mut Map<String, Value>, apis_off: &BTreeSet<String>) {
    if let Some(Value::Object(providers)) = config.get_mut("providers") {
        providers.retain(|api, _| !apis_off.contains(api));
    }
    if let Some(Value::Array(list)) = config.get_mut("apis") {
        list.retain(|a| a.as_str().is_none_or(|a| !apis_off.contains(a)));
    }
}

/// Drops providers whose API dependencies are gone, to a fixpoint, and APIs left empty.
pub(super) fn prune_dependencies(ctx: &mut Ctx<'_>, config: &mut Map<String, Value>) {
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
pub(super) fn repair_references(
    ctx: &mut Ctx<'_>,
    config: &mut Map<String, Value>,
    before: &BTreeMap<String, String>,
) {
    let now = base_provider_ids(config);
    // OGX resolves `provider_id: all` at start-up to whichever provider lists the model.
    let wildcard = ctx.table.line() == ServerLine::Ogx;
    // A reference that is empty unless a variable is set names no provider until it is.
    let gone = |id: &str| {
        let id = effective_id(id);
        !(id.is_empty() || now.contains_key(id) || (wildcard && id == "all"))
    };
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
pub(super) fn drop_vector_store_defaults(
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
pub(super) fn drop_registered_resources(
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
pub(super) fn drop_default_shield(
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

pub(super) fn config_shield_ids(config: &Map<String, Value>) -> BTreeSet<String> {
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

pub(super) fn ensure_apis(config: &mut Map<String, Value>, configured: &BTreeSet<String>) {
    let list = config.entry("apis").or_insert_with(|| json!([]));
    if let Value::Array(list) = list {
        for api in configured {
            if !list.iter().any(|a| a.as_str() == Some(api)) {
                list.push(json!(api));
            }
        }
    }
}
