//! The operator's health: whether start-up finished, and whether a watch of the controller has
//! been failing for too long (then `/healthz` fails and the kubelet restarts the operator).
//!
//! Each watch is judged on its own ([`WatchId`]: its kind and role, the door it serves, the
//! namespace it covers): a namespaced install whose RoleBinding is missing in one namespace has
//! that namespace's watches failing while the same kinds list fine elsewhere.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Labels of a watch's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabels {
    /// The watched kind (`LlamaStackDistribution`, `Deployment`, …).
    pub kind: String,
}

/// One watch: what it watches (the kind, with its role where a kind is watched for more than one
/// thing), whose it is (the door whose reconciles read it; none for the operator's own
/// settings) and where (one namespace, or all of them).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WatchId {
    /// The watched kind (`Secret`, `ServiceAccount default`, …): the metrics' `kind` label.
    pub kind: &'static str,
    /// The door's `managed-by` value, if the watch is one door's.
    pub door: Option<&'static str>,
    /// The namespace watched; `None` for all of them.
    pub namespace: Option<String>,
}

impl WatchId {
    /// The watch of `kind` in every namespace, of no door.
    pub fn of(kind: &'static str) -> Self {
        Self {
            kind,
            door: None,
            namespace: None,
        }
    }

    /// This watch, as `door`'s.
    #[must_use]
    pub fn for_door(mut self, door: &'static str) -> Self {
        self.door = Some(door);
        self
    }

    /// This watch, over `namespace` only (`None`: all of them).
    #[must_use]
    pub fn within(mut self, namespace: Option<&str>) -> Self {
        self.namespace = namespace.map(str::to_owned);
        self
    }
}

impl std::fmt::Display for WatchId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind)?;
        if let Some(door) = self.door {
            write!(f, " for {door}")?;
        }
        match &self.namespace {
            Some(namespace) => write!(f, " in namespace {namespace}"),
            None => f.write_str(" in all namespaces"),
        }
    }
}

/// How long a watch may keep failing before the health endpoints say the operator is stuck.
pub const DEFAULT_WATCH_STUCK_AFTER: Duration = Duration::from_secs(60);

/// How often a watch that keeps failing is logged again at warning level.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// The health of the controller's watches: each one's failures, counted (by kind), logged (at
/// warning level, with the watch and the reason, at most every 30 s while it keeps failing) and
/// judged, each watch on its own.
#[derive(Debug)]
pub struct WatchHealth {
    stuck_after: Mutex<Duration>,
    quiet: Mutex<Duration>,
    failing: Mutex<BTreeMap<WatchId, Failing>>,
    errors: Family<WatchLabels, Counter>,
    relists: Family<WatchLabels, Counter>,
}

/// A watch that has failed and not been seen working since.
#[derive(Debug)]
struct Failing {
    since: Instant,
    warned: Instant,
    /// The latest error. A watch that works again may send no event for a long time (a watch
    /// resumed from its resource version on a quiet kind), but a broken one errs again within
    /// its longest backoff; so a failure this old means the watch works again.
    last: Instant,
    reason: String,
}

/// How long without a new error means a watch works again (three of its longest retry waits).
const QUIET_MEANS_RECOVERED: Duration = Duration::from_secs(15);

impl WatchHealth {
    /// A watch health that counts errors and relists in these families.
    pub(super) fn new(
        errors: Family<WatchLabels, Counter>,
        relists: Family<WatchLabels, Counter>,
    ) -> Self {
        Self {
            stuck_after: Mutex::new(DEFAULT_WATCH_STUCK_AFTER),
            quiet: Mutex::new(QUIET_MEANS_RECOVERED),
            failing: Mutex::new(BTreeMap::new()),
            errors,
            relists,
        }
    }

    /// Sets how long a watch may keep failing before the operator counts as stuck.
    pub fn set_stuck_after(&self, bound: Duration) {
        *lock(&self.stuck_after) = bound;
    }

    /// Records that `watch` answered (listed, or sent an event): it works again. `relist` when it
    /// finished a new list.
    pub fn succeeded(&self, watch: &WatchId, relist: bool) {
        if relist {
            self.relists.get_or_create(&labels(watch.kind)).inc();
        }
        if let Some(failing) = lock(&self.failing).remove(watch) {
            tracing::info!(%watch, after = ?failing.since.elapsed(), "watch recovered");
        }
    }

    /// Records an error of `watch` (it is retried after its own backoff).
    pub fn failed(&self, watch: &WatchId, error: &dyn std::fmt::Display) {
        self.failed_at(watch, error, Instant::now());
    }

    /// [`WatchHealth::failed`] at `now`.
    pub(super) fn failed_at(&self, watch: &WatchId, error: &dyn std::fmt::Display, now: Instant) {
        self.errors.get_or_create(&labels(watch.kind)).inc();
        let reason = error.to_string();
        let quiet = *lock(&self.quiet);
        let mut failing_watches = lock(&self.failing);
        match failing_watches.get_mut(watch) {
            Some(failing) if now.duration_since(failing.last) < quiet => {
                if now.duration_since(failing.warned) >= WARN_EVERY {
                    tracing::warn!(%watch, %reason, failing_for = ?now.duration_since(failing.since), "watch still failing; retrying");
                    failing.warned = now;
                }
                failing.reason = reason;
                failing.last = now;
            }
            // New, or the first error after a quiet spell: a new failure.
            _ => {
                tracing::warn!(%watch, %reason, "watch failed; retrying");
                let failing = Failing {
                    since: now,
                    warned: now,
                    last: now,
                    reason,
                };
                failing_watches.insert(watch.clone(), failing);
            }
        }
    }

    /// Forgets every watch (the controller stopped: its watches no longer run).
    pub fn clear(&self) {
        lock(&self.failing).clear();
    }

    /// Sets how long without a new error means a watch works again.
    pub fn set_recovery_quiet(&self, quiet: Duration) {
        *lock(&self.quiet) = quiet;
    }

    /// The watches failing for longer than the bound (and still failing), each as
    /// `<watch>: reason (for …)`.
    pub fn stuck(&self) -> Vec<String> {
        self.stuck_at(Instant::now())
    }

    /// [`WatchHealth::stuck`] at `now`.
    pub(super) fn stuck_at(&self, now: Instant) -> Vec<String> {
        let bound = *lock(&self.stuck_after);
        let quiet = *lock(&self.quiet);
        lock(&self.failing)
            .iter()
            .filter(|(_, f)| {
                now.duration_since(f.since) > bound && now.duration_since(f.last) < quiet
            })
            .map(|(watch, f)| {
                let failing_for = now.duration_since(f.since);
                format!("{watch}: {} (for {failing_for:?})", f.reason)
            })
            .collect()
    }
}

fn labels(kind: &str) -> WatchLabels {
    WatchLabels {
        kind: kind.to_owned(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Liveness and readiness: ready once start-up finished, and both fail while a watch of the
/// controller has been failing for longer than its bound (a kubelet then restarts the operator
/// instead of leaving it deaf).
#[derive(Debug, Default)]
pub struct Health {
    ready: AtomicBool,
    watches: std::sync::OnceLock<Arc<WatchHealth>>,
}

impl Health {
    /// Marks the process ready (start-up finished).
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// Also judges the health of these watches.
    pub fn follow_watches(&self, watches: Arc<WatchHealth>) {
        let _ = self.watches.set(watches);
    }

    /// Whether start-up finished.
    pub(super) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Why the operator is not healthy, if it is not.
    pub(super) fn problem(&self) -> Option<String> {
        self.problem_at(Instant::now())
    }

    /// [`Health::problem`] at `now`.
    pub(super) fn problem_at(&self, now: Instant) -> Option<String> {
        let stuck = self
            .watches
            .get()
            .map(|w| w.stuck_at(now))
            .unwrap_or_default();
        (!stuck.is_empty()).then(|| format!("watches failing: {}", stuck.join("; ")))
    }
}
