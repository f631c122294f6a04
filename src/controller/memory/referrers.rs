//! Which stacks refer to which Secret or ConfigMap, kept up to date from the stacks' own watch
//! events, so that a Secret or ConfigMap event finds the stacks to reconcile with one lookup.
//!
//! Looking through every cached stack instead (and serializing each to find its references)
//! made every ConfigMap or Secret event in scope cost O(stacks): with 10,000 stacks the operator
//! spent most of its CPU there, since each stack it creates brings a ConfigMap event of its own.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use kube::ResourceExt as _;
use kube::core::ObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::Event;

use crate::api::object_refs::{self, RefKind, Reference};
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::LlamaStackDistribution;

/// A stack's resource, as far as the index needs it: what it refers to, read through its door.
pub(in crate::controller) trait Refers:
    kube::Resource<DynamicType = ()>
{
    /// The Secrets and ConfigMaps its spec names.
    fn references(&self) -> Vec<Reference>;
}

impl Refers for LlamaStackDistribution {
    fn references(&self) -> Vec<Reference> {
        object_refs::of(&self.spec)
    }
}

impl Refers for OGXServer {
    /// Those of its spec in the model; one the model cannot carry refers to nothing until it
    /// can.
    fn references(&self) -> Vec<Reference> {
        crate::ogx_server::to_model(self)
            .map(|modelled| object_refs::of(&modelled.spec))
            .unwrap_or_default()
    }
}

/// A referred object: its kind, namespace and name.
type Target = (RefKind, String, String);

/// The index, shared by the stacks' watch (which writes it) and the Secret and ConfigMap watches
/// (which read it).
pub(in crate::controller) struct Referrers<K: Refers>(Arc<Mutex<Index<K>>>);

impl<K: Refers> Clone for Referrers<K> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<K: Refers> Default for Referrers<K> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<K: Refers> Referrers<K> {
    /// Follows one event of the stacks' watch.
    pub(in crate::controller) fn observe(&self, event: &Event<K>) {
        let mut index = self.lock();
        match event {
            Event::Apply(cr) => index.main.set(cr),
            Event::Delete(cr) => index.main.remove(&ObjectRef::from_obj(cr)),
            // A relist builds a new index; it replaces the old one when the list is complete
            // (stacks deleted while the watch was down are dropped then), as the cache does.
            Event::Init => index.relisting = Some(Targets::empty()),
            Event::InitApply(cr) => index.relisting.get_or_insert_with(Targets::empty).set(cr),
            Event::InitDone => {
                if let Some(relisted) = index.relisting.take() {
                    index.main = relisted;
                }
            }
        }
    }

    /// The stacks that refer to the `kind` object `meta` names.
    pub(in crate::controller) fn of(&self, kind: RefKind, meta: &ObjectMeta) -> Vec<ObjectRef<K>> {
        let target = (
            kind,
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        );
        self.lock()
            .main
            .by_target
            .get(&target)
            .map(|stacks| stacks.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, Index<K>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

struct Index<K: Refers> {
    main: Targets<K>,
    relisting: Option<Targets<K>>,
}

impl<K: Refers> Default for Index<K> {
    fn default() -> Self {
        Self {
            main: Targets::empty(),
            relisting: None,
        }
    }
}

/// Both directions: what refers to a target, and what a stack refers to (to undo it).
struct Targets<K: Refers> {
    by_target: HashMap<Target, HashSet<ObjectRef<K>>>,
    by_stack: HashMap<ObjectRef<K>, Vec<Target>>,
}

impl<K: Refers> Targets<K> {
    fn empty() -> Self {
        Self {
            by_target: HashMap::new(),
            by_stack: HashMap::new(),
        }
    }

    /// Records what `cr` refers to now, replacing what it referred to before.
    fn set(&mut self, cr: &K) {
        let stack = ObjectRef::from_obj(cr);
        self.remove(&stack);
        let own_namespace = cr.namespace().unwrap_or_default();
        let mut targets: Vec<Target> = cr
            .references()
            .into_iter()
            .map(|r| {
                let namespace = r.namespace.unwrap_or_else(|| own_namespace.clone());
                (r.kind, namespace, r.name)
            })
            .collect();
        targets.sort();
        targets.dedup();
        if targets.is_empty() {
            return;
        }
        for target in &targets {
            self.by_target
                .entry(target.clone())
                .or_default()
                .insert(stack.clone());
        }
        self.by_stack.insert(stack, targets);
    }

    fn remove(&mut self, stack: &ObjectRef<K>) {
        for target in self.by_stack.remove(stack).unwrap_or_default() {
            if let Some(stacks) = self.by_target.get_mut(&target) {
                stacks.remove(stack);
                if stacks.is_empty() {
                    self.by_target.remove(&target);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(namespace: &str, name: &str, spec: serde_json::Value) -> LlamaStackDistribution {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "llamastack.io/v1alpha2",
            "kind": "LlamaStackDistribution",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }))
        .unwrap()
    }

    fn with_tls(namespace: &str, name: &str, secret: &str) -> LlamaStackDistribution {
        stack(
            namespace,
            name,
            serde_json::json!({"distribution": {"name": "starter"},
                "networking": {"tls": {"secretName": secret}}}),
        )
    }

    fn meta(namespace: &str, name: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(namespace.to_owned()),
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        }
    }

    /// The names of the stacks `referrers` finds for the `kind` object `namespace/name`, sorted.
    fn found<K: Refers>(
        referrers: &Referrers<K>,
        kind: RefKind,
        namespace: &str,
        name: &str,
    ) -> Vec<String> {
        let mut names: Vec<String> = referrers
            .of(kind, &meta(namespace, name))
            .into_iter()
            .map(|s| s.name)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_object_finds_the_stacks_that_refer_to_it_in_its_namespace() {
        let referrers = Referrers::<LlamaStackDistribution>::default();
        referrers.observe(&Event::Apply(with_tls("team", "a", "tls")));
        referrers.observe(&Event::Apply(with_tls("team", "b", "tls")));
        referrers.observe(&Event::Apply(with_tls("other", "c", "tls")));
        assert_eq!(
            found(&referrers, RefKind::Secret, "team", "tls"),
            ["a", "b"]
        );
        assert_eq!(found(&referrers, RefKind::Secret, "other", "tls"), ["c"]);
        assert!(
            found(&referrers, RefKind::ConfigMap, "team", "tls").is_empty(),
            "a ConfigMap of the Secret's name is another object"
        );
    }

    #[test]
    fn a_changed_or_deleted_stack_no_longer_answers_for_what_it_dropped() {
        let referrers = Referrers::<LlamaStackDistribution>::default();
        referrers.observe(&Event::Apply(with_tls("team", "a", "old")));
        referrers.observe(&Event::Apply(with_tls("team", "a", "new")));
        assert!(found(&referrers, RefKind::Secret, "team", "old").is_empty());
        assert_eq!(found(&referrers, RefKind::Secret, "team", "new"), ["a"]);
        referrers.observe(&Event::Delete(with_tls("team", "a", "new")));
        assert!(found(&referrers, RefKind::Secret, "team", "new").is_empty());
    }

    #[test]
    fn a_reference_into_another_namespace_is_found_there() {
        let referrers = Referrers::<LlamaStackDistribution>::default();
        let cr = stack(
            "team",
            "a",
            serde_json::json!({"distribution": {"name": "starter"},
                "networking": {"tls": {"caBundle": {"configMapName": "ca", "configMapNamespace": "shared"}}}}),
        );
        let expected = cr.references();
        assert!(
            expected
                .iter()
                .any(|r| r.namespace.as_deref() == Some("shared")),
            "the fixture must name another namespace: {expected:?}"
        );
        referrers.observe(&Event::Apply(cr));
        assert_eq!(found(&referrers, RefKind::ConfigMap, "shared", "ca"), ["a"]);
        assert!(found(&referrers, RefKind::ConfigMap, "team", "ca").is_empty());
    }

    #[test]
    fn a_relist_drops_the_stacks_deleted_while_the_watch_was_down() {
        let referrers = Referrers::<LlamaStackDistribution>::default();
        referrers.observe(&Event::Apply(with_tls("team", "a", "tls")));
        referrers.observe(&Event::Apply(with_tls("team", "gone", "tls")));
        referrers.observe(&Event::Init);
        referrers.observe(&Event::InitApply(with_tls("team", "a", "tls")));
        assert_eq!(
            found(&referrers, RefKind::Secret, "team", "tls"),
            ["a", "gone"],
            "until the list is complete, the old index answers"
        );
        referrers.observe(&Event::InitDone);
        assert_eq!(found(&referrers, RefKind::Secret, "team", "tls"), ["a"]);
    }

    /// An `OGXServer` refers to what its spec names once mapped into the model (its
    /// `overrideConfig` is the model's); one the model cannot carry yet refers to nothing.
    #[test]
    fn a_server_refers_to_what_its_spec_names_in_the_model() {
        let server = |name: &str, spec: serde_json::Value| -> OGXServer {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
                "metadata": {"name": name, "namespace": "team"}, "spec": spec}))
            .unwrap()
        };
        let config = serde_json::json!({"name": "cfg", "key": "config.yaml"});
        let referrers = Referrers::<OGXServer>::default();
        referrers.observe(&Event::Apply(server(
            "served",
            serde_json::json!({"distribution": {"name": "starter"}, "overrideConfig": config}),
        )));
        let refused = server(
            "refused",
            serde_json::json!({"distribution": {"name": "starter"}, "overrideConfig": config,
                "praxisMode": {"enabled": true}, "network": {"policy": {"enabled": false}}}),
        );
        assert!(crate::ogx_server::to_model(&refused).is_err());
        referrers.observe(&Event::Apply(refused));
        assert_eq!(
            found(&referrers, RefKind::ConfigMap, "team", "cfg"),
            ["served"]
        );
    }
}
