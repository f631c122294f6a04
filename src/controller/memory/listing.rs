//! What one watch has listed, kept as entries that answer only once the watch has listed
//! everything, and not while it lists again (a re-list after the watch was away replaces them
//! whole when it is done). The owned-object index and the `default` accounts' pull secrets keep
//! their entries this way.

use std::collections::HashMap;
use std::hash::Hash;

/// The entries of one watch (see the module documentation).
pub(in crate::controller) struct Listing<K, V> {
    /// Whether the watch has finished a list since it started.
    synced: bool,
    entries: HashMap<K, V>,
    /// What a list under way has delivered so far.
    relisting: Option<HashMap<K, V>>,
}

/// Which of a kind's watches a listing is of: the namespace it watches (`None`: all) and the
/// door it serves (its `managed-by` value).
pub(in crate::controller) type WatchScope = (Option<String>, &'static str);

/// The listing of `door`'s watch that covers `namespace` and answers ([`Listing::answers`]).
pub(in crate::controller) fn answering<'a, K: Eq + Hash, V>(
    watches: &'a HashMap<WatchScope, Listing<K, V>>,
    namespace: &str,
    door: &str,
) -> Option<&'a Listing<K, V>> {
    watches
        .iter()
        .find(|((scope, watch_door), listing)| {
            *watch_door == door
                && listing.answers()
                && scope.as_deref().is_none_or(|s| s == namespace)
        })
        .map(|(_, listing)| listing)
}

impl<K, V> Default for Listing<K, V> {
    fn default() -> Self {
        Self {
            synced: false,
            entries: HashMap::new(),
            relisting: None,
        }
    }
}

impl<K: Eq + Hash, V> Listing<K, V> {
    /// Whether the entries answer: the watch has listed, and is not listing again.
    pub(in crate::controller) fn answers(&self) -> bool {
        self.synced && self.relisting.is_none()
    }

    /// The entries (they answer only when [`Self::answers`]).
    pub(in crate::controller) fn entries(&self) -> &HashMap<K, V> {
        &self.entries
    }

    /// The entries, for an event after the list (an object applied or deleted).
    pub(in crate::controller) fn entries_mut(&mut self) -> &mut HashMap<K, V> {
        &mut self.entries
    }

    /// A list begins (`Init`).
    pub(in crate::controller) fn begin(&mut self) {
        self.relisting = Some(HashMap::new());
    }

    /// One object of the list under way (`InitApply`); nothing when none is.
    pub(in crate::controller) fn listed(&mut self, key: K, value: V) {
        if let Some(relisting) = self.relisting.as_mut() {
            relisting.insert(key, value);
        }
    }

    /// The list is done (`InitDone`): what it delivered replaces the entries. Returns the entries
    /// replaced when the watch had listed before (a re-list), `None` after the first list.
    pub(in crate::controller) fn done(&mut self) -> Option<HashMap<K, V>> {
        let relisted = self.relisting.take()?;
        let old = std::mem::replace(&mut self.entries, relisted);
        let first = !self.synced;
        self.synced = true;
        (!first).then_some(old)
    }
}

#[cfg(test)]
mod tests {
    use super::Listing;

    #[test]
    fn entries_answer_only_between_lists_and_a_relist_replaces_them() {
        let mut listing = Listing::<&str, u32>::default();
        assert!(!listing.answers(), "not listed yet");
        listing.begin();
        listing.listed("a", 1);
        assert!(!listing.answers(), "listing");
        assert_eq!(listing.done(), None, "the first list replaces nothing");
        assert!(listing.answers());
        assert_eq!(listing.entries().get("a"), Some(&1));
        listing.entries_mut().insert("b", 2);
        listing.begin();
        assert!(!listing.answers(), "listing again");
        listing.listed("b", 3);
        let old = listing.done().expect("a re-list returns what it replaced");
        assert_eq!(old.len(), 2);
        assert_eq!(
            listing.entries().get("a"),
            None,
            "gone while the watch was away"
        );
        assert_eq!(listing.entries().get("b"), Some(&3));
    }
}
