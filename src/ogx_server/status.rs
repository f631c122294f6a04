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
    serde_json::from_value(json)
}

/// An `OGXServer`'s status as the model's (what earlier reconciles recorded: the pin, the
/// rollback memory, the conditions the next report starts from). Both types hold the same
/// fields under the names above; `configSource` values the model does not know (the OGX
/// operator's) are read as unknown.
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
    serde_json::from_value(json)
}

fn rename(json: &mut Value, parent: &[&str], from: &str, to: &str) {
    let Some(Value::Object(object)) = parent.iter().try_fold(json, |v, k| v.get_mut(*k)) else {
        return;
    };
    if let Some(value) = object.remove(from) {
        object.insert(to.to_owned(), value);
    }
}
