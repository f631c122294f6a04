//! The status writes made in the last few seconds, so a reconcile that runs on a cache that has
//! not yet seen the operator's own write does not write (and announce) the same status again.
//!
//! A write of the status reaches the controller's cache a moment later, through the watch. A
//! reconcile in between (triggered by a Deployment or Pod event) starts from the old status,
//! derives the state just written, finds it "changed", and would patch it again and publish its
//! Events a second time. Within [`WINDOW`] of a write, the same content is taken as written.
//! After the window, a difference means someone else changed the status, and it is written.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Far longer than a watch takes to deliver an event, far shorter than any resync.
const WINDOW: Duration = Duration::from_secs(30);

/// Status fields that hold the time a state was reached: a reconcile on a stale cache derives the
/// same state with a later time, which is not a change.
const TIMES: [&str; 4] = [
    "lastTransitionTime",
    "lastUpdated",
    "generatedAt",
    "pinnedAt",
];

/// Per object uid: the digest of the last status written and when.
#[derive(Default)]
pub(in crate::controller) struct RecentWrites {
    by_uid: Mutex<HashMap<String, (u64, Instant)>>,
}

/// A digest of a status without its times.
pub(in crate::controller) fn digest(status: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    feed(status, &mut hasher);
    hasher.finish()
}

fn feed(value: &Value, hasher: &mut DefaultHasher) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                if TIMES.contains(&key.as_str()) {
                    continue;
                }
                key.hash(hasher);
                feed(value, hasher);
            }
        }
        Value::Array(items) => {
            items.len().hash(hasher);
            for item in items {
                feed(item, hasher);
            }
        }
        other => other.to_string().hash(hasher),
    }
}

impl RecentWrites {
    /// Whether a status with `digest` was written for `uid` within the window.
    pub(in crate::controller) fn just_written(&self, uid: &str, digest: u64, now: Instant) -> bool {
        let by_uid = self.by_uid.lock().unwrap_or_else(|p| p.into_inner());
        by_uid
            .get(uid)
            .is_some_and(|(d, at)| *d == digest && now.duration_since(*at) < WINDOW)
    }

    /// Notes a write, and forgets writes older than the window (the map holds only the stacks
    /// written in the last seconds).
    pub(in crate::controller) fn wrote(&self, uid: &str, digest: u64, now: Instant) {
        let mut by_uid = self.by_uid.lock().unwrap_or_else(|p| p.into_inner());
        by_uid.retain(|_, (_, at)| now.duration_since(*at) < WINDOW);
        by_uid.insert(uid.to_owned(), (digest, now));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_uid.lock().map(|m| m.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_same_state_at_a_later_time_has_the_same_digest() {
        let at = |t: &str| {
            json!({"phase": "Ready", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": t}],
                   "version": {"llamaStackServerVersion": "0.7.3", "lastUpdated": t}})
        };
        assert_eq!(
            digest(&at("2026-01-01T00:00:00Z")),
            digest(&at("2026-01-01T00:00:09Z"))
        );
        let other = json!({"phase": "Failed", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "x"}]});
        assert_ne!(digest(&at("x")), digest(&other));
        // Values are not confused with keys or with other shapes.
        assert_ne!(digest(&json!({"a": "b"})), digest(&json!({"b": "a"})));
        assert_ne!(digest(&json!([["a"], "b"])), digest(&json!([["a", "b"]])));
    }

    #[test]
    fn a_write_counts_only_within_the_window() {
        let writes = RecentWrites::default();
        let start = Instant::now();
        writes.wrote("a", 7, start);
        assert!(writes.just_written("a", 7, start + Duration::from_secs(1)));
        assert!(
            !writes.just_written("a", 8, start),
            "other content is a change"
        );
        assert!(!writes.just_written("b", 7, start), "another object");
        assert!(
            !writes.just_written("a", 7, start + WINDOW),
            "after the window a difference is someone else's change"
        );
    }

    #[test]
    fn old_writes_are_forgotten() {
        let writes = RecentWrites::default();
        let start = Instant::now();
        writes.wrote("a", 1, start);
        writes.wrote("b", 1, start + WINDOW);
        assert_eq!(writes.len(), 1);
    }
}
