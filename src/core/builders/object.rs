//! What every owned object of a stack shares, taken from the stack once ([`Common`]), and the
//! last touch every object gets after its builder made it ([`owned`], [`stamp`]): the stack's
//! namespace, labels and owner, then the hash of what the operator wants.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;

use crate::core::stack::Stack;
use crate::naming::{DESIRED_HASH, METRICS_PORT_NAME, PORT_NAME, ca_bundle_name, labels};

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

/// What the objects of one stack have in common, read from the stack once for all of them.
#[derive(Clone, Debug)]
pub(super) struct Common {
    /// The labels of every owned object.
    pub labels: BTreeMap<String, String>,
    /// The labels that select the server Pods.
    pub selector_labels: BTreeMap<String, String>,
    /// The same, as a selector.
    pub selector: LabelSelector,
    /// The server's named ports: the API port, and the metrics port when the door has one. The
    /// container and the Service both name them so.
    pub ports: Vec<(&'static str, i32)>,
    /// The managed CA bundle's name, named by its content, when the stack has one: the Pods
    /// mount what the bundle's ConfigMap is named.
    pub ca_bundle_name: Option<String>,
    /// The stack's namespace (none for a manifest not yet placed, in `render`).
    namespace: Option<String>,
    /// The controller owner reference (an empty list for an object not yet stored).
    owners: Vec<OwnerReference>,
}

impl Common {
    /// What `stack`'s objects share, with the validated CA bundle `ca_bundle` (PEM) if any.
    pub(super) fn of(stack: &Stack, ca_bundle: Option<&str>) -> Self {
        let selector_labels = selector_labels(stack);
        let mut labels = selector_labels.clone();
        labels.insert(
            labels::MANAGED_BY.to_owned(),
            stack.door.managed_by().to_owned(),
        );
        for (key, value) in stack.door.object_labels() {
            labels.insert((*key).to_owned(), (*value).to_owned());
        }
        let ports = std::iter::once((PORT_NAME, stack.networking.port))
            .chain(
                stack
                    .door
                    .metrics_port()
                    .map(|port| (METRICS_PORT_NAME, port)),
            )
            .collect();
        Self {
            selector: LabelSelector {
                match_labels: Some(selector_labels.clone()),
                ..LabelSelector::default()
            },
            selector_labels,
            labels,
            ports,
            ca_bundle_name: ca_bundle.map(|pem| ca_bundle_name(stack.name(), pem)),
            namespace: Some(stack.namespace())
                .filter(|ns| !ns.is_empty())
                .map(str::to_owned),
            owners: stack.subject.owners(),
        }
    }
}

/// The labels that select the server Pods.
pub(super) fn selector_labels(stack: &Stack) -> BTreeMap<String, String> {
    crate::naming::selector_labels(stack.name())
}

/// The object placed in the stack's namespace, with the stack's labels (beside those its builder
/// gave it, which win) and its controller owner reference.
pub(super) fn owned<K: Resource>(common: &Common, object: &mut K) {
    let meta: &mut ObjectMeta = object.meta_mut();
    meta.namespace.clone_from(&common.namespace);
    let own = meta.labels.take().unwrap_or_default();
    let mut labels = common.labels.clone();
    labels.extend(own);
    meta.labels = Some(labels);
    meta.owner_references = Some(common.owners.clone());
}

/// Adds [`DESIRED_HASH`] to an object of any type: the hash of its canonical form (the typed
/// serialization, whose maps are sorted), so equal content always hashes equal.
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
