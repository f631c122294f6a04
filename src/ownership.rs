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

/// Whether `meta` is controlled by the LlamaStackDistribution `name` (any version of the group).
pub fn controlled_by_stack(meta: &ObjectMeta, name: &str) -> bool {
    controller_of(meta).is_some_and(|c| is_stack(c, name))
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

/// The owner references of `meta` with `owner` as the controller in place of any other.
pub fn with_controller(meta: &ObjectMeta, owner: &OwnerReference) -> Vec<OwnerReference> {
    let mut owners = without_controller(meta);
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
    fn only_the_controller_counts_and_a_new_one_replaces_it() {
        let meta = ObjectMeta {
            owner_references: Some(vec![owner("other", false), owner("uid-1", true)]),
            ..ObjectMeta::default()
        };
        assert!(controlled_by(&meta, "uid-1"));
        assert!(
            !controlled_by(&meta, "other"),
            "an owner that does not control"
        );
        assert!(controlled_by_stack(&meta, "old"));
        assert!(!controlled_by_stack(&meta, "new"));
        let given = with_controller(&meta, &owner("uid-2", true));
        let uids: Vec<(&str, Option<bool>)> = given
            .iter()
            .map(|o| (o.uid.as_str(), o.controller))
            .collect();
        assert_eq!(uids, [("other", Some(false)), ("uid-2", Some(true))]);
        assert_eq!(without_controller(&meta).len(), 1);
        assert!(!controlled_by(&ObjectMeta::default(), "uid-1"));
    }
}
