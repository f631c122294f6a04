//! The Secrets and ConfigMaps a reconcile reads by name (the ones a spec references, the pull
//! secrets of the server's ServiceAccount), read once per change instead of on every look (issue
//! 62). The metadata watches that map a referenced object's change to its stacks already see every
//! such object in scope; this keeps, per object, its resource version, and the object as last
//! read while that version stands. A reconcile then reads nothing for an object whose version it
//! read before, nor for one a read found missing while the watch still sees none; any event moves
//! the version and drops the copy, so the next look reads the new one. A missing object is read
//! once before the watch's word is taken: an object created just before the stack that names it
//! may reach the stack's reconcile before its own watch event does.
//!
//! On OpenShift every namespace's `default` ServiceAccount names a dockercfg pull secret, which
//! every look of every stack read. The copies hold Secret values, as any controller's cache of
//! the Secrets it reads does: only in memory, only those read, never logged (the type has no
//! `Debug`), and dropped with the object's next change or deletion.
//!
//! Each watch (one per scope and door) answers only once it has listed, and not while it lists
//! again ([`Listing`]); before that, and in a reconcile run without watches (the tests' direct
//! reconciles), every answer is [`Known::Unknown`] and the object is read as before. Objects are
//! keyed by a digest of their namespace and name, about 50 bytes an object without a copy: a
//! digest shared by two names can only make an absent object look present, which costs a read.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;
use sha2::{Digest as _, Sha256};

use super::listing::{Listing, WatchScope};

/// What the watches know of one object.
pub(in crate::controller) enum Known<T> {
    /// No watch that would see it answers (or its version is not a number): read it.
    Unknown,
    /// It does not exist (a read found none, and the watch has seen none since).
    Absent,
    /// It exists at a version not read yet, or the watch has not seen it and no read has found
    /// it missing: read it, and [`ReadOnce::keep`] what was read.
    Changed,
    /// It exists as it was read at its current version.
    Read(Arc<T>),
}

struct Entry<T> {
    /// `None` when not a number: never answered for.
    version: Option<u64>,
    /// The object as read at `version`.
    copy: Option<Arc<T>>,
}

/// What one watch has listed, and the objects a read found missing while it saw none.
struct Watch<T> {
    listing: Listing<u128, Entry<T>>,
    read_missing: HashSet<u128>,
}

impl<T> Default for Watch<T> {
    fn default() -> Self {
        Self {
            listing: Listing::default(),
            read_missing: HashSet::new(),
        }
    }
}

/// At most this many objects found missing are remembered a watch; beyond it they are forgotten
/// at once, which costs a read, not a wrong answer.
const MAX_READ_MISSING: usize = 100_000;

/// The objects of one kind, per watch (see the module documentation).
pub(in crate::controller) struct ReadOnce<T> {
    watches: Mutex<HashMap<WatchScope, Watch<T>>>,
}

impl<T> Default for ReadOnce<T> {
    fn default() -> Self {
        Self {
            watches: Mutex::new(HashMap::new()),
        }
    }
}

fn key(namespace: &str, name: &str) -> u128 {
    let mut hasher = Sha256::new();
    for part in [namespace, name] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let bytes = hasher.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&bytes[..16]);
    u128::from_le_bytes(first)
}

fn version(resource_version: Option<&str>) -> Option<u64> {
    resource_version.and_then(|v| v.parse().ok())
}

fn meta_key(meta: &kube::core::ObjectMeta) -> u128 {
    key(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

fn unread<T>(meta: &kube::core::ObjectMeta) -> Entry<T> {
    Entry {
        version: version(meta.resource_version.as_deref()),
        copy: None,
    }
}

impl<T> ReadOnce<T> {
    /// Takes in one event of the metadata watch over `scope` for `door`.
    pub(in crate::controller) fn observe(
        &self,
        scope: Option<&str>,
        door: &'static str,
        event: &Event<PartialObjectMeta<T>>,
    ) {
        let Ok(mut watches) = self.watches.lock() else {
            return;
        };
        let listing = &mut watches
            .entry((scope.map(str::to_owned), door))
            .or_default()
            .listing;
        match event {
            Event::Init => listing.begin(),
            Event::InitApply(object) => {
                listing.listed(meta_key(&object.metadata), unread(&object.metadata));
            }
            Event::InitDone => {
                listing.done();
            }
            Event::Apply(object) => {
                listing
                    .entries_mut()
                    .insert(meta_key(&object.metadata), unread(&object.metadata));
            }
            Event::Delete(object) => {
                listing.entries_mut().remove(&meta_key(&object.metadata));
            }
        }
    }

    /// Forgets everything: the controllers start again (a new leadership term), and their
    /// watches list again.
    pub(in crate::controller) fn clear(&self) {
        if let Ok(mut watches) = self.watches.lock() {
            watches.clear();
        }
    }

    /// What `door`'s watches say of `namespace/name`.
    pub(in crate::controller) fn lookup(
        &self,
        namespace: &str,
        name: &str,
        door: &str,
    ) -> Known<T> {
        let Ok(watches) = self.watches.lock() else {
            return Known::Unknown;
        };
        let Some(watch) = covering(&watches, namespace, door) else {
            return Known::Unknown;
        };
        let key = key(namespace, name);
        match watch.listing.entries().get(&key) {
            None if watch.read_missing.contains(&key) => Known::Absent,
            None => Known::Changed,
            Some(Entry { version: None, .. }) => Known::Unknown,
            Some(Entry {
                copy: Some(copy), ..
            }) => Known::Read(copy.clone()),
            Some(Entry { copy: None, .. }) => Known::Changed,
        }
    }

    /// Keeps `object`, read at `resource_version`, as `namespace/name` is while `door`'s watch
    /// still has it at that version (a read that raced an event is not kept: the event's
    /// version differs).
    pub(in crate::controller) fn keep(
        &self,
        namespace: &str,
        name: &str,
        door: &str,
        resource_version: Option<&str>,
        object: Arc<T>,
    ) {
        let Some(read_at) = version(resource_version) else {
            return;
        };
        let Ok(mut watches) = self.watches.lock() else {
            return;
        };
        let Some(watch) = covering_mut(&mut watches, namespace, door) else {
            return;
        };
        if let Some(entry) = watch.listing.entries_mut().get_mut(&key(namespace, name))
            && entry.version == Some(read_at)
        {
            entry.copy = Some(object);
        }
    }
}

impl<T> ReadOnce<T> {
    /// Records that a read found no `namespace/name`; it answers as missing while `door`'s watch
    /// sees none (one it saw meanwhile was created after the read).
    pub(in crate::controller) fn read_missing(&self, namespace: &str, name: &str, door: &str) {
        let Ok(mut watches) = self.watches.lock() else {
            return;
        };
        let Some(watch) = covering_mut(&mut watches, namespace, door) else {
            return;
        };
        let key = key(namespace, name);
        if watch.listing.entries().contains_key(&key) {
            return;
        }
        if watch.read_missing.len() >= MAX_READ_MISSING {
            watch.read_missing.clear();
        }
        watch.read_missing.insert(key);
    }
}

fn covers(id: &WatchScope, namespace: &str, door: &str) -> bool {
    id.1 == door && id.0.as_deref().is_none_or(|s| s == namespace)
}

fn covering<'a, T>(
    watches: &'a HashMap<WatchScope, Watch<T>>,
    namespace: &str,
    door: &str,
) -> Option<&'a Watch<T>> {
    watches
        .iter()
        .find(|(id, watch)| covers(id, namespace, door) && watch.listing.answers())
        .map(|(_, watch)| watch)
}

fn covering_mut<'a, T>(
    watches: &'a mut HashMap<WatchScope, Watch<T>>,
    namespace: &str,
    door: &str,
) -> Option<&'a mut Watch<T>> {
    watches
        .iter_mut()
        .find(|(id, watch)| covers(id, namespace, door) && watch.listing.answers())
        .map(|(_, watch)| watch)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Secret;
    use serde_json::json;

    use super::*;

    const DOOR: &str = "llama-stack-operator";

    fn meta(name: &str, version: &str) -> PartialObjectMeta<Secret> {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": version}}))
        .unwrap()
    }

    fn secret(value: &str) -> Arc<Secret> {
        Arc::new(serde_json::from_value(json!({"stringData": {"token": value}})).unwrap())
    }

    fn token(known: Known<Secret>) -> Option<String> {
        match known {
            Known::Read(s) => s.string_data.as_ref()?.get("token").cloned(),
            _ => None,
        }
    }

    fn listed(memory: &ReadOnce<Secret>, objects: &[(&str, &str)]) {
        memory.observe(None, DOOR, &Event::Init);
        for (name, version) in objects {
            memory.observe(None, DOOR, &Event::InitApply(meta(name, version)));
        }
        memory.observe(None, DOOR, &Event::InitDone);
    }

    #[test]
    fn an_object_is_read_once_per_version_and_a_missing_one_not_at_all() {
        let memory = ReadOnce::<Secret>::default();
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Unknown),
            "not listed"
        );
        listed(&memory, &[("a", "5")]);
        assert!(
            matches!(memory.lookup("ns", "missing", DOOR), Known::Changed),
            "read once: it may have been created before its event came"
        );
        memory.read_missing("ns", "missing", DOOR);
        assert!(matches!(
            memory.lookup("ns", "missing", DOOR),
            Known::Absent
        ));
        memory.observe(None, DOOR, &Event::Apply(meta("missing", "9")));
        assert!(
            matches!(memory.lookup("ns", "missing", DOOR), Known::Changed),
            "created"
        );
        memory.observe(None, DOOR, &Event::Apply(meta("late", "10")));
        memory.read_missing("ns", "late", DOOR);
        assert!(
            matches!(memory.lookup("ns", "late", DOOR), Known::Changed),
            "a read that found none before the object's event is not taken"
        );
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Changed),
            "never read"
        );
        memory.keep("ns", "a", DOOR, Some("5"), secret("one"));
        assert_eq!(
            token(memory.lookup("ns", "a", DOOR)).as_deref(),
            Some("one")
        );

        memory.observe(None, DOOR, &Event::Apply(meta("a", "6")));
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Changed),
            "a change"
        );
        memory.keep("ns", "a", DOOR, Some("5"), secret("stale"));
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Changed),
            "a read of the old version is not kept"
        );
        memory.keep("ns", "a", DOOR, Some("6"), secret("two"));
        assert_eq!(
            token(memory.lookup("ns", "a", DOOR)).as_deref(),
            Some("two")
        );

        memory.observe(None, DOOR, &Event::Delete(meta("a", "7")));
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Changed),
            "deleted: read once to confirm"
        );
    }

    #[test]
    fn only_a_listed_watch_of_the_door_over_the_namespace_answers() {
        let memory = ReadOnce::<Secret>::default();
        memory.observe(Some("other"), DOOR, &Event::Init);
        memory.observe(Some("other"), DOOR, &Event::InitDone);
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Unknown),
            "a watch of another namespace"
        );
        listed(&memory, &[("a", "5")]);
        assert!(
            matches!(memory.lookup("ns", "a", "ogx-operator"), Known::Unknown),
            "another door's reconciles read their own watch"
        );
        memory.keep("ns", "a", DOOR, Some("5"), secret("one"));
        memory.observe(None, DOOR, &Event::Init);
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Unknown),
            "listing again"
        );
        memory.observe(None, DOOR, &Event::InitApply(meta("a", "5")));
        memory.observe(None, DOOR, &Event::InitDone);
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Changed),
            "a relist drops the copies: the watch was away, a change may have been missed"
        );
        memory.observe(None, DOOR, &Event::Apply(meta("b", "not-a-number")));
        assert!(matches!(memory.lookup("ns", "b", DOOR), Known::Unknown));
        memory.clear();
        assert!(
            matches!(memory.lookup("ns", "a", DOOR), Known::Unknown),
            "a new term"
        );
    }
}
