//! Who controls an object, read from and written into its owner references: the one place the
//! core (taking over, the references' checks) and the controller (pruning, handing over, the
//! writes) ask it. Depends on nothing of either.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// The controller of `meta`, if it has one.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// Whether `meta` names the object with `uid` as its controller.
pub fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    controller_of(meta).is_some_and(|c| c.uid == uid)
}

/// Whether `owner` is the LlamaStackDistribution `name` (any version of the group).
pub fn is_stack(owner: &OwnerReference, name: &str) -> bool {
    owner.kind == "LlamaStackDistribution"
        && owner.api_version.starts_with("llamastack.io/")
        && owner.name == name
}

/// The owner references of `meta` but its controller.
pub fn without_controller(meta: &ObjectMeta) -> Vec<OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .filter(|o| o.controller != Some(true))
        .cloned()
        .collect()
}

/// Whether `meta` names the LlamaStackDistribution `name` among its owners, as its controller
/// or not.
pub fn owned_by_stack(meta: &ObjectMeta, name: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| is_stack(o, name))
}

/// The owner references of `meta` handed to `owner`: `owner` becomes the controller, and the
/// controller before it stays an owner, no longer the controller. The garbage collector deletes
/// an object only once every owner is gone, so deleting either one of the two leaves the object
/// with the other: the step can be undone until both are deleted.
pub fn handed_to(meta: &ObjectMeta, owner: &OwnerReference) -> Vec<OwnerReference> {
    let mut owners: Vec<OwnerReference> = meta
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.uid != owner.uid)
        .cloned()
        .map(|mut o| {
            if o.controller == Some(true) {
                o.controller = Some(false);
                // Blocking is a controller's: a plain owner's deletion waits for nothing.
                o.block_owner_deletion = None;
            }
            o
        })
        .collect();
    owners.push(owner.clone());
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(uid: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: "llamastack.io/v1alpha2".to_owned(),
            kind: "LlamaStackDistribution".to_owned(),
            name: "old".to_owned(),
            uid: uid.to_owned(),
            controller: Some(controller),
            ..OwnerReference::default()
        }
    }

    #[test]
    fn only_the_controller_counts() {
        let meta = ObjectMeta {
            owner_references: Some(vec![owner("other", false), owner("uid-1", true)]),
            ..ObjectMeta::default()
        };
        assert!(controlled_by(&meta, "uid-1"));
        assert!(
            !controlled_by(&meta, "other"),
            "an owner that does not control"
        );
        assert!(owned_by_stack(&meta, "old"));
        assert!(!owned_by_stack(&meta, "new"));
        assert_eq!(without_controller(&meta).len(), 1);
        assert!(!controlled_by(&ObjectMeta::default(), "uid-1"));
    }

    /// Handing over keeps the controller before as a plain owner (the undo), replaces none,
    /// and gives again to the same owner without a second entry.
    #[test]
    fn a_handed_object_keeps_its_old_controller_as_an_owner() {
        let meta = ObjectMeta {
            owner_references: Some(vec![owner("other", false), owner("uid-1", true)]),
            ..ObjectMeta::default()
        };
        let handed = handed_to(&meta, &owner("uid-2", true));
        let refs: Vec<(&str, Option<bool>)> = handed
            .iter()
            .map(|o| (o.uid.as_str(), o.controller))
            .collect();
        assert_eq!(
            refs,
            [
                ("other", Some(false)),
                ("uid-1", Some(false)),
                ("uid-2", Some(true))
            ]
        );
        let again = ObjectMeta {
            owner_references: Some(handed.clone()),
            ..ObjectMeta::default()
        };
        assert_eq!(handed_to(&again, &owner("uid-2", true)), handed);
        assert!(owned_by_stack(&again, "old"));
        let demoted = ObjectMeta {
            owner_references: Some(vec![handed[1].clone()]),
            ..ObjectMeta::default()
        };
        assert!(owned_by_stack(&demoted, "old") && controller_of(&demoted).is_none());
    }
}
