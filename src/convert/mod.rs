//! Lossless conversion between `llamastack.io/v1alpha1` and `llamastack.io/v1alpha2` (the hub),
//! on JSON trees so that nothing the types do not know is dropped.
//!
//! Fields map one to one where both versions have them (`FIELD_MAP`). What one version cannot represent travels in
//! an annotation of the other: `llamastack.io/v1alpha2-fields` on v1alpha1 objects (providers,
//! resources, storage, disabled, TLS serving, the object form of `expose`, generation status),
//! `llamastack.io/v1alpha1-fields` on v1alpha2 objects (container name, `userConfig`'s namespace).
//! Both also record which emptied wrapper objects existed, so `containerSpec: {}` survives a
//! round trip. The annotation is consumed (removed) when the object is converted back.

use serde_json::{Map, Value, json};

/// Annotation on v1alpha1 objects holding what only v1alpha2 can express.
pub const V1ALPHA2_FIELDS: &str = "llamastack.io/v1alpha2-fields";
/// Annotation on v1alpha2 objects holding what only v1alpha1 can express.
pub const V1ALPHA1_FIELDS: &str = "llamastack.io/v1alpha1-fields";

const V1: &str = "llamastack.io/v1alpha1";
const V2: &str = "llamastack.io/v1alpha2";

/// Why an object cannot be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// Not an object with apiVersion llamastack.io/v1alpha1 or v1alpha2.
    #[error("not a LlamaStackDistribution of llamastack.io/v1alpha1 or v1alpha2: {0}")]
    NotAnLlsd(String),
    /// The carried annotation is not valid.
    #[error("annotation {annotation} is not valid JSON of the expected shape: {detail}")]
    BadAnnotation {
        /// The annotation key.
        annotation: &'static str,
        /// Why.
        detail: String,
    },
}

/// Converts an object to `desired` (`llamastack.io/v1alpha1` or `llamastack.io/v1alpha2`).
pub fn convert(object: &Value, desired: &str) -> Result<Value, ConvertError> {
    let from = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !object.is_object() || !matches!(from, V1 | V2) {
        return Err(ConvertError::NotAnLlsd(format!("apiVersion {from:?}")));
    }
    match (from, desired) {
        (a, b) if a == b => Ok(object.clone()),
        (V1, V2) => to_v1alpha2(object),
        (V2, V1) => to_v1alpha1(object),
        (_, other) => Err(ConvertError::NotAnLlsd(format!(
            "cannot convert to {other:?}"
        ))),
    }
}

// --- small tree helpers -------------------------------------------------------------------

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

/// Removes and returns the value at `path`.
fn take(v: &mut Value, path: &[&str]) -> Option<Value> {
    let (last, parents) = path.split_last()?;
    let mut cur = v;
    for k in parents {
        cur = cur.get_mut(*k)?;
    }
    cur.as_object_mut()?.remove(*last)
}

/// Sets `path` to `value`, creating objects on the way.
fn put(v: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        if !cur.get(*k).is_some_and(Value::is_object)
            && let Some(obj) = cur.as_object_mut()
        {
            obj.insert((*k).to_owned(), json!({}));
        }
        let Some(next) = cur.get_mut(*k) else { return };
        cur = next;
    }
    if let Some(obj) = cur.as_object_mut() {
        obj.insert((*last).to_owned(), value);
    }
}

/// Moves `from` in `src` to `to` in `dst`, if present.
fn mv(src: &mut Value, from: &[&str], dst: &mut Value, to: &[&str]) {
    if let Some(value) = take(src, from) {
        put(dst, to, value);
    }
}

/// Deep-merges `extra` into `target` (objects merge, everything else replaces).
fn merge_into(target: &mut Value, extra: &Value) {
    match (target.as_object_mut(), extra.as_object()) {
        (Some(t), Some(e)) => {
            for (k, v) in e {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        merge_into(existing, v)
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        _ => *target = extra.clone(),
    }
}

/// Removes objects that are empty (or became empty after their fields moved), recursively.
fn prune_empty(v: &mut Value) {
    if let Some(obj) = v.as_object_mut() {
        for child in obj.values_mut() {
            prune_empty(child);
        }
        obj.retain(|_, child| !is_empty_object(Some(child)));
    }
}

fn is_empty_object(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_some_and(Map::is_empty)
}

/// Records the path (as segments) of every empty object in the source spec: moving fields out of
/// wrappers and pruning what is left would otherwise lose `{}` values the user wrote.
fn note_empty(src: &Value, prefix: &mut Vec<String>, present: &mut Vec<Value>) {
    let Some(obj) = src.as_object() else { return };
    if obj.is_empty() && !prefix.is_empty() {
        present.push(json!(prefix.clone()));
    }
    for (k, child) in obj {
        prefix.push(k.clone());
        note_empty(child, prefix, present);
        prefix.pop();
    }
}

/// Of the empty objects noted before the moves, those still in the leftover tree: the moves
/// carried the others (with their emptiness) to the target layout.
fn keep_lost(leftover: &Value, noted: Vec<Value>, present: &mut Vec<Value>) {
    for path in noted {
        let parts: Vec<&str> = path
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if get(leftover, &parts).is_some() {
            present.push(path.clone());
        }
    }
}

fn restore_empty(dst: &mut Value, present: Option<&Value>) {
    for path in present.and_then(Value::as_array).into_iter().flatten() {
        let parts: Vec<&str> = path
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !parts.is_empty() && get(dst, &parts).is_none() {
            put(dst, &parts, json!({}));
        }
    }
}

fn read_annotation(obj: &mut Value, key: &'static str) -> Result<Option<Value>, ConvertError> {
    let Some(text) = take(obj, &["metadata", "annotations", key]) else {
        return Ok(None);
    };
    if is_empty_object(get(obj, &["metadata", "annotations"])) {
        take(obj, &["metadata", "annotations"]);
    }
    let text = text.as_str().ok_or_else(|| ConvertError::BadAnnotation {
        annotation: key,
        detail: "not a string".into(),
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| ConvertError::BadAnnotation {
        annotation: key,
        detail: e.to_string(),
    })?;
    if !value.is_object() {
        return Err(ConvertError::BadAnnotation {
            annotation: key,
            detail: "not an object".into(),
        });
    }
    Ok(Some(value))
}

fn write_annotation(obj: &mut Value, key: &str, carried: Value) {
    if carried.as_object().is_some_and(Map::is_empty) {
        return;
    }
    put(
        obj,
        &["metadata", "annotations", key],
        Value::String(carried.to_string()),
    );
}

/// Copies everything but apiVersion, spec and status.
fn shell(object: &Value, api_version: &str) -> Value {
    let mut out = object.clone();
    if let Some(o) = out.as_object_mut() {
        o.remove("spec");
        o.remove("status");
        o.insert("apiVersion".into(), json!(api_version));
    }
    out
}

const STATUS_SHARED: &[&str] = &[
    "phase",
    "observedGeneration",
    "conditions",
    "externalProviders",
    "version",
    "distributionConfig",
    "availableReplicas",
    "serviceURL",
    "routeURL",
];
const STATUS_V2_ONLY: &[&str] = &["resolvedDistribution", "configGeneration"];

// --- v1alpha1 -> v1alpha2 -----------------------------------------------------------------

/// Fields with a home in both versions: (v1alpha1 path, v1alpha2 path), used in both directions.
/// (`exposeRoute` is mapped apart: only the boolean form of `expose` exists in v1alpha1.)
const FIELD_MAP: &[(&[&str], &[&str])] = &[
    (&["replicas"], &["workload", "replicas"]),
    (&["server", "distribution"], &["distribution"]),
    (
        &["server", "containerSpec", "port"],
        &["networking", "port"],
    ),
    (
        &["server", "containerSpec", "resources"],
        &["workload", "resources"],
    ),
    (
        &["server", "containerSpec", "env"],
        &["workload", "overrides", "env"],
    ),
    (
        &["server", "containerSpec", "command"],
        &["workload", "overrides", "command"],
    ),
    (
        &["server", "containerSpec", "args"],
        &["workload", "overrides", "args"],
    ),
    (&["server", "workers"], &["workload", "workers"]),
    (
        &["server", "podOverrides", "serviceAccountName"],
        &["workload", "overrides", "serviceAccountName"],
    ),
    (
        &["server", "podOverrides", "terminationGracePeriodSeconds"],
        &["workload", "overrides", "terminationGracePeriodSeconds"],
    ),
    (
        &["server", "podOverrides", "volumes"],
        &["workload", "overrides", "volumes"],
    ),
    (
        &["server", "podOverrides", "volumeMounts"],
        &["workload", "overrides", "volumeMounts"],
    ),
    (
        &["server", "podDisruptionBudget"],
        &["workload", "podDisruptionBudget"],
    ),
    (
        &["server", "topologySpreadConstraints"],
        &["workload", "topologySpreadConstraints"],
    ),
    (&["server", "autoscaling"], &["workload", "autoscaling"]),
    (&["server", "rollback"], &["workload", "rollback"]),
    (&["server", "storage"], &["workload", "storage"]),
    (
        &["server", "userConfig", "configMapName"],
        &["overrideConfig", "configMapName"],
    ),
    (
        &["server", "tlsConfig", "caBundle"],
        &["networking", "tls", "caBundle"],
    ),
    (&["server", "externalProviders"], &["externalProviders"]),
    (&["network", "allowedFrom"], &["networking", "allowedFrom"]),
];

fn to_v1alpha2(object: &Value) -> Result<Value, ConvertError> {
    let mut src = object.clone();
    let carried_v2 = read_annotation(&mut src, V1ALPHA2_FIELDS)?;
    let mut out = shell(&src, V2);
    let mut spec = json!({});
    let mut extra = json!({});
    let mut present = Vec::new();
    let mut s = src.get("spec").cloned().unwrap_or_else(|| json!({}));
    note_empty(&s, &mut Vec::new(), &mut present);
    let noted = present.clone();
    present.clear();

    for (v1, v2) in FIELD_MAP {
        mv(&mut s, v1, &mut spec, v2);
    }
    mv(
        &mut s,
        &["server", "containerSpec", "name"],
        &mut extra,
        &["containerName"],
    );
    mv(
        &mut s,
        &["server", "userConfig", "configMapNamespace"],
        &mut extra,
        &["userConfigNamespace"],
    );
    mv(
        &mut s,
        &["network", "exposeRoute"],
        &mut spec,
        &["networking", "expose"],
    );
    keep_lost(&s, noted, &mut present);
    // Anything left has no v1alpha2 home: carry it.
    prune_empty(&mut s);
    if !is_empty_object(Some(&s)) {
        extra["rest"] = s;
    }

    if let Some(carried) = &carried_v2 {
        if let Some(carried_spec) = carried.get("spec") {
            merge_into(&mut spec, carried_spec);
        }
        restore_empty(&mut spec, carried.get("present"));
    }
    if !present.is_empty() {
        extra["present"] = Value::Array(present);
    }
    if src.get("spec").is_some() || !is_empty_object(Some(&spec)) {
        out["spec"] = spec;
    }
    if let Some(mut status) = src.get("status").cloned() {
        if let Some(carried_status) = carried_v2.as_ref().and_then(|c| c.get("status")) {
            merge_into(&mut status, carried_status);
        }
        out["status"] = status;
    }
    write_annotation(&mut out, V1ALPHA1_FIELDS, extra);
    Ok(out)
}

// --- v1alpha2 -> v1alpha1 -----------------------------------------------------------------

fn to_v1alpha1(object: &Value) -> Result<Value, ConvertError> {
    let mut src = object.clone();
    let carried_v1 = read_annotation(&mut src, V1ALPHA1_FIELDS)?;
    let mut out = shell(&src, V1);
    let mut spec = json!({});
    let mut carried_spec = json!({});
    let mut present = Vec::new();
    let mut s = src.get("spec").cloned().unwrap_or_else(|| json!({}));
    note_empty(&s, &mut Vec::new(), &mut present);
    let noted = present.clone();
    present.clear();

    for (v1, v2) in FIELD_MAP {
        mv(&mut s, v2, &mut spec, v1);
    }
    // `expose: true|false` is v1alpha1's exposeRoute; the object form only exists in v1alpha2.
    if get(&s, &["networking", "expose"]).is_some_and(Value::is_boolean) {
        mv(
            &mut s,
            &["networking", "expose"],
            &mut spec,
            &["network", "exposeRoute"],
        );
    }
    keep_lost(&s, noted, &mut present);
    // Everything left in the v1alpha2 spec has no v1alpha1 home: carry it.
    prune_empty(&mut s);
    if !is_empty_object(Some(&s)) {
        carried_spec = s;
    }

    if let Some(carried) = &carried_v1 {
        restore_v1alpha1_fields(&mut spec, carried);
    }
    let mut carried = json!({});
    if !is_empty_object(Some(&carried_spec)) {
        carried["spec"] = carried_spec;
    }
    if !present.is_empty() {
        carried["present"] = Value::Array(present);
    }
    if src.get("spec").is_some() || !is_empty_object(Some(&spec)) {
        out["spec"] = spec;
    }
    if let Some(status) = src.get("status").and_then(Value::as_object) {
        let (v1_status, v2_only) = split_status(status);
        out["status"] = Value::Object(v1_status);
        if !v2_only.is_empty() {
            carried["status"] = Value::Object(v2_only);
        }
    }
    write_annotation(&mut out, V1ALPHA2_FIELDS, carried);
    Ok(out)
}

/// Puts back the v1alpha1 fields an earlier conversion to v1alpha2 carried in its annotation.
fn restore_v1alpha1_fields(spec: &mut Value, carried: &Value) {
    if let Some(name) = carried.get("containerName") {
        put(spec, &["server", "containerSpec", "name"], name.clone());
    }
    if let Some(ns) = carried.get("userConfigNamespace") {
        put(
            spec,
            &["server", "userConfig", "configMapNamespace"],
            ns.clone(),
        );
    }
    if let Some(rest) = carried.get("rest") {
        merge_into(spec, rest);
    }
    restore_empty(spec, carried.get("present"));
}

/// The status fields v1alpha1 has, and the rest (carried in the annotation).
fn split_status(status: &Map<String, Value>) -> (Map<String, Value>, Map<String, Value>) {
    let mut v1_status = Map::new();
    let mut v2_only = Map::new();
    for (k, v) in status {
        let shared = STATUS_SHARED.contains(&k.as_str()) && !STATUS_V2_ONLY.contains(&k.as_str());
        let side = if shared { &mut v1_status } else { &mut v2_only };
        side.insert(k.clone(), v.clone());
    }
    (v1_status, v2_only)
}

#[cfg(test)]
mod tests;
