//! Which rollout state each stack's old ConfigMaps were last pruned at, so the prune (a LIST of
//! ConfigMaps) runs once per settled rollout and not on every resync. Stacks not reconciled for
//! [`FORGET_AFTER`] (deleted ones: nothing else tells a controller without finalizers) are dropped,
//! so the map never outgrows the stacks that exist.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longer than the resync period (5 min), so a live stack is always seen again before.
const FORGET_AFTER: Duration = Duration::from_secs(30 * 60);

/// The rollout state a prune ran at: the Deployment's generation and whether it had settled.
pub(in crate::controller) type RolloutState = (i64, bool);

struct Mark {
    state: RolloutState,
    seen: Instant,
}

/// Per object uid, the rollout state of its last prune.
#[derive(Default)]
pub(in crate::controller) struct PruneMarks {
    marks: Mutex<HashMap<String, Mark>>,
}

impl PruneMarks {
    /// Whether `uid` at `state` needs a prune; notes that the stack is still there.
    pub(in crate::controller) fn needs_prune(
        &self,
        uid: &str,
        state: RolloutState,
        now: Instant,
    ) -> bool {
        let mut marks = self.marks.lock().unwrap_or_else(|p| p.into_inner());
        match marks.get_mut(uid) {
            Some(mark) => {
                mark.seen = now;
                mark.state != state
            }
            None => true,
        }
    }

    /// Records a prune of `uid` at `state`, and forgets stacks not seen for [`FORGET_AFTER`].
    pub(in crate::controller) fn pruned(&self, uid: &str, state: RolloutState, now: Instant) {
        let mut marks = self.marks.lock().unwrap_or_else(|p| p.into_inner());
        marks.retain(|_, mark| now.duration_since(mark.seen) < FORGET_AFTER);
        marks.insert(uid.to_owned(), Mark { state, seen: now });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.marks.lock().map(|m| m.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prunes_once_per_rollout_state() {
        let marks = PruneMarks::default();
        let now = Instant::now();
        assert!(marks.needs_prune("a", (1, false), now));
        marks.pruned("a", (1, false), now);
        assert!(!marks.needs_prune("a", (1, false), now));
        assert!(
            marks.needs_prune("a", (1, true), now),
            "settled is a new state"
        );
        assert!(marks.needs_prune("a", (2, false), now), "a new generation");
    }

    #[test]
    fn stacks_not_seen_for_a_while_are_forgotten() {
        let marks = PruneMarks::default();
        let start = Instant::now();
        marks.pruned("deleted", (1, true), start);
        marks.pruned("live", (1, true), start);
        // The live stack is reconciled on every resync; the deleted one never again.
        let mut now = start;
        for _ in 0..7 {
            now += Duration::from_secs(300);
            assert!(!marks.needs_prune("live", (1, true), now));
        }
        marks.pruned("new", (1, false), now);
        assert_eq!(marks.len(), 2, "the deleted stack's mark is gone");
        assert!(
            !marks.needs_prune("live", (1, true), now),
            "the live one stays"
        );
    }
}
