//! What every owned object shares: the field manager and annotations, the name, labels, owner
//! and metadata, and the checked conversion of a builder's JSON to its typed object with the
//! hash of what the operator wants.

use std::collections::BTreeMap;

use kube::Resource;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::names::labels;
use crate::controller::stack::Stack;

/// Field manager of every apply.
pub const FIELD_MANAGER: &str = "llama-stack-operator";
/// Pod-template annotation carrying the generated config's hash (a change rolls the Pods).
pub const CONFIG_HASH: &str = "llamastack.io/config-hash";
/// Pod-template annotation carrying the hash of the referenced Secret values (a change rolls).
pub const SECRETS_HASH: &str = "llamastack.io/secrets-hash";
/// Pod-template annotation carrying the hash of the managed CA bundle (a change rolls).
pub const CA_BUNDLE_HASH: &str = "llamastack.io/ca-bundle-hash";
/// Annotation carrying the hash of everything the operator applied to an object.
pub const DESIRED_HASH: &str = "llamastack.io/desired-hash";

/// Why an owned object could not be built. Always a bug in a builder, never the user's input.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The built JSON is not a valid object of its kind.
    #[error("cannot build the {kind}")]
    Invalid {
        /// Kind of the object.
        kind: &'static str,
        /// Cause.
        source: serde_json::Error,
    },
    /// The builder set a field the object's type does not have (a misspelt key), which the
    /// conversion to the typed object would otherwise drop without a word.
    #[error("the {kind} builder set {path}, which a {kind} does not have")]
    UnknownField {
        /// Kind of the object.
        kind: &'static str,
        /// JSON path of the field.
        path: String,
    },
}

/// The labels of every owned object.
pub(super) fn common_labels(stack: &Stack) -> BTreeMap<String, String> {
    let mut labels = selector_labels(stack);
    labels.insert(labels::MANAGED_BY.to_owned(), FIELD_MANAGER.to_owned());
    labels
}

/// The labels that select the server Pods.
pub(super) fn selector_labels(stack: &Stack) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::NAME.to_owned(), labels::APP.to_owned()),
        (labels::INSTANCE.to_owned(), stack.name.to_owned()),
    ])
}

pub(super) fn selector(stack: &Stack) -> Value {
    json!(selector_labels(stack))
}

/// The label selector of everything the operator made for the resource named `name`.
pub fn owned_by_selector(name: &str) -> String {
    format!(
        "{}={name},{}={FIELD_MANAGER}",
        labels::INSTANCE,
        labels::MANAGED_BY
    )
}

/// The controller owner reference; none for an object not yet stored (no uid, e.g. `render`).
pub(super) fn owners(stack: &Stack) -> Value {
    Value::Array(
        stack
            .owner
            .as_ref()
            .and_then(|o| serde_json::to_value(o).ok())
            .into_iter()
            .collect(),
    )
}

/// Standard metadata of an owned object.
pub(super) fn metadata(stack: &Stack, name: &str) -> Value {
    json!({"name": name, "namespace": Some(stack.namespace).filter(|ns| !ns.is_empty()), "labels": common_labels(stack), "ownerReferences": owners(stack)})
}

/// Converts the builder's JSON to the typed object, refusing any field the type would drop.
pub(super) fn typed<K>(kind: &'static str, object: Value) -> Result<K, BuildError>
where
    K: DeserializeOwned + serde::Serialize,
{
    let invalid = |source| BuildError::Invalid { kind, source };
    let typed: K = serde_json::from_value(object.clone()).map_err(invalid)?;
    let kept = serde_json::to_value(&typed).map_err(invalid)?;
    match dropped_field(&object, &kept, "") {
        Some(path) => Err(BuildError::UnknownField { kind, path }),
        None => Ok(typed),
    }
}

/// The path of the first field set (not null) in `built` that is missing from `kept`.
pub(super) fn dropped_field(built: &Value, kept: &Value, path: &str) -> Option<String> {
    match (built, kept) {
        (Value::Object(built), Value::Object(kept)) => built.iter().find_map(|(key, value)| {
            let here = format!("{path}.{key}");
            match kept.get(key) {
                _ if value.is_null() => None,
                None => Some(here),
                Some(kept) => dropped_field(value, kept, &here),
            }
        }),
        (Value::Array(built), Value::Array(kept)) => built
            .iter()
            .zip(kept)
            .enumerate()
            .find_map(|(i, (b, k))| dropped_field(b, k, &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// The typed object (checked by [`typed`]) with [`DESIRED_HASH`].
pub(super) fn stamped<K>(object: Value) -> Result<K, BuildError>
where
    K: DeserializeOwned + serde::Serialize + Resource<DynamicType = ()>,
{
    let kind = match K::kind(&()) {
        std::borrow::Cow::Borrowed(kind) => kind,
        std::borrow::Cow::Owned(_) => "object",
    };
    stamp(kind, typed(kind, object)?)
}

/// Adds [`DESIRED_HASH`]: the hash of the object's canonical form (the typed serialization,
/// whose maps are sorted), so equal content always hashes equal, whatever order the builder
/// inserted keys in.
pub(super) fn stamp<K>(kind: &'static str, mut typed: K) -> Result<K, BuildError>
where
    K: serde::Serialize + Resource,
{
    let canonical =
        serde_json::to_string(&typed).map_err(|source| BuildError::Invalid { kind, source })?;
    let hash = llama_stack_resolver::digest::sha256_hex(canonical.as_bytes());
    typed
        .meta_mut()
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESIRED_HASH.to_owned(), hash);
    Ok(typed)
}
