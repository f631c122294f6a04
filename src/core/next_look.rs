//! When to reconcile a stack again, as a pure decision.
//!
//! A Ready stack is looked at on the resync; a blocked one after its step's retry; one that is
//! not Ready yet once more when its rollout has gone [`YOUNG_ROLLOUT`] without progress (the
//! look that lists its Pods for the status: `reads::PODS_AFTER`), and then on the resync. Watch
//! events wake a stack whenever its rollout moves: the Deployment's (a Pod became available, the
//! progress deadline passed) and its server Pods' (a crash loop, an image that cannot be pulled,
//! an init container's step), so nothing a timed look would see is missed. Until issue 62 the
//! Pods were not watched and a pending rollout was looked at on a clock that slowed as it
//! waited; at 10,000 stacks that could not start, those looks were the operator's reads
//! (29 a stack until quiet, each a read of the Deployment and a list of its Pods) and made it
//! 3.5 times slower than the floor.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;

/// Steady state: re-resolve tags and re-check references this often.
pub const RESYNC: Duration = Duration::from_secs(300);
/// A rollout that has gone this long without progress is looked at once, with its Pods.
pub(crate) const YOUNG_ROLLOUT: Duration = Duration::from_secs(10);
/// The look at a young rollout comes this long after it turns [`YOUNG_ROLLOUT`]: the times the
/// wait is counted from are whole seconds.
const AFTER_THE_TURN: Duration = Duration::from_secs(1);
/// While the old stack's Pods stop for a volume taken over: look again this soon.
pub const ADOPTION_POLL: Duration = Duration::from_secs(5);
/// A revision was just rejected: restore the last Ready one this soon.
const ROLL_BACK: Duration = Duration::from_secs(1);

/// What the decision reads of a reconcile's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// A step was blocked and asks to be retried after this long.
    pub retry: Option<Duration>,
    /// The stack is Ready.
    pub ready: bool,
    /// The newest revision was rejected in this reconcile.
    pub rolled_back: bool,
    /// How long the rollout has gone without progress ([`waited`]); `None` when unknown.
    pub waited: Option<Duration>,
    /// The server's answers are due again after this long (Ready stacks only).
    pub server_due: Option<Duration>,
}

/// How long until the next reconcile.
pub fn after(outcome: Outcome) -> Duration {
    let requeue = if outcome.rolled_back {
        // The rejection is stored; the next reconcile returns the Deployment to the last Ready
        // revision (the status write's watch event usually comes first: a recorded rejection
        // passes the stacks' predicate filter, `watches::worth_a_reconcile`).
        ROLL_BACK
    } else if let Some(retry) = outcome.retry {
        retry
    } else if outcome.ready {
        RESYNC
    } else {
        rollout_look(outcome.waited.unwrap_or_default())
    };
    match outcome.server_due.filter(|_| outcome.ready) {
        Some(due) => requeue.min(due),
        None => requeue,
    }
}

/// The look at a rollout that has gone `waited` without progress: when it turns
/// [`YOUNG_ROLLOUT`], else (it has been looked at with its Pods, and every change of them or of
/// the Deployment wakes it) at the resync.
fn rollout_look(waited: Duration) -> Duration {
    match YOUNG_ROLLOUT.checked_sub(waited) {
        Some(left) if !left.is_zero() => left + AFTER_THE_TURN,
        _ => RESYNC,
    }
}

/// How long the Deployment's rollout has gone without progress at `now`: since the latest of
/// its creation, the operator's last change to it (its field manager's entry), and the
/// Deployment controller's last recorded progress (the `Progressing` condition's update time).
/// A clock behind those times counts as no wait.
pub fn waited(deployment: &Deployment, field_manager: &str, now: Timestamp) -> Option<Duration> {
    let created = deployment.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let changed = deployment
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.manager.as_deref() == Some(field_manager))
        .filter_map(|entry| entry.time.as_ref().map(|t| t.0));
    let progressed = deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.type_ == "Progressing")
        .filter_map(|c| c.last_update_time.as_ref().map(|t| t.0));
    let since = created.into_iter().chain(changed).chain(progressed).max()?;
    let waited = now.duration_since(since);
    Some(Duration::try_from(waited).unwrap_or_default())
}

#[cfg(test)]
#[path = "tests/next_look.rs"]
mod tests;
