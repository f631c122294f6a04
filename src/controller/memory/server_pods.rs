//! Which stacks have server Pods, as the Pods' metadata watches see them. Every change of a
//! server Pod wakes its stack (a crash loop, an image that cannot be pulled, a container that
//! became ready), so a look at a rollout needs the Pods' list only where the watch knows of a
//! Pod: a stack whose rollout cannot start anywhere (no node, a quota) has none, and its looks
//! cost no request (issue 62: at 10,000 stacks that wait, a list of none in every look was half
//! of the operator's reads).
//!
//! Each watch (one per scope and door) answers only once it has listed, and not while it lists
//! again; before that, and in a reconcile run without watches (the tests' direct reconciles),
//! [`ServerPods::none_of`] says `false` and the Pods are listed.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;

use super::listing::Listing;
use crate::naming::labels;

/// A Pod: its namespace and name.
type PodKey = (String, String);

/// What one watch has listed: each server Pod, with the stack it serves (its `instance` label).
type Pods = Listing<PodKey, String>;

/// Which watch: the namespace it watches (`None`: all) and the door it serves.
type WatchId = (Option<String>, &'static str);

/// The server Pods each watch has seen (see the module documentation).
#[derive(Default)]
pub struct ServerPods {
    watches: Mutex<HashMap<WatchId, Pods>>,
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
        watches
            .iter()
            .find(|((scope, watch_door), listing)| {
                *watch_door == door
                    && listing.answers()
                    && scope.as_deref().is_none_or(|s| s == namespace)
            })
            .is_some_and(|(_, listing)| {
                !listing
                    .entries()
                    .iter()
                    .any(|((ns, _), of)| ns == namespace && of == instance)
            })
    }

    /// Forgets everything: the controllers and their watches start again, and a watch that no
    /// longer runs must not answer.
    pub(in crate::controller) fn clear(&self) {
        if let Ok(mut watches) = self.watches.lock() {
            watches.clear();
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
    fn a_namespaced_watch_answers_for_its_namespace_alone() {
        let index = ServerPods::default();
        listed(&index, Some("ns"), &[]);
        assert!(index.none_of("ns", "a", DOOR));
        assert!(!index.none_of("other", "a", DOOR));
    }
}
