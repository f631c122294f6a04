//! The CRD's structural schema applied as the API server applies it to a create with strict
//! field validation: unknown fields refused while decoding, `null` of non-nullable fields
//! dropped, defaults filled in, then types, bounds, lengths, patterns, enums, required fields
//! and list uniqueness checked. Errors carry the API server's field paths and cause types.
//! Pure: the schema comes from the CRD the operator generates ([`crate::api::crd`]).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

use super::cause::{Cause, CauseType};

/// `metadata` fields the API server decodes (ObjectMeta); any other is an unknown field.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The schema of one property of `schema`, or of any key of a map schema.
fn property<'a>(schema: &'a JSONSchemaProps, key: &str) -> Option<&'a JSONSchemaProps> {
    if let Some(found) = schema.properties.as_ref().and_then(|p| p.get(key)) {
        return Some(found);
    }
    match &schema.additional_properties {
        Some(JSONSchemaPropsOrBool::Schema(s)) => Some(s),
        _ => None,
    }
}

/// The schema of a list's items.
pub(super) fn items(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match &schema.items {
        Some(JSONSchemaPropsOrArray::Schema(s)) => Some(s),
        Some(JSONSchemaPropsOrArray::Schemas(list)) => list.first(),
        None => None,
    }
}

fn preserves_unknown(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_preserve_unknown_fields == Some(true)
}

/// Whether `schema` takes keys it does not list (a map, or unknown fields preserved).
fn open(schema: &JSONSchemaProps) -> bool {
    preserves_unknown(schema)
        || matches!(
            schema.additional_properties,
            Some(JSONSchemaPropsOrBool::Schema(_)) | Some(JSONSchemaPropsOrBool::Bool(true))
        )
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Paths of fields the schema does not declare (what strict decoding refuses), in document
/// order. `root` is the whole object's schema; `metadata` is checked against ObjectMeta.
pub fn unknown_fields(root: &JSONSchemaProps, object: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    let Some(fields) = object.as_object() else {
        return unknown;
    };
    for (key, value) in fields {
        match key.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                for meta_key in value.as_object().into_iter().flat_map(|m| m.keys()) {
                    if !OBJECT_META_FIELDS.contains(&meta_key.as_str()) {
                        unknown.push(format!("metadata.{meta_key}"));
                    }
                }
            }
            _ => match property(root, key) {
                Some(schema) => collect_unknown(schema, value, key, &mut unknown),
                None => unknown.push(key.clone()),
            },
        }
    }
    unknown
}

fn collect_unknown(schema: &JSONSchemaProps, value: &Value, path: &str, out: &mut Vec<String>) {
    if preserves_unknown(schema) && schema.properties.is_none() {
        return;
    }
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                let child_path = join(path, key);
                match property(schema, key) {
                    Some(child_schema) => collect_unknown(child_schema, child, &child_path, out),
                    None if open(schema) => {}
                    None => out.push(child_path),
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for (i, item) in list.iter().enumerate() {
                    collect_unknown(item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// Drops `null` where the schema does not allow it and fills in defaults, as the API server
/// does before validating.
pub fn prune_nulls_and_default(schema: &JSONSchemaProps, value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.retain(|key, child| {
                !child.is_null() || property(schema, key).is_some_and(|s| s.nullable == Some(true))
            });
            if let Some(properties) = &schema.properties {
                for (key, child_schema) in properties {
                    if let (false, Some(default)) =
                        (fields.contains_key(key), &child_schema.default)
                    {
                        fields.insert(key.clone(), default.0.clone());
                    }
                }
            }
            for (key, child) in fields.iter_mut() {
                if let Some(child_schema) = property(schema, key) {
                    prune_nulls_and_default(child_schema, child);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for item in list.iter_mut() {
                    prune_nulls_and_default(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// Every schema error of `value` at `path`.
pub fn check(schema: &JSONSchemaProps, value: &Value, path: &str, out: &mut Vec<Cause>) {
    if value.is_null() {
        if schema.nullable != Some(true) {
            out.push(Cause::new(
                CauseType::TypeInvalid,
                path,
                format!(
                    "Invalid value: \"null\": {path} in body must be of type {}: \"null\"",
                    type_name(schema)
                ),
            ));
        }
        return;
    }
    if !type_matches(schema, value) {
        out.push(Cause::new(
            CauseType::TypeInvalid,
            path,
            format!(
                "Invalid value: \"{}\": {path} in body must be of type {}: \"{}\"",
                json_type(value),
                type_name(schema),
                json_type(value)
            ),
        ));
        return;
    }
    check_enum(schema, value, path, out);
    match value {
        Value::Object(fields) => check_object(schema, fields, path, out),
        Value::Array(list) => check_array(schema, list, path, out),
        Value::String(text) => check_string(schema, text, path, out),
        Value::Number(number) => check_number(schema, number, path, out),
        _ => {}
    }
}

fn check_object(
    schema: &JSONSchemaProps,
    fields: &serde_json::Map<String, Value>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    for required in schema.required.iter().flatten() {
        if !fields.contains_key(required) {
            out.push(Cause::new(
                CauseType::Required,
                &join(path, required),
                "Required value".to_owned(),
            ));
        }
    }
    if let Some(max) = schema.max_properties
        && fields.len() as i64 > max
    {
        out.push(Cause::new(
            CauseType::TooMany,
            path,
            format!("Too many: {}: must have at most {max} items", fields.len()),
        ));
    }
    for (key, child) in fields {
        if let Some(child_schema) = property(schema, key) {
            check(child_schema, child, &join(path, key), out);
        }
    }
}

fn check_array(schema: &JSONSchemaProps, list: &[Value], path: &str, out: &mut Vec<Cause>) {
    if let Some(max) = schema.max_items
        && list.len() as i64 > max
    {
        out.push(Cause::new(
            CauseType::TooMany,
            path,
            format!("Too many: {}: must have at most {max} items", list.len()),
        ));
    }
    if let Some(min) = schema.min_items
        && (list.len() as i64) < min
    {
        out.push(Cause::new(
            CauseType::Invalid,
            path,
            format!(
                "Invalid value: {}: {path} in body should have at least {min} items",
                list.len()
            ),
        ));
    }
    if let Some(item_schema) = items(schema) {
        for (i, item) in list.iter().enumerate() {
            check(item_schema, item, &format!("{path}[{i}]"), out);
        }
    }
    check_list_uniqueness(schema, list, path, out);
}

/// `x-kubernetes-list-type: set` (no value twice) and `map` (no key tuple twice).
fn check_list_uniqueness(
    schema: &JSONSchemaProps,
    list: &[Value],
    path: &str,
    out: &mut Vec<Cause>,
) {
    let keys: Vec<String> = match schema.x_kubernetes_list_type.as_deref() {
        Some("set") => list.iter().map(Value::to_string).collect(),
        Some("map") => {
            let names = schema
                .x_kubernetes_list_map_keys
                .clone()
                .unwrap_or_default();
            list.iter()
                .map(|item| {
                    let tuple: BTreeMap<&str, &Value> = names
                        .iter()
                        .filter_map(|n| item.get(n).map(|v| (n.as_str(), v)))
                        .collect();
                    serde_json::to_string(&tuple).unwrap_or_default()
                })
                .collect()
        }
        _ => return,
    };
    let mut seen = HashSet::new();
    for (i, key) in keys.iter().enumerate() {
        if !seen.insert(key) {
            let shown = match schema.x_kubernetes_list_type.as_deref() {
                Some("set") => list[i].to_string(),
                _ => format!("map[{}]", key.trim_matches(['{', '}']).replace('"', "")),
            };
            out.push(Cause::new(
                CauseType::Duplicate,
                &format!("{path}[{i}]"),
                format!("Duplicate value: {shown}"),
            ));
        }
    }
}

fn check_string(schema: &JSONSchemaProps, text: &str, path: &str, out: &mut Vec<Cause>) {
    // Of the formats the API server enforces, the CRD uses only date-time (int32 and int64 it
    // does not enforce).
    if schema.format.as_deref() == Some("date-time") && text.parse::<jiff::Timestamp>().is_err() {
        out.push(Cause::new(
            CauseType::TypeInvalid,
            path,
            format!(
                "Invalid value: \"{text}\": {path} in body must be of type date-time: \"{text}\""
            ),
        ));
    }
    let length = text.chars().count() as i64;
    if let Some(max) = schema.max_length
        && length > max
    {
        out.push(Cause::new(
            CauseType::TooLong,
            path,
            format!("Too long: may not be more than {max} bytes"),
        ));
    }
    if let Some(min) = schema.min_length
        && length < min
    {
        out.push(Cause::new(
            CauseType::Invalid,
            path,
            format!(
                "Invalid value: \"{text}\": {path} in body should be at least {min} chars long"
            ),
        ));
    }
    if let Some(pattern) = &schema.pattern {
        // A pattern that does not compile here admits nothing: the check fails closed.
        let refusal = match regex::Regex::new(pattern) {
            Ok(re) if re.is_match(text) => None,
            Ok(_) => Some(format!(
                "Invalid value: \"{text}\": {path} in body should match '{pattern}'"
            )),
            Err(error) => Some(format!(
                "Invalid value: \"{text}\": the schema's pattern '{pattern}' for {path} cannot be checked here ({error}); the value is refused rather than admitted unchecked"
            )),
        };
        if let Some(message) = refusal {
            out.push(Cause::new(CauseType::Invalid, path, message));
        }
    }
}

fn check_number(
    schema: &JSONSchemaProps,
    number: &serde_json::Number,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let Some(n) = number.as_f64() else {
        return;
    };
    let shown = number.to_string();
    // (limit, exclusive, the side of the limit that breaks it, the relation the value must have)
    let bounds = [
        (
            schema.minimum,
            schema.exclusive_minimum,
            Ordering::Less,
            "greater than",
        ),
        (
            schema.maximum,
            schema.exclusive_maximum,
            Ordering::Greater,
            "less than",
        ),
    ];
    for (limit, exclusive, outside, relation) in bounds {
        let Some(limit) = limit else {
            continue;
        };
        let exclusive = exclusive == Some(true);
        let side = n.partial_cmp(&limit);
        if side == Some(outside) || (exclusive && side == Some(Ordering::Equal)) {
            let relation = if exclusive {
                relation.to_owned()
            } else {
                format!("{relation} or equal to")
            };
            out.push(Cause::new(
                CauseType::Invalid,
                path,
                format!(
                    "Invalid value: {shown}: {path} in body should be {relation} {}",
                    number_text(limit)
                ),
            ));
        }
    }
}

fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

fn check_enum(schema: &JSONSchemaProps, value: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(allowed) = &schema.enum_ else {
        return;
    };
    if allowed.iter().any(|a| &a.0 == value) {
        return;
    }
    let supported: Vec<String> = allowed.iter().map(|a| a.0.to_string()).collect();
    out.push(Cause::new(
        CauseType::NotSupported,
        path,
        format!(
            "Unsupported value: {value}: supported values: {}",
            supported.join(", ")
        ),
    ));
}

fn type_matches(schema: &JSONSchemaProps, value: &Value) -> bool {
    if schema.x_kubernetes_int_or_string == Some(true) {
        return value.is_string() || value.as_f64().is_some_and(|n| n.fract() == 0.0);
    }
    match schema.type_.as_deref() {
        None | Some("") => true,
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some(_) => true,
    }
}

fn type_name(schema: &JSONSchemaProps) -> String {
    if schema.x_kubernetes_int_or_string == Some(true) {
        return "integer,string".to_owned();
    }
    schema.type_.clone().unwrap_or_default()
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn string_with_pattern(pattern: &str) -> JSONSchemaProps {
        JSONSchemaProps {
            type_: Some("string".to_owned()),
            pattern: Some(pattern.to_owned()),
            ..JSONSchemaProps::default()
        }
    }

    #[test]
    fn a_pattern_is_checked_and_one_that_does_not_compile_admits_nothing() {
        let mut out = Vec::new();
        check(
            &string_with_pattern("^[a-z]+$"),
            &json!("abc"),
            "spec.x",
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
        check(
            &string_with_pattern("^[a-z]+$"),
            &json!("ABC"),
            "spec.x",
            &mut out,
        );
        assert_eq!(out.len(), 1);
        out.clear();
        check(
            &string_with_pattern("(unclosed"),
            &json!("abc"),
            "spec.x",
            &mut out,
        );
        assert_eq!(
            out.len(),
            1,
            "an uncompilable pattern must refuse, not admit"
        );
        assert_eq!(out[0].field, "spec.x");
        assert!(
            out[0].message.contains("cannot be checked here"),
            "{}",
            out[0].message
        );
    }
}
