//! Status conditions (pure): `lastTransitionTime` changes only when a condition's status
//! changes, and the phase follows from the conditions.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::api::common::DistributionPhase;
use crate::api::conditions::{ConditionType, Reason};

/// Where the reason of a `Failed` phase is found, in order (see [`fails_phase`]).
const FAILURE_EXPLAINED_BY: [ConditionType; 5] = [
    ConditionType::ConfigGenerated,
    ConditionType::SecretsResolved,
    ConditionType::ExternalProvidersReady,
    ConditionType::DeploymentUpdated,
    ConditionType::DeploymentReady,
];

/// Where what a converging stack waits for is found, in order.
const PROGRESS_EXPLAINED_BY: [ConditionType; 5] = [
    ConditionType::DeploymentUpdated,
    ConditionType::StorageReady,
    ConditionType::ExternalProvidersReady,
    ConditionType::DeploymentReady,
    ConditionType::Available,
];

/// The summary conditions: derived from the others, never the cause of an Event of their own.
pub const SUMMARY: [ConditionType; 3] = [
    ConditionType::Ready,
    ConditionType::Reconciling,
    ConditionType::Stalled,
];

/// A problem the user must fix, found by a step: the condition that says so and when to look
/// again. The objects stay exactly as they were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// The condition set to `False`.
    pub condition: ConditionType,
    /// Its reason.
    pub reason: Reason,
    /// Its message: what is wrong and how to fix it.
    pub message: String,
    /// When to reconcile again (a watch event usually comes first).
    pub retry: Duration,
}

impl Blocked {
    /// A problem in the spec or the image.
    pub fn spec(condition: ConditionType, reason: Reason, message: String) -> Self {
        Self {
            condition,
            reason,
            message,
            retry: Duration::from_secs(30),
        }
    }

    /// A referenced object that is missing or unusable; its watch usually reports the fix first.
    pub fn reference(condition: ConditionType, reason: Reason, message: String) -> Self {
        Self {
            retry: Duration::from_secs(15),
            ..Self::spec(condition, reason, message)
        }
    }
}

/// The conditions of one reconcile, starting from the stored ones.
#[derive(Clone, Debug)]
pub struct Conditions {
    previous: Vec<Condition>,
    current: Vec<Condition>,
    generation: Option<i64>,
    /// The transition time of a condition whose status changes.
    now: jiff::Timestamp,
}

impl Conditions {
    /// Starts from the stored conditions, for the object's `generation`, at `now`.
    pub fn new(previous: &[Condition], generation: Option<i64>, now: jiff::Timestamp) -> Self {
        Self {
            previous: previous.to_vec(),
            current: previous.to_vec(),
            generation,
            now,
        }
    }

    /// Sets a condition, keeping its transition time when the status is unchanged.
    pub fn set(
        &mut self,
        type_: ConditionType,
        ok: bool,
        reason: Reason,
        message: impl Into<String>,
    ) {
        self.set_word(type_, ok, reason.as_str(), message.into());
    }

    /// [`Self::set`] with a reason copied from another condition.
    fn set_word(&mut self, type_: ConditionType, ok: bool, reason: &str, message: String) {
        let type_ = type_.as_str();
        let status = if ok { "True" } else { "False" };
        let last_transition_time = self
            .previous
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or(Time(self.now));
        self.current.retain(|c| c.type_ != type_);
        self.current.push(Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            last_transition_time,
            observed_generation: self.generation,
        });
    }

    /// Records what blocked the reconcile.
    pub fn block(&mut self, blocked: Blocked) {
        self.set(blocked.condition, false, blocked.reason, blocked.message);
    }

    /// Drops a condition that no longer applies (e.g. `StorageReady` once storage is removed).
    pub fn remove(&mut self, type_: ConditionType) {
        self.current.retain(|c| c.type_ != type_.as_str());
    }

    /// Conditions whose status or reason differ from the stored ones (worth an Event).
    pub fn changed(&self) -> Vec<&Condition> {
        self.current
            .iter()
            .filter(|c| {
                !self
                    .previous
                    .iter()
                    .any(|p| p.type_ == c.type_ && p.status == c.status && p.reason == c.reason)
            })
            .collect()
    }

    /// The reason the phase is `Failed`, if it is (for metrics).
    pub fn failure_reason(&self) -> Option<String> {
        self.failing().map(|c| c.reason.clone())
    }

    /// The first condition of `types` that is False and passes `which`.
    fn first_false(
        &self,
        types: &[ConditionType],
        which: fn(&Condition) -> bool,
    ) -> Option<&Condition> {
        types.iter().find_map(|t| {
            self.current
                .iter()
                .find(|c| c.type_ == t.as_str() && c.status == "False" && which(c))
        })
    }

    /// The condition that fails the phase, if one does.
    fn failing(&self) -> Option<&Condition> {
        self.first_false(&FAILURE_EXPLAINED_BY, fails_phase)
    }

    /// Sets the summary conditions standard tools read (KEP-1623; kstatus as Flux, Argo CD and
    /// kpt use it; `kubectl wait --for=condition=Ready`) from the phase: `Ready`, always there;
    /// `Reconciling` and `Stalled`, only while True (as kstatus expects of abnormal-true
    /// conditions). A False `Ready` and a True `Reconciling` or `Stalled` carry the reason and
    /// message of the detailed condition that explains them.
    pub fn summarize(&mut self, phase: DistributionPhase) {
        let (ready, reconciling, stalled) = match phase {
            DistributionPhase::Ready => {
                let message = self
                    .current
                    .iter()
                    .find(|c| c.type_ == ConditionType::DeploymentReady.as_str())
                    .map(|c| c.message.clone())
                    .unwrap_or_default();
                self.set(ConditionType::Ready, true, Reason::Ready, message);
                (true, false, false)
            }
            DistributionPhase::Failed => (false, false, true),
            DistributionPhase::Pending | DistributionPhase::Initializing => (false, true, false),
            // Never set by the operator (a deleted object is gone at once: no finalizer).
            DistributionPhase::Terminating => return,
        };
        let (reason, message) = if stalled {
            self.failing()
        } else {
            self.first_false(&PROGRESS_EXPLAINED_BY, |_| true)
        }
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_else(|| {
            (
                Reason::Progressing.as_str().to_owned(),
                "the operator has not yet observed this generation to the end".to_owned(),
            )
        });
        if !ready {
            self.set_word(ConditionType::Ready, false, &reason, message.clone());
        }
        for (type_, on) in [
            (ConditionType::Reconciling, reconciling),
            (ConditionType::Stalled, stalled),
        ] {
            if on {
                self.set_word(type_, true, &reason, message.clone());
            } else {
                self.remove(type_);
            }
        }
    }

    /// The conditions, sorted by type (a stable order: no status write for a reordering).
    pub fn into_sorted(mut self) -> Vec<Condition> {
        self.current.sort_by(|a, b| a.type_.cmp(&b.type_));
        self.current
    }
}

/// Failed when the spec cannot be served, else Pending without a Deployment, Ready when every
/// desired replica is available, else Initializing.
pub fn phase(conditions: &Conditions, has_deployment: bool, ready: bool) -> DistributionPhase {
    if conditions.failing().is_some() {
        DistributionPhase::Failed
    } else if !has_deployment {
        DistributionPhase::Pending
    } else if ready {
        DistributionPhase::Ready
    } else {
        DistributionPhase::Initializing
    }
}

/// Whether a False condition fails the phase: the spec cannot be served until a person acts.
fn fails_phase(condition: &Condition) -> bool {
    let reason = condition.reason.as_str();
    let is = |reasons: &[Reason]| reasons.iter().any(|r| r.as_str() == reason);
    match condition.type_.as_str() {
        t if t == ConditionType::ConfigGenerated.as_str() => true,
        t if t == ConditionType::SecretsResolved.as_str() => true,
        // Installing external providers is progress, not failure: only a failed step fails.
        t if t == ConditionType::ExternalProvidersReady.as_str() => {
            is(&[Reason::ExternalProviderFailed])
        }
        // A write the API server refused: the revision asked for is not running, whatever the
        // old Pods say.
        t if t == ConditionType::DeploymentUpdated.as_str() => is(&[
            Reason::RolledBack,
            Reason::RollbackNotPossible,
            Reason::ApplyFailed,
        ]),
        t if t == ConditionType::DeploymentReady.as_str() => is(&super::rollout::TROUBLE),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConditionType::*;
    use Reason::*;

    #[test]
    fn transition_time_is_kept_while_the_status_stays() {
        let mut first = Conditions::new(&[], Some(1), jiff::Timestamp::now());
        first.set(Available, false, ReplicasUnavailable, "0/1");
        let stored = first.into_sorted();
        let mut second = Conditions::new(&stored, Some(2), jiff::Timestamp::now());
        second.set(Available, false, ReplicasUnavailable, "0/1 still");
        assert!(
            second.changed().is_empty(),
            "same status and reason: no event"
        );
        let kept = second.into_sorted();
        assert_eq!(kept[0].last_transition_time, stored[0].last_transition_time);
        assert_eq!(kept[0].observed_generation, Some(2));
        assert_eq!(kept[0].message, "0/1 still");

        let mut third = Conditions::new(&kept, Some(2), jiff::Timestamp::now());
        third.set(Available, true, MinimumReplicasAvailable, "1/1");
        assert_eq!(third.changed().len(), 1);
    }

    #[test]
    fn phase_prefers_failure_then_presence_then_readiness() {
        let mut c = Conditions::new(&[], None, jiff::Timestamp::now());
        assert_eq!(phase(&c, false, false), DistributionPhase::Pending);
        assert_eq!(phase(&c, true, false), DistributionPhase::Initializing);
        assert_eq!(phase(&c, true, true), DistributionPhase::Ready);
        c.set(SecretsResolved, false, SecretNotFound, "x");
        assert_eq!(phase(&c, true, true), DistributionPhase::Failed);
        c.remove(SecretsResolved);
        assert_eq!(phase(&c, true, true), DistributionPhase::Ready);
        c.set(
            ConditionType::ExternalProvidersReady,
            false,
            ExternalProvidersInstalling,
            "0 of 1",
        );
        assert_eq!(phase(&c, true, false), DistributionPhase::Initializing);
        c.set(
            ConditionType::ExternalProvidersReady,
            false,
            ExternalProviderFailed,
            "x",
        );
        assert_eq!(phase(&c, true, false), DistributionPhase::Failed);
        assert_eq!(
            c.failure_reason().as_deref(),
            Some("ExternalProviderFailed")
        );
        c.remove(ConditionType::ExternalProvidersReady);
        assert_eq!(phase(&c, true, true), DistributionPhase::Ready);
    }

    fn summary(c: &Conditions) -> Vec<(String, String, String)> {
        c.current
            .iter()
            .filter(|c| SUMMARY.iter().any(|t| t.as_str() == c.type_))
            .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    fn row(t: &str, s: &str, r: &str) -> (String, String, String) {
        (t.to_owned(), s.to_owned(), r.to_owned())
    }

    #[test]
    fn the_summary_follows_the_phase_with_the_reason_that_explains_it() {
        let mut c = Conditions::new(&[], Some(4), jiff::Timestamp::now());
        c.set(
            ConditionType::DeploymentReady,
            false,
            DeploymentPending,
            "Deployment is pending",
        );
        c.summarize(phase(&c, false, false));
        assert_eq!(
            summary(&c),
            [
                row("Ready", "False", "DeploymentPending"),
                row("Reconciling", "True", "DeploymentPending")
            ]
        );
        c.set(
            ConditionType::ExternalProvidersReady,
            false,
            ExternalProvidersInstalling,
            "0 of 1",
        );
        c.set(
            ConditionType::DeploymentReady,
            false,
            InitContainerCrashLooping,
            "boom",
        );
        c.summarize(phase(&c, true, false));
        assert_eq!(
            summary(&c),
            [
                row("Ready", "False", "InitContainerCrashLooping"),
                row("Stalled", "True", "InitContainerCrashLooping")
            ],
            "the condition that fails the phase explains Stalled, not one that only waits"
        );
        c.remove(ConditionType::ExternalProvidersReady);
        c.set(
            ConditionType::DeploymentReady,
            true,
            Reason::DeploymentReady,
            "Deployment is ready",
        );
        c.summarize(phase(&c, true, true));
        assert_eq!(summary(&c), [row("Ready", "True", "Ready")]);
        c.set(
            DeploymentUpdated,
            false,
            RolledBack,
            "returned to the last Ready revision",
        );
        c.summarize(phase(&c, true, true));
        assert_eq!(
            summary(&c),
            [
                row("Ready", "False", "RolledBack"),
                row("Stalled", "True", "RolledBack")
            ],
            "serving an older revision is not serving the spec"
        );
        assert!(
            c.current.iter().all(|c| c.observed_generation == Some(4)),
            "every condition names the generation it describes"
        );
    }

    #[test]
    fn a_stack_with_no_detailed_reason_yet_is_progressing() {
        let mut c = Conditions::new(&[], Some(1), jiff::Timestamp::now());
        c.summarize(DistributionPhase::Initializing);
        assert_eq!(
            summary(&c),
            [
                row("Ready", "False", "Progressing"),
                row("Reconciling", "True", "Progressing")
            ]
        );
    }
}
