//! Which rollout state each stack's old ConfigMaps were last pruned at, so the prune (a LIST of
//! ConfigMaps) runs once per settled rollout and not on every resync. Stacks not reconciled for a
//! while (deleted ones: nothing else tells a controller without finalizers) are dropped
//! (`recently_seen`), so the map never outgrows the stacks that exist.

use std::time::Instant;

use super::recently_seen::RecentlySeen;

/// The rollout state a prune ran at: the Deployment's generation and whether it had settled.
pub(in crate::controller) type RolloutState = (i64, bool);

/// Per object uid, the rollout state of its last prune.
#[derive(Default)]
pub(in crate::controller) struct PruneMarks {
    marks: RecentlySeen<RolloutState>,
}

impl PruneMarks {
    /// Whether `uid` at `state` needs a prune; notes that the stack is still there.
    pub(in crate::controller) fn needs_prune(
        &self,
        uid: &str,
        state: RolloutState,
        now: Instant,
    ) -> bool {
        self.marks
            .look(uid, now, |pruned_at| *pruned_at != state)
            .unwrap_or(true)
    }

    /// Records a prune of `uid` at `state`.
    pub(in crate::controller) fn pruned(&self, uid: &str, state: RolloutState, now: Instant) {
        self.marks.remember(uid, state, now);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
        assert_eq!(marks.marks.len(), 2, "the deleted stack's mark is gone");
        assert!(
            !marks.needs_prune("live", (1, true), now),
            "the live one stays"
        );
    }
}
