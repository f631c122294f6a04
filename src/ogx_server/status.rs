//! The status of an `OGXServer` and the model's, each into the other. The OGX operator's names
//! differ in two places (`version.serverVersion` for `version.llamaStackServerVersion`,
//! `externalURL` for `routeURL`), and it records the generation a config was made for in
//! `configGeneration.observedGeneration`; everything else has the same name and shape, so the
//! mapping goes through JSON and nothing the model reports is dropped.

use serde_json::Value;

use crate::api::ogx::OGXServerStatus;
use crate::api::v1alpha2::LlamaStackDistributionStatus;

/// Field renames, model name first: (parent path, model name, OGX name).
const RENAMES: &[(&[&str], &str, &str)] = &[
    (&["version"], "llamaStackServerVersion", "serverVersion"),
    (&[], "routeURL", "externalURL"),
];

/// The model's status as an `OGXServer`'s (an error only for a defect: both types hold the
/// same fields).
pub fn from_model(
    status: &LlamaStackDistributionStatus,
) -> Result<OGXServerStatus, serde_json::Error> {
    let mut json = serde_json::to_value(status)?;
    for (parent, model, ogx) in RENAMES {
        rename(&mut json, parent, model, ogx);
    }
    let generation = json.get("observedGeneration").cloned();
    if let (Some(generation), Some(Value::Object(config))) =
        (generation, json.get_mut("configGeneration"))
    {
        config.insert("observedGeneration".to_owned(), generation);
    }
    for provider in providers_mut(&mut json) {
        complete_for_ogx(provider);
    }
    serde_json::from_value(json)
}

/// The providers' entries in a status as JSON.
fn providers_mut(json: &mut Value) -> impl Iterator<Item = &mut Value> {
    json.pointer_mut("/distributionConfig/providers")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// A provider as the OGX operator's schema requires it (`config`, `health` with its `status` and
/// `message`), what the model leaves out written empty, as that operator's Go types write it: a
/// healthy provider's health has no message (the server's `HealthResponse` for `OK`).
fn complete_for_ogx(provider: &mut Value) {
    let Value::Object(entry) = provider else {
        return;
    };
    entry
        .entry("config")
        .or_insert_with(|| Value::Object(Default::default()));
    let health = entry
        .entry("health")
        .or_insert_with(|| serde_json::json!({"status": ""}));
    if let Value::Object(health) = health {
        health
            .entry("message")
            .or_insert_with(|| Value::String(String::new()));
    }
}

/// A provider of an OGXServer's status as the model holds it, [`complete_for_ogx`] undone: an
/// empty message is none (the model never holds an empty one: the server's are dropped when
/// empty), and a health with neither status nor message is none.
fn as_reported(provider: &mut Value) {
    let Some(Value::Object(health)) = provider.get_mut("health") else {
        return;
    };
    if health.get("message").is_some_and(|m| m == "") {
        health.remove("message");
    }
    let blank = health.get("status").is_none_or(|s| s == "") && health.get("message").is_none();
    if blank && let Value::Object(entry) = provider {
        entry.remove("health");
    }
}

/// An OGXServer's list of providers as the model's, as [`into_model`] reads it (an error only
/// for a defect: both types hold the same fields).
pub fn providers_into_model(
    providers: &[crate::api::ogx::ProviderInfo],
) -> Result<Vec<crate::api::common::ProviderInfo>, serde_json::Error> {
    providers
        .iter()
        .map(|provider| {
            let mut json = serde_json::to_value(provider)?;
            as_reported(&mut json);
            serde_json::from_value(json)
        })
        .collect()
}

/// An `OGXServer`'s status as the model's (what earlier reconciles recorded: the pin, the
/// rollback memory, the conditions the next report starts from). Both types hold the same
/// fields under the names above; `configSource` values the model does not know (the OGX
/// operator's) are read as unknown. A status from the operator's cache comes with what the cache
/// keeps outside its fields ([`carry_cached`]).
pub fn into_model(
    status: &OGXServerStatus,
) -> Result<LlamaStackDistributionStatus, serde_json::Error> {
    let mut json = serde_json::to_value(status)?;
    for (parent, model, ogx) in RENAMES {
        rename(&mut json, parent, ogx, model);
    }
    if let Some(Value::Object(config)) = json.get_mut("configGeneration") {
        config.remove("observedGeneration");
    }
    if let Some(Value::Object(resolved)) = json.get_mut("resolvedDistribution") {
        let known = resolved
            .get("configSource")
            .and_then(Value::as_str)
            .is_some_and(|s| {
                matches!(
                    s,
                    "embedded" | "oci-label" | "override-config" | "config-map" | "image"
                )
            });
        if !known {
            resolved.remove("configSource");
        }
    }
    for provider in providers_mut(&mut json) {
        as_reported(provider);
    }
    let mut model = serde_json::from_value(json)?;
    carry_cached(status, &mut model);
    Ok(model)
}

/// What the operator's cache keeps of `status` outside its serialized fields
/// (`controller::slim_cache::slim_server`), into `model`: the conditions, expanded (a reconcile
/// reads them whole), and the digests standing for the lists of providers and of available
/// distributions (put back from a fresh read before a write, as a stack's are).
fn carry_cached(status: &OGXServerStatus, model: &mut LlamaStackDistributionStatus) {
    if model.conditions.is_none()
        && let Some(compact) = &status.compact_conditions
    {
        model.conditions = Some(compact.expand());
    }
    let Some(cached) = status.distribution_config.as_ref() else {
        return;
    };
    if cached.providers_digest.is_some() || cached.available_digest.is_some() {
        let config = model
            .distribution_config
            .get_or_insert_with(Default::default);
        config.providers_digest = cached.providers_digest;
        config.available_digest = cached.available_digest;
    }
}

fn rename(json: &mut Value, parent: &[&str], from: &str, to: &str) {
    let Some(Value::Object(object)) = parent.iter().try_fold(json, |v, k| v.get_mut(*k)) else {
        return;
    };
    if let Some(value) = object.remove(from) {
        object.insert(to.to_owned(), value);
    }
}
