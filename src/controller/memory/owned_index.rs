//! What the metadata watches of the owned objects last said about each object, so that the apply
//! step reads an object only when the watches cannot answer for it: that it does not exist, that
//! it carries the desired hash and has not changed since the operator last checked it, or that
//! another resource controls it.
//!
//! Each watched kind, scope and door (`managed-by` label) is a shard that answers only once its
//! watch has listed everything (and again after every re-list); before that, and in a reconcile
//! run without watches (the tests' direct reconciles), every answer is [`Known::Unknown`] and the
//! apply reads as it always did. An object is kept as digests (about 70 bytes): the watch caches
//! of 10,000 stacks would otherwise cost more than the stacks themselves.
//!
//! A watch event reaches this index before it reaches the controller's queue (the same stream),
//! so a reconcile that an edit triggers already sees the edit's resource version.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::runtime::watcher::Event;
use sha2::{Digest as _, Sha256};

use super::listing::Listing;
use crate::naming::DESIRED_HASH;

/// What the index knows of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::controller) enum Known {
    /// A watch that would see it has not listed yet (or the object's resource version is not a
    /// number): read it.
    Unknown,
    /// No watched object of that kind and name; `confirmed` when a read at the stack's current
    /// generation found none the stack controls (the watches see only objects with the door's
    /// `managed-by` label: one left by another operator, or stripped of it, is found by that
    /// read).
    Absent {
        /// A read at this generation found nothing of the stack's.
        confirmed: bool,
    },
    /// It exists, as last seen.
    Present(Seen),
}

/// An object as its watch last saw it, and whether the operator has checked that version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::controller) struct Seen {
    /// Digest of its desired-hash annotation, if any.
    desired_hash: Option<u64>,
    /// Digest of the uid of the resource that controls it, if any.
    controller: Option<u64>,
    /// Whether the operator checked this very version (applied it, or read it and found no
    /// field of its own changed by anyone else).
    checked: bool,
}

impl Seen {
    /// An object seen with `hash` as its desired hash, controlled by `controller`, `checked` or
    /// not (for the tests of what is made of it).
    #[cfg(test)]
    pub(in crate::controller) fn new(
        hash: Option<&str>,
        controller: Option<&str>,
        checked: bool,
    ) -> Self {
        Self {
            desired_hash: hash.map(digest64),
            controller: controller.map(digest64),
            checked,
        }
    }

    /// Whether it carries `hash` as its desired hash.
    pub(in crate::controller) fn carries(&self, hash: &str) -> bool {
        self.desired_hash == Some(digest64(hash))
    }

    /// Whether the resource of uid `owner` controls it.
    pub(in crate::controller) fn controlled_by(&self, owner: &str) -> bool {
        self.controller == Some(digest64(owner))
    }

    /// Whether the operator checked this version.
    pub(in crate::controller) fn checked(&self) -> bool {
        self.checked
    }
}

/// One object, as kept.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// `None` when not a number: the object is then never answered for.
    resource_version: Option<u64>,
    desired_hash: Option<u64>,
    controller: Option<u64>,
}

/// The objects of one watch, by key.
type Shard = Listing<u128, Entry>;

/// Which watch: the kind, the namespace it watches (`None`: all), the door's `managed-by` value.
type ShardId = (&'static str, Option<String>, String);

/// The index (see the module documentation).
#[derive(Default)]
pub struct OwnedIndex {
    shards: Mutex<HashMap<ShardId, Shard>>,
    /// Per object: the resource version the operator last checked.
    checked: Mutex<HashMap<u128, u64>>,
    /// Per object not wanted: the stack generation at which a read found none of the stack's.
    confirmed_absent: Mutex<HashMap<u128, i64>>,
}

/// At most this many confirmed absences are kept (four a stack at 100,000 stacks); beyond it they
/// are forgotten at once, which costs one read per object not wanted, not a wrong answer.
/// Entries of deleted stacks are never looked up again; this bounds them.
const MAX_CONFIRMED_ABSENT: usize = 400_000;

/// The key of an object.
fn key(kind: &str, namespace: &str, name: &str) -> u128 {
    let mut hasher = Sha256::new();
    for part in [kind, namespace, name] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let bytes = hasher.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&bytes[..16]);
    u128::from_le_bytes(first)
}

fn digest64(text: &str) -> u64 {
    let bytes = Sha256::digest(text.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(first)
}

/// What is kept of an object's metadata.
fn entry(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Entry {
    let resource_version = meta
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok());
    let desired_hash = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESIRED_HASH))
        .map(|h| digest64(h));
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| digest64(&r.uid));
    Entry {
        resource_version,
        desired_hash,
        controller,
    }
}

fn object_key(
    kind: &str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> u128 {
    key(
        kind,
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// The shards of `kind` whose watch covers `namespace`, across the doors; `None` while one of
/// them has not listed (or lists again).
fn covering<'a>(
    shards: &'a HashMap<ShardId, Shard>,
    kind: &str,
    namespace: &str,
) -> Option<Vec<&'a Shard>> {
    shards
        .iter()
        .filter(|((shard_kind, scope, _), _)| {
            *shard_kind == kind && scope.as_deref().is_none_or(|s| s == namespace)
        })
        .map(|(_, shard)| shard.answers().then_some(shard))
        .collect()
}

impl OwnedIndex {
    /// Takes in one event of the watch of `kind` over `scope` for the door `managed_by`.
    pub(in crate::controller) fn observe<K>(
        &self,
        kind: &'static str,
        scope: Option<&str>,
        managed_by: &str,
        event: &Event<kube::core::PartialObjectMeta<K>>,
    ) {
        let id = (kind, scope.map(str::to_owned), managed_by.to_owned());
        let Ok(mut shards) = self.shards.lock() else {
            return;
        };
        let shard = shards.entry(id).or_default();
        let mut gone = None;
        match event {
            Event::Init => shard.begin(),
            Event::InitApply(object) => {
                shard.listed(object_key(kind, &object.metadata), entry(&object.metadata));
            }
            Event::InitDone => {
                if let Some(old) = shard.done() {
                    // Deleted while the watch was away: forget what was checked of them.
                    let vanished: Vec<u128> = old
                        .into_keys()
                        .filter(|k| !shard.entries().contains_key(k))
                        .collect();
                    drop(shards);
                    if let Ok(mut checked) = self.checked.lock() {
                        for key in vanished {
                            checked.remove(&key);
                        }
                    }
                    return;
                }
            }
            Event::Apply(object) => {
                let key = object_key(kind, &object.metadata);
                shard.entries_mut().insert(key, entry(&object.metadata));
            }
            Event::Delete(object) => {
                let key = object_key(kind, &object.metadata);
                shard.entries_mut().remove(&key);
                gone = Some(key);
            }
        }
        drop(shards);
        if let (Some(key), Ok(mut checked)) = (gone, self.checked.lock()) {
            checked.remove(&key);
        }
    }

    /// Forgets everything: the controllers start again (a new leadership term, the OGXServer
    /// API installed or removed), and their watches list again; a shard of a watch that no
    /// longer runs must not answer.
    pub(in crate::controller) fn clear(&self) {
        if let Ok(mut shards) = self.shards.lock() {
            shards.clear();
        }
        if let Ok(mut checked) = self.checked.lock() {
            checked.clear();
        }
        if let Ok(mut absent) = self.confirmed_absent.lock() {
            absent.clear();
        }
    }

    /// What the watches of `kind` say of `namespace/name`, across the doors, for a stack at
    /// `generation`.
    pub(in crate::controller) fn lookup(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        generation: Option<i64>,
    ) -> Known {
        let key = key(kind, namespace, name);
        let Ok(shards) = self.shards.lock() else {
            return Known::Unknown;
        };
        let Some(covering) = covering(&shards, kind, namespace) else {
            return Known::Unknown;
        };
        let covered = !covering.is_empty();
        let mut found = None;
        for shard in covering {
            if let Some(entry) = shard.entries().get(&key) {
                // In two doors' watches at once (a hand-over under way): read it.
                if found.is_some() {
                    return Known::Unknown;
                }
                found = Some(*entry);
            }
        }
        drop(shards);
        match (covered, found) {
            (false, _) => Known::Unknown,
            // Checked, so written or read by the operator, and not yet in its watch: the watch
            // event of a write comes after the write's answer, and a reconcile that runs between
            // (one its other objects' events started) would apply it again (2 writes in 60,000
            // at 10,000 stacks, the bench of 2026-12-03). Read it instead.
            (true, None) if self.checked.lock().is_ok_and(|c| c.contains_key(&key)) => {
                Known::Unknown
            }
            (true, None) => {
                let confirmed = generation.is_some_and(|generation| {
                    self.confirmed_absent
                        .lock()
                        .is_ok_and(|a| a.get(&key) == Some(&generation))
                });
                Known::Absent { confirmed }
            }
            (
                true,
                Some(Entry {
                    resource_version: None,
                    ..
                }),
            ) => Known::Unknown,
            (true, Some(entry)) => {
                let checked = self.checked.lock().is_ok_and(|c| {
                    entry
                        .resource_version
                        .is_some_and(|version| c.get(&key) == Some(&version))
                });
                Known::Present(Seen {
                    desired_hash: entry.desired_hash,
                    controller: entry.controller,
                    checked,
                })
            }
        }
    }

    /// Whether every object of `kind` in `namespace` that the resource of uid `owner` controls,
    /// as the watches of every door show them, is one of `names`; `None` while a watch that would
    /// see one has not listed (or lists again). Objects of `owner` not yet seen are `names` it
    /// just wrote, or not its own yet.
    pub(in crate::controller) fn all_named<'a>(
        &self,
        kind: &str,
        namespace: &str,
        owner: &str,
        names: impl IntoIterator<Item = &'a String>,
    ) -> Option<bool> {
        let owner = digest64(owner);
        let named: std::collections::HashSet<u128> =
            names.into_iter().map(|n| key(kind, namespace, n)).collect();
        let shards = self.shards.lock().ok()?;
        let covering = covering(&shards, kind, namespace)?;
        let all = covering.iter().all(|shard| {
            shard
                .entries()
                .iter()
                .filter(|(_, entry)| entry.controller == Some(owner))
                .all(|(key, _)| named.contains(key))
        });
        (!covering.is_empty()).then_some(all)
    }

    /// Records that a read, for a stack at `generation`, found no `namespace/name` the stack
    /// controls.
    pub(in crate::controller) fn confirmed_absent(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        generation: Option<i64>,
    ) {
        let Some(generation) = generation else {
            return;
        };
        let key = key(kind, namespace, name);
        // What was checked of it is gone with it.
        if let Ok(mut checked) = self.checked.lock() {
            checked.remove(&key);
        }
        if let Ok(mut absent) = self.confirmed_absent.lock() {
            if absent.len() >= MAX_CONFIRMED_ABSENT {
                absent.clear();
            }
            absent.insert(key, generation);
        }
    }

    /// Records that the operator checked `namespace/name` at `resource_version` (it wrote that
    /// version, or read it and found nothing to change).
    pub(in crate::controller) fn checked(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        resource_version: Option<&str>,
    ) {
        let Some(version) = resource_version.and_then(|v| v.parse::<u64>().ok()) else {
            return;
        };
        if let Ok(mut checked) = self.checked.lock() {
            checked.insert(key(kind, namespace, name), version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Service;
    use kube::core::PartialObjectMeta;
    use serde_json::json;

    fn object(
        name: &str,
        version: &str,
        hash: Option<&str>,
        owner: Option<&str>,
    ) -> PartialObjectMeta<Service> {
        let mut meta = json!({"name": name, "namespace": "ns", "resourceVersion": version});
        if let Some(hash) = hash {
            meta["annotations"] = json!({DESIRED_HASH: hash});
        }
        if let Some(owner) = owner {
            meta["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "X", "name": "x", "uid": owner, "controller": true}]);
        }
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service", "metadata": meta}))
            .unwrap()
    }

    /// `event` of the watch of Services in every namespace for `door`.
    fn event(index: &OwnedIndex, door: &str, event: Event<PartialObjectMeta<Service>>) {
        index.observe("Service", None, door, &event);
    }

    fn listed(index: &OwnedIndex, scope: Option<&str>, objects: Vec<PartialObjectMeta<Service>>) {
        index.observe(
            "Service",
            scope,
            "door",
            &Event::<PartialObjectMeta<Service>>::Init,
        );
        for o in objects {
            index.observe("Service", scope, "door", &Event::InitApply(o));
        }
        index.observe(
            "Service",
            scope,
            "door",
            &Event::<PartialObjectMeta<Service>>::InitDone,
        );
    }

    #[test]
    fn nothing_is_answered_before_the_watch_has_listed() {
        let index = OwnedIndex::default();
        assert_eq!(index.lookup("Service", "ns", "a", Some(1)), Known::Unknown);
        event(&index, "door", Event::Init);
        event(
            &index,
            "door",
            Event::InitApply(object("a", "5", None, None)),
        );
        assert_eq!(index.lookup("Service", "ns", "a", Some(1)), Known::Unknown);
        event(&index, "door", Event::InitDone);
        assert!(matches!(
            index.lookup("Service", "ns", "a", Some(1)),
            Known::Present(_)
        ));
        assert_eq!(
            index.lookup("Service", "ns", "b", Some(1)),
            Known::Absent { confirmed: false }
        );
        // Another kind has no watch here.
        assert_eq!(index.lookup("Ingress", "ns", "a", Some(1)), Known::Unknown);
        // A re-list in progress answers nothing until it is done.
        event(&index, "door", Event::Init);
        assert_eq!(index.lookup("Service", "ns", "b", Some(1)), Known::Unknown);
    }

    #[test]
    fn whether_all_an_owner_controls_is_named_is_answered_once_every_door_has_listed() {
        let index = OwnedIndex::default();
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(index.all_named("Service", "ns", "u", &names(&["a"])), None);
        listed(
            &index,
            None,
            vec![
                object("a", "1", None, Some("u")),
                object("x", "1", None, Some("other")),
            ],
        );
        assert_eq!(
            index.all_named("Service", "ns", "u", &names(&["a"])),
            Some(true)
        );
        assert_eq!(
            index.all_named("Service", "ns", "u", &names(&[])),
            Some(false)
        );
        // Another owner's object needs no name.
        assert_eq!(
            index.all_named("Service", "ns", "other", &names(&["x"])),
            Some(true)
        );
        // An object of the owner's in another door's watch counts too.
        event(&index, "other-door", Event::Init);
        assert_eq!(
            index.all_named("Service", "ns", "u", &names(&["a"])),
            None,
            "a door still listing"
        );
        event(
            &index,
            "other-door",
            Event::InitApply(object("b", "2", None, Some("u"))),
        );
        event(&index, "other-door", Event::InitDone);
        assert_eq!(
            index.all_named("Service", "ns", "u", &names(&["a"])),
            Some(false)
        );
        assert_eq!(
            index.all_named("Service", "ns", "u", &names(&["a", "b"])),
            Some(true)
        );
        // Deleted: no longer there to name.
        event(
            &index,
            "other-door",
            Event::Delete(object("b", "3", None, Some("u"))),
        );
        assert_eq!(
            index.all_named("Service", "ns", "u", &names(&["a"])),
            Some(true)
        );
        // Another kind has no watch.
        assert_eq!(index.all_named("Secret", "ns", "u", &names(&[])), None);
    }

    #[test]
    fn a_namespaced_watch_answers_only_for_its_namespace() {
        let index = OwnedIndex::default();
        listed(&index, Some("ns"), vec![]);
        assert_eq!(
            index.lookup("Service", "ns", "a", Some(1)),
            Known::Absent { confirmed: false }
        );
        assert_eq!(
            index.lookup("Service", "other", "a", Some(1)),
            Known::Unknown
        );
    }

    #[test]
    fn a_version_is_checked_until_anyone_changes_the_object() {
        let index = OwnedIndex::default();
        listed(
            &index,
            None,
            vec![object("a", "5", Some("h1"), Some("uid-1"))],
        );
        let Known::Present(seen) = index.lookup("Service", "ns", "a", Some(1)) else {
            panic!()
        };
        assert!(seen.carries("h1") && !seen.carries("h2"));
        assert!(seen.controlled_by("uid-1") && !seen.controlled_by("uid-2"));
        assert!(!seen.checked(), "never checked");
        index.checked("Service", "ns", "a", Some("5"));
        let Known::Present(seen) = index.lookup("Service", "ns", "a", Some(1)) else {
            panic!()
        };
        assert!(seen.checked());
        // Someone else's edit: a new version, not checked.
        index.observe(
            "Service",
            None,
            "door",
            &Event::Apply(object("a", "7", Some("h1"), Some("uid-1"))),
        );
        let Known::Present(seen) = index.lookup("Service", "ns", "a", Some(1)) else {
            panic!()
        };
        assert!(!seen.checked());
        // The operator's own write, recorded before its event arrives, is checked once it does.
        index.checked("Service", "ns", "a", Some("9"));
        index.observe(
            "Service",
            None,
            "door",
            &Event::Apply(object("a", "9", Some("h1"), Some("uid-1"))),
        );
        let Known::Present(seen) = index.lookup("Service", "ns", "a", Some(1)) else {
            panic!()
        };
        assert!(seen.checked());
        event(&index, "door", Event::Delete(object("a", "9", None, None)));
        assert_eq!(
            index.lookup("Service", "ns", "a", Some(1)),
            Known::Absent { confirmed: false }
        );
        // A new object of the same name is not the one checked.
        index.observe(
            "Service",
            None,
            "door",
            &Event::Apply(object("a", "9", Some("h1"), None)),
        );
        let Known::Present(seen) = index.lookup("Service", "ns", "a", Some(1)) else {
            panic!()
        };
        assert!(!seen.checked());
    }

    /// The race the scale bench found at 10,000 stacks: a reconcile between the operator's write
    /// of an object and that write's watch event must not take the object for absent (and
    /// apply it again), nor hold it present once a read found it gone.
    #[test]
    fn an_object_the_operator_wrote_is_not_absent_before_its_event() {
        let index = OwnedIndex::default();
        listed(&index, None, vec![]);
        index.checked("Service", "ns", "a", Some("5"));
        assert_eq!(
            index.lookup("Service", "ns", "a", Some(1)),
            Known::Unknown,
            "written, not yet seen: read, not applied again"
        );
        index.observe(
            "Service",
            None,
            "door",
            &Event::Apply(object("a", "5", Some("h1"), Some("uid-1"))),
        );
        assert!(matches!(
            index.lookup("Service", "ns", "a", Some(1)),
            Known::Present(seen) if seen.checked()
        ));
        // Gone before its event was seen: once a read confirms it absent, it is absent.
        index.checked("Service", "ns", "b", Some("6"));
        index.confirmed_absent("Service", "ns", "b", Some(1));
        assert_eq!(
            index.lookup("Service", "ns", "b", Some(1)),
            Known::Absent { confirmed: true }
        );
    }

    #[test]
    fn an_absence_is_confirmed_for_one_generation() {
        let index = OwnedIndex::default();
        listed(&index, None, vec![]);
        index.confirmed_absent("Service", "ns", "a", Some(3));
        assert_eq!(
            index.lookup("Service", "ns", "a", Some(3)),
            Known::Absent { confirmed: true }
        );
        assert_eq!(
            index.lookup("Service", "ns", "a", Some(4)),
            Known::Absent { confirmed: false }
        );
        index.clear();
        assert_eq!(index.lookup("Service", "ns", "a", Some(3)), Known::Unknown);
    }

    #[test]
    fn an_object_in_two_doors_watches_is_read() {
        let index = OwnedIndex::default();
        listed(&index, None, vec![object("a", "5", None, None)]);
        event(&index, "other-door", Event::Init);
        event(
            &index,
            "other-door",
            Event::InitApply(object("a", "6", None, None)),
        );
        event(&index, "other-door", Event::InitDone);
        assert_eq!(index.lookup("Service", "ns", "a", Some(1)), Known::Unknown);
    }

    #[test]
    fn a_relist_replaces_what_was_known() {
        let index = OwnedIndex::default();
        listed(&index, None, vec![object("a", "5", None, None)]);
        listed(&index, None, vec![object("b", "6", None, None)]);
        assert_eq!(
            index.lookup("Service", "ns", "a", Some(1)),
            Known::Absent { confirmed: false }
        );
        assert!(matches!(
            index.lookup("Service", "ns", "b", Some(1)),
            Known::Present(_)
        ));
    }

    #[test]
    fn either_door_answers_and_an_unsynced_one_answers_nothing() {
        let index = OwnedIndex::default();
        listed(&index, None, vec![object("a", "5", None, None)]);
        event(&index, "other-door", Event::Init);
        assert_eq!(index.lookup("Service", "ns", "a", Some(1)), Known::Unknown);
        event(&index, "other-door", Event::InitDone);
        assert!(matches!(
            index.lookup("Service", "ns", "a", Some(1)),
            Known::Present(_)
        ));
        assert_eq!(
            index.lookup("Service", "ns", "b", Some(1)),
            Known::Absent { confirmed: false }
        );
    }

    #[test]
    fn an_object_without_a_numeric_version_is_never_answered_for() {
        let index = OwnedIndex::default();
        listed(&index, None, vec![]);
        event(&index, "door", Event::Apply(object("a", "x1", None, None)));
        // Resource versions are numbers on every etcd-backed server; another server's object
        // is read, never taken as absent.
        assert_eq!(index.lookup("Service", "ns", "a", Some(1)), Known::Unknown);
    }
}
