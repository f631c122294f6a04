//! Schema helpers for the parts of the CRD that derives cannot express on their own: free-form
//! maps, polymorphic fields and list semantics.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::Value;

/// A free-form object: the API server keeps every key (no pruning) but still requires an object.
pub fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A node whose type depends on what the user wrote (object or list, string or object, bool or
/// object). A structural CRD schema cannot declare a union, so the node is left untyped and kept
/// as written. Its shape is checked by the admission webhook, not by the API server: CEL sees no
/// declared type here, so no rule can refer to it (proved in `tests/apiserver/`).
pub fn polymorphic(description: &str) -> Schema {
    json_schema!({
        "description": description,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Marks a list of scalars as a set: the API server rejects duplicate items and server-side
/// apply merges items instead of replacing the whole list.
pub fn list_set(schema: &mut Schema) {
    schema.insert("x-kubernetes-list-type".into(), Value::from("set"));
}

/// Marks a list of objects as a map keyed by `providerId`: duplicate IDs are rejected by the API
/// server, and server-side apply merges entries per ID.
pub fn list_map_by_provider_id(schema: &mut Schema) {
    schema.insert("x-kubernetes-list-type".into(), Value::from("map"));
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        Value::from(vec!["providerId"]),
    );
}

/// Items of `spec.disabled`: short strings, each checked against the known API names.
pub fn disabled_items(schema: &mut Schema) {
    let (rule, message) = super::apis::disabled_item_rule();
    if let Some(Value::Object(items)) = schema.get_mut("items") {
        items.insert("maxLength".into(), Value::from(32));
        items.insert(
            "x-kubernetes-validations".into(),
            serde_json::json!([{
                "rule": rule,
                "messageExpression": message,
                "reason": "FieldValueInvalid",
            }]),
        );
    }
}
