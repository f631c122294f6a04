//! Who is reconciled: the API the stack came through, its name, namespace, uid and the
//! generation of its spec, and how its objects and its Events refer to it. Everything the status
//! write and the Events need of the resource; the rest of the pipeline reads the stack view.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

use super::door::Door;
use crate::api::v1alpha2::LlamaStackDistribution;

/// Who is reconciled.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    /// The API it came through.
    pub door: Door,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (empty for a manifest not yet placed, in `render`).
    pub namespace: String,
    /// `metadata.uid` (empty for an object not yet stored).
    pub uid: String,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// The controller owner reference of its objects (none for an object not yet stored).
    pub owner: Option<OwnerReference>,
    /// For an `OGXServer`, the LlamaStackDistribution of its name while it exists: a plain owner
    /// of every object beside the server (no controller, no blocking), so deleting the server
    /// before it (the undo of a move in place) leaves every object, the data volume and the
    /// Service's address first, to it; the garbage collector removes the reference once it is
    /// deleted.
    pub namesake: Option<OwnerReference>,
    /// The resource as its Events name it.
    pub regarding: ObjectReference,
}

impl Subject {
    /// The owner references of every object the stack applies: its namesake's, if any, and its
    /// own controller reference.
    pub fn owners(&self) -> Vec<OwnerReference> {
        self.namesake
            .iter()
            .chain(self.owner.iter())
            .cloned()
            .collect()
    }
}

/// The plain owner reference an `OGXServer`'s objects carry to the LlamaStackDistribution
/// `name` (uid `uid`) of its name (see [`Subject::namesake`]).
pub fn namesake_owner(api_version: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: "LlamaStackDistribution".to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(false),
        block_owner_deletion: None,
    }
}

/// The controller reference a LlamaStackDistribution `name` (uid `uid`) gives its own objects,
/// as its reconcile makes it: what a claim taken from it carries again once it goes back.
pub fn stack_controller(name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: LlamaStackDistribution::api_version(&()).into_owned(),
        kind: LlamaStackDistribution::kind(&()).into_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

impl Subject {
    /// The subject whose metadata is `meta`, a resource that came through `door`: its objects'
    /// references and its Events name the resource of that door (an `OGXServer` and the
    /// LlamaStackDistribution of its name share no uid).
    pub fn of(meta: &ObjectMeta, door: Door) -> Self {
        let (api_version, kind) = door.type_meta();
        let owner = match (door, meta.name.as_deref(), meta.uid.as_deref()) {
            (_, None, _) | (_, _, None) => None,
            // As kube makes it: it does not block the owner's deletion (which would need the
            // right to update the LLSD's finalizers under OpenShift's admission).
            (Door::LlamaStackDistribution, Some(name), Some(uid)) => {
                Some(stack_controller(name, uid))
            }
            // As the OGX operator's objects refer to their OGXServer.
            (Door::OgxServer { .. }, Some(name), Some(uid)) => Some(OwnerReference {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                name: name.to_owned(),
                uid: uid.to_owned(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }),
        };
        Self {
            door,
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            generation: meta.generation,
            owner,
            namesake: None,
            regarding: ObjectReference {
                api_version: Some(api_version.to_owned()),
                kind: Some(kind.to_owned()),
                name: meta.name.clone(),
                namespace: meta.namespace.clone(),
                uid: meta.uid.clone(),
                // As kube's own reference: an Event names the object, not one version of it.
                resource_version: None,
                field_path: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::Resource;
    use serde_json::json;

    use super::*;

    fn model() -> LlamaStackDistribution {
        serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2",
            "kind": "LlamaStackDistribution",
            "metadata": {"name": "s", "namespace": "ns", "uid": "u-1", "generation": 3,
                "resourceVersion": "7"},
            "spec": {"distribution": {"name": "starter"}}}))
        .unwrap()
    }

    /// Through the LLSD door the references are kube's own for the resource; through the
    /// `OGXServer` door they name the `OGXServer` with the same name and uid.
    #[test]
    fn the_references_name_the_resource_of_the_door() {
        let model = model();
        let llsd = Subject::of(&model.metadata, Door::LlamaStackDistribution);
        assert_eq!(llsd.owner, model.controller_owner_ref(&()));
        assert_eq!(
            llsd.owner,
            Some(stack_controller("s", "u-1")),
            "a claim given back carries the stack's own reference"
        );
        assert_eq!(llsd.regarding, model.object_ref(&()));
        assert_eq!((llsd.generation, llsd.uid.as_str()), (Some(3), "u-1"));

        let ogx = Subject::of(&model.metadata, Door::OgxServer { metrics_port: None });
        let owner = ogx.owner.unwrap();
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.uid.as_str()
            ),
            ("ogx.io/v1beta1", "OGXServer", "u-1")
        );
        assert_eq!(owner.controller, Some(true));
        assert_eq!(ogx.regarding.kind.as_deref(), Some("OGXServer"));
        assert_eq!(ogx.regarding.api_version.as_deref(), Some("ogx.io/v1beta1"));
        assert_eq!(ogx.regarding.uid.as_deref(), Some("u-1"));
    }

    #[test]
    fn an_object_not_yet_stored_has_no_owner() {
        let mut model = model();
        model.metadata.uid = None;
        assert!(
            Subject::of(&model.metadata, Door::LlamaStackDistribution)
                .owner
                .is_none()
        );
    }
}
