//! What every owned object shares: the field manager and annotations, the labels, owner and
//! metadata, and the hash of what the operator wants.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::Resource;

use crate::core::stack::Stack;
use crate::naming::{DESIRED_HASH, METRICS_PORT_NAME, PORT_NAME, labels};

/// Why an owned object could not be built. Always a bug in a builder, never the user's input.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The object could not be serialized to be hashed.
    #[error("cannot build the {kind}")]
    Invalid {
        /// Kind of the object.
        kind: &'static str,
        /// Cause.
        source: serde_json::Error,
    },
}

/// The labels of every owned object.
pub(super) fn common_labels(stack: &Stack) -> BTreeMap<String, String> {
    let mut labels = selector_labels(stack);
    labels.insert(
        labels::MANAGED_BY.to_owned(),
        stack.door.managed_by().to_owned(),
    );
    for (key, value) in stack.door.object_labels() {
        labels.insert((*key).to_owned(), (*value).to_owned());
    }
    labels
}

/// The labels that select the server Pods.
pub(super) fn selector_labels(stack: &Stack) -> BTreeMap<String, String> {
    crate::naming::selector_labels(stack.name)
}

/// The server's named ports: the API port, and the metrics port when the door has one. The
/// container and the Service both name them so.
pub(super) fn named_ports(stack: &Stack) -> impl Iterator<Item = (&'static str, i32)> {
    std::iter::once((PORT_NAME, stack.networking.port)).chain(
        stack
            .door
            .metrics_port()
            .map(|port| (METRICS_PORT_NAME, port)),
    )
}

/// The selector of the server Pods.
pub(super) fn pod_selector(stack: &Stack) -> LabelSelector {
    match_labels(selector_labels(stack))
}

/// A selector matching exactly `labels`.
pub(super) fn match_labels(labels: BTreeMap<String, String>) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels),
        ..LabelSelector::default()
    }
}

/// Standard metadata of an owned object: its name, the stack's namespace and labels, and the
/// controller owner reference (an empty list for an object not yet stored, e.g. in `render`).
pub(super) fn metadata(stack: &Stack, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(stack.namespace)
            .filter(|ns| !ns.is_empty())
            .map(str::to_owned),
        labels: Some(common_labels(stack)),
        owner_references: Some(stack.owner.clone().into_iter().collect()),
        ..ObjectMeta::default()
    }
}

/// The object with [`DESIRED_HASH`]: the hash of its canonical form (the typed serialization,
/// whose maps are sorted), so equal content always hashes equal.
pub(super) fn stamped<K>(mut object: K) -> Result<K, BuildError>
where
    K: serde::Serialize + Resource<DynamicType = ()>,
{
    let kind = match K::kind(&()) {
        std::borrow::Cow::Borrowed(kind) => kind,
        std::borrow::Cow::Owned(_) => "object",
    };
    stamp(kind, &mut object)?;
    Ok(object)
}

/// Adds [`DESIRED_HASH`] to an object of any type (the Route is a dynamic object).
pub(super) fn stamp<K>(kind: &'static str, object: &mut K) -> Result<(), BuildError>
where
    K: serde::Serialize + Resource,
{
    let canonical =
        serde_json::to_string(object).map_err(|source| BuildError::Invalid { kind, source })?;
    let hash = llama_stack_resolver::sha256_hex(canonical.as_bytes());
    object
        .meta_mut()
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESIRED_HASH.to_owned(), hash);
    Ok(())
}
