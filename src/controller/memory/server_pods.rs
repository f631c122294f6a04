//! Which stacks have server Pods, as the Pods' metadata watches see them, and whose Pods' changes
//! matter to them. A change of a server Pod wakes its stack where the status reads its Pods (a
//! rollout gone 10 s without progress: a crash loop, an image that cannot be pulled; external
//! providers installing; a rollback due on them: [`crate::core::reads::pods_needed`]); elsewhere
//! the Deployment's own events say what a Pod would (one became ready or unavailable), and a
//! young rollout gets its look at 10 s. So a look at a rollout needs the Pods' list only where
//! the watch knows of a Pod: a stack whose rollout cannot start anywhere (no node, a quota) has
//! none, and its looks cost no request (issue 62: at 10,000 stacks that wait, a list of none in
//! every look was half of the operator's reads).
//!
//! Each watch (one per scope and door) answers only once it has listed, and not while it lists
//! again; before that, and in a reconcile run without watches (the tests' direct reconciles),
//! [`ServerPods::none_of`] says `false` and the Pods are listed.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;

use super::listing::{Listing, WatchScope, answering};
use crate::naming::labels;

/// A Pod: its namespace and name.
type PodKey = (String, String);

/// What one watch has listed: each server Pod, with the stack it serves (its `instance` label).
type Pods = Listing<PodKey, String>;

/// The server Pods each watch has seen, and the stacks whose Pods matter (see the module
/// documentation).
#[derive(Default)]
pub struct ServerPods {
    watches: Mutex<HashMap<WatchScope, Pods>>,
    /// The stacks (by [`stack_key`]) whose last reconcile read, or would have read, their Pods.
    matter: Mutex<HashSet<u64>>,
}

/// At most this many stacks are remembered as having Pods that matter; beyond it all are
/// forgotten at once (deleted stacks are never removed otherwise), which costs their Pods' events
/// until each stack's next look (at most the resync), not a wrong status.
const MAX_MATTER: usize = 200_000;

/// A stack of a door, as a digest (a collision only wakes a stack once more, or once less until
/// its next look).
fn stack_key(door: &str, namespace: &str, name: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (door, namespace, name).hash(&mut hasher);
    hasher.finish()
}

/// A Pod's key and the stack it serves, if it names one.
fn entry(pod: &PartialObjectMeta<Pod>) -> Option<(PodKey, String)> {
    let meta = &pod.metadata;
    let instance = meta.labels.as_ref()?.get(labels::INSTANCE)?;
    let key = (meta.namespace.clone()?, meta.name.clone()?);
    Some((key, instance.clone()))
}

impl ServerPods {
    /// Records an event of the watch over `scope` for `door`.
    pub(in crate::controller) fn observe(
        &self,
        scope: Option<&str>,
        door: &'static str,
        event: &Event<PartialObjectMeta<Pod>>,
    ) {
        let Ok(mut watches) = self.watches.lock() else {
            return;
        };
        let listing = watches.entry((scope.map(str::to_owned), door)).or_default();
        match event {
            Event::Init => listing.begin(),
            Event::InitApply(pod) => {
                if let Some((key, instance)) = entry(pod) {
                    listing.listed(key, instance);
                }
            }
            Event::InitDone => {
                listing.done();
            }
            Event::Apply(pod) => {
                if let Some((key, instance)) = entry(pod) {
                    listing.entries_mut().insert(key, instance);
                }
            }
            Event::Delete(pod) => {
                if let Some((key, _)) = entry(pod) {
                    listing.entries_mut().remove(&key);
                }
            }
        }
    }

    /// Whether `door`'s listed watch of `namespace` knows that the stack `instance` has no
    /// server Pod. `false` when no listed watch of that door covers the namespace.
    pub(in crate::controller) fn none_of(
        &self,
        namespace: &str,
        instance: &str,
        door: &str,
    ) -> bool {
        let Ok(watches) = self.watches.lock() else {
            return false;
        };
        answering(&watches, namespace, door).is_some_and(|listing| {
            !listing
                .entries()
                .iter()
                .any(|((ns, _), of)| ns == namespace && of == instance)
        })
    }

    /// Records whether the stack's Pods matter to it: its reconcile read them, or would have
    /// (none could exist yet).
    pub(in crate::controller) fn matter(
        &self,
        door: &str,
        namespace: &str,
        name: &str,
        matter: bool,
    ) {
        let Ok(mut set) = self.matter.lock() else {
            return;
        };
        let key = stack_key(door, namespace, name);
        if !matter {
            set.remove(&key);
            return;
        }
        if set.len() >= MAX_MATTER {
            set.clear();
        }
        set.insert(key);
    }

    /// Whether a change of the stack's Pods is to wake it ([`Self::matter`]).
    pub(in crate::controller) fn matters(&self, door: &str, namespace: &str, name: &str) -> bool {
        self.matter
            .lock()
            .is_ok_and(|set| set.contains(&stack_key(door, namespace, name)))
    }

    /// Forgets everything: the controllers and their watches start again, and a watch that no
    /// longer runs must not answer.
    pub(in crate::controller) fn clear(&self) {
        if let Ok(mut watches) = self.watches.lock() {
            watches.clear();
        }
        if let Ok(mut set) = self.matter.lock() {
            set.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOOR: &str = "door";

    fn pod(ns: &str, name: &str, instance: &str) -> PartialObjectMeta<Pod> {
        serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {"name": name, "namespace": ns,
                "labels": {labels::INSTANCE: instance}},
        }))
        .unwrap()
    }

    fn listed(index: &ServerPods, scope: Option<&str>, pods: &[PartialObjectMeta<Pod>]) {
        index.observe(scope, DOOR, &Event::Init);
        for p in pods {
            index.observe(scope, DOOR, &Event::InitApply(p.clone()));
        }
        index.observe(scope, DOOR, &Event::InitDone);
    }

    #[test]
    fn a_stack_has_no_pod_only_where_a_listed_watch_of_its_door_says_so() {
        let index = ServerPods::default();
        assert!(!index.none_of("ns", "a", DOOR), "nothing listed yet");
        listed(&index, None, &[pod("ns", "a-1", "a")]);
        assert!(!index.none_of("ns", "a", DOOR), "a has a Pod");
        assert!(index.none_of("ns", "b", DOOR), "b has none");
        assert!(
            index.none_of("other", "a", DOOR),
            "a Pod of another namespace's a"
        );
        assert!(
            !index.none_of("ns", "b", "another door"),
            "no watch of that door"
        );
        index.observe(None, DOOR, &Event::Apply(pod("ns", "b-1", "b")));
        assert!(!index.none_of("ns", "b", DOOR), "b's Pod arrived");
        index.observe(None, DOOR, &Event::Delete(pod("ns", "a-1", "a")));
        assert!(index.none_of("ns", "a", DOOR), "a's Pod is gone");
        index.observe(None, DOOR, &Event::Init);
        assert!(!index.none_of("ns", "a", DOOR), "listing again: no answer");
        index.observe(None, DOOR, &Event::InitDone);
        assert!(
            index.none_of("ns", "b", DOOR),
            "the re-list found none of b"
        );
        index.clear();
        assert!(!index.none_of("ns", "a", DOOR), "forgotten");
    }

    #[test]
    fn a_stacks_pods_matter_from_the_look_that_needs_them_to_the_one_that_does_not() {
        let index = ServerPods::default();
        assert!(!index.matters(DOOR, "ns", "a"), "never looked at");
        index.matter(DOOR, "ns", "a", true);
        assert!(index.matters(DOOR, "ns", "a"));
        assert!(!index.matters(DOOR, "ns", "b"), "another stack");
        assert!(
            !index.matters("another door", "ns", "a"),
            "another door's a"
        );
        assert!(!index.matters(DOOR, "other", "a"), "another namespace's a");
        index.matter(DOOR, "ns", "a", false);
        assert!(!index.matters(DOOR, "ns", "a"), "a look that needs no Pods");
        index.matter(DOOR, "ns", "a", true);
        index.clear();
        assert!(
            !index.matters(DOOR, "ns", "a"),
            "forgotten with the watches"
        );
    }

    #[test]
    fn a_namespaced_watch_answers_for_its_namespace_alone() {
        let index = ServerPods::default();
        listed(&index, Some("ns"), &[]);
        assert!(index.none_of("ns", "a", DOOR));
        assert!(!index.none_of("other", "a", DOOR));
    }
}
