//! Which `OGXServer`s are known to hold no Service or Ingress taken from another stack, so a
//! server that asks to take none lists them (to hand back what it took before) once, not on
//! every reconcile: at 100 servers those two lists were 6 of the 10 reads a server cost until
//! quiet (issue 62). Only the operator takes an object for a server, and only while its
//! annotation asks: a server that asks again is forgotten here, so its next reconcile without
//! the annotation lists again. Servers not reconciled for [`FORGET_AFTER`] (deleted ones) are
//! dropped, which costs a list, never a wrong answer.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longer than the resync period (5 min), so a live server is always seen again before.
const FORGET_AFTER: Duration = Duration::from_secs(30 * 60);

/// Per server uid: when it was last found to hold nothing taken.
#[derive(Default)]
pub(in crate::controller) struct HandedBack {
    clear: Mutex<HashMap<String, Instant>>,
}

impl HandedBack {
    /// Whether the server `uid` is known to hold nothing taken; notes that it is still there.
    pub(in crate::controller) fn holds_nothing(&self, uid: &str, now: Instant) -> bool {
        let mut clear = self.clear.lock().unwrap_or_else(|p| p.into_inner());
        clear.get_mut(uid).map(|seen| *seen = now).is_some()
    }

    /// Records that a list found nothing taken held by `uid`, and forgets servers not seen for
    /// [`FORGET_AFTER`].
    pub(in crate::controller) fn found_nothing(&self, uid: &str, now: Instant) {
        let mut clear = self.clear.lock().unwrap_or_else(|p| p.into_inner());
        clear.retain(|_, seen| now.duration_since(*seen) < FORGET_AFTER);
        clear.insert(uid.to_owned(), now);
    }

    /// Forgets `uid`: its annotation asks to take something, so it may hold it soon.
    pub(in crate::controller) fn may_take(&self, uid: &str) {
        let mut clear = self.clear.lock().unwrap_or_else(|p| p.into_inner());
        clear.remove(uid);
    }

    /// Forgets every server: the controllers start again (a new leadership term), and another
    /// replica may have taken objects for one meanwhile.
    pub(in crate::controller) fn clear(&self) {
        let mut clear = self.clear.lock().unwrap_or_else(|p| p.into_inner());
        clear.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_listed_until_a_list_finds_nothing_and_again_once_it_asks_to_take() {
        let memory = HandedBack::default();
        let now = Instant::now();
        assert!(!memory.holds_nothing("a", now), "never listed");
        memory.found_nothing("a", now);
        assert!(memory.holds_nothing("a", now));
        assert!(!memory.holds_nothing("b", now), "another server");
        memory.may_take("a");
        assert!(
            !memory.holds_nothing("a", now),
            "it asked to take: listed again"
        );
        memory.found_nothing("a", now);
        memory.clear();
        assert!(!memory.holds_nothing("a", now), "a new term: listed again");
    }

    #[test]
    fn servers_not_seen_for_a_while_are_forgotten() {
        let memory = HandedBack::default();
        let start = Instant::now();
        memory.found_nothing("deleted", start);
        memory.found_nothing("live", start);
        let later = start + FORGET_AFTER - Duration::from_secs(1);
        assert!(memory.holds_nothing("live", later));
        memory.found_nothing("other", start + FORGET_AFTER + Duration::from_secs(1));
        let map = memory.clear.lock().unwrap();
        assert!(!map.contains_key("deleted"));
        assert!(map.contains_key("live"), "seen since");
    }
}
