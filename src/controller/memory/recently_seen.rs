//! A value remembered per object uid for as long as the object keeps being reconciled. A
//! controller without finalizers is not told when an object is deleted, so an entry not looked at
//! for [`FORGET_AFTER`] is dropped (at the next insert): the map never outgrows the objects that
//! exist, and a forgotten live object costs one read again, never a wrong answer.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Longer than the resync period (5 min), so a live object is always looked at again before.
pub(in crate::controller) const FORGET_AFTER: Duration = Duration::from_secs(30 * 60);

struct Entry<V> {
    value: V,
    seen: Instant,
}

/// Per object uid: a value and when the object was last looked at.
pub(in crate::controller) struct RecentlySeen<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
}

impl<V> Default for RecentlySeen<V> {
    fn default() -> Self {
        RecentlySeen {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<V> RecentlySeen<V> {
    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry<V>>> {
        // A panic while holding the lock leaves whole entries: the map stays usable.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `read` makes of the value remembered for `uid` (`None`: nothing is); notes that the
    /// object is still there.
    pub(in crate::controller) fn look<R>(
        &self,
        uid: &str,
        now: Instant,
        read: impl FnOnce(&V) -> R,
    ) -> Option<R> {
        let mut entries = self.entries();
        let entry = entries.get_mut(uid)?;
        entry.seen = now;
        Some(read(&entry.value))
    }

    /// Remembers `value` for `uid`, and forgets the objects not looked at for [`FORGET_AFTER`].
    pub(in crate::controller) fn remember(&self, uid: &str, value: V, now: Instant) {
        let mut entries = self.entries();
        entries.retain(|_, entry| now.duration_since(entry.seen) < FORGET_AFTER);
        entries.insert(uid.to_owned(), Entry { value, seen: now });
    }

    /// Forgets every object.
    pub(in crate::controller) fn forget_all(&self) {
        self.entries().clear();
    }

    /// How many objects are remembered.
    #[cfg(test)]
    pub(in crate::controller) fn len(&self) -> usize {
        self.entries().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_looked_at_stay_and_the_others_go_at_the_next_insert() {
        let memory = RecentlySeen::default();
        let start = Instant::now();
        memory.remember("deleted", 1, start);
        memory.remember("live", 2, start);
        // The live object is reconciled on every resync; the deleted one never again.
        let mut now = start;
        for _ in 0..7 {
            now += Duration::from_secs(300);
            assert_eq!(memory.look("live", now, |v| *v), Some(2));
        }
        assert_eq!(memory.len(), 2, "nothing is dropped before an insert");
        memory.remember("new", 3, now);
        assert_eq!(memory.len(), 2, "the deleted object's entry is gone");
        assert_eq!(memory.look("deleted", now, |v| *v), None);
        assert_eq!(
            memory.look("live", now, |v| *v),
            Some(2),
            "the live one stays"
        );
    }

    #[test]
    fn forgetting_all() {
        let memory = RecentlySeen::default();
        let now = Instant::now();
        memory.remember("a", (), now);
        memory.forget_all();
        assert_eq!(memory.look("a", now, |_| ()), None);
        assert_eq!(memory.len(), 0);
    }
}
