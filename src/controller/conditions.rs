//! Status conditions (pure): `lastTransitionTime` changes only when a condition's status
//! changes, and the phase follows from the conditions.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::api::common::DistributionPhase;
use crate::api::conditions::{ConditionType, Reason};

/// Conditions whose `False` means the spec cannot be served (the phase is `Failed`), in the
/// order their reason is reported.
const SPEC_CONDITIONS: [ConditionType; 3] = [
    ConditionType::ConfigGenerated,
    ConditionType::SecretsResolved,
    ConditionType::ExternalProvidersReady,
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
}

impl Conditions {
    /// Starts from the stored conditions, for the object's `generation`.
    pub fn new(previous: &[Condition], generation: Option<i64>) -> Self {
        Self {
            previous: previous.to_vec(),
            current: previous.to_vec(),
            generation,
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
        let type_ = type_.as_str();
        let status = if ok { "True" } else { "False" };
        let last_transition_time = self
            .previous
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| Time(jiff::Timestamp::now()));
        self.current.retain(|c| c.type_ != type_);
        self.current.push(Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.as_str().to_owned(),
            message: message.into(),
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

    /// Whether a condition is present and `False`.
    pub fn is_false(&self, type_: ConditionType) -> bool {
        self.failure_reason_of(type_).is_some()
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

    /// The reason of a condition that is `False`.
    pub fn failure_reason_of(&self, type_: ConditionType) -> Option<&str> {
        self.current
            .iter()
            .find(|c| c.type_ == type_.as_str() && c.status == "False")
            .map(|c| c.reason.as_str())
    }

    /// The reason of the first `False` spec condition, or of a rollback (for metrics).
    pub fn failure_reason(&self) -> Option<String> {
        SPEC_CONDITIONS
            .iter()
            .find_map(|t| self.failure_reason_of(*t))
            .or_else(|| self.rollback_reason())
            .map(str::to_owned)
    }

    /// `RolledBack` or `RollbackNotPossible`, when `DeploymentUpdated` says so: the spec's
    /// revision cannot run, so the phase is `Failed` even while the old revision serves.
    pub fn rollback_reason(&self) -> Option<&str> {
        self.failure_reason_of(ConditionType::DeploymentUpdated)
            .filter(|r| {
                [Reason::RolledBack, Reason::RollbackNotPossible]
                    .iter()
                    .any(|x| x.as_str() == *r)
            })
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
    // Installing external providers is progress, not failure: only a failed step fails the phase.
    let failed = conditions.is_false(ConditionType::ConfigGenerated)
        || conditions.is_false(ConditionType::SecretsResolved)
        || conditions.failure_reason_of(ConditionType::ExternalProvidersReady)
            == Some(Reason::ExternalProviderFailed.as_str())
        || conditions
            .failure_reason_of(ConditionType::DeploymentReady)
            .is_some_and(|r| super::rollout::TROUBLE.iter().any(|t| t.as_str() == r))
        || conditions.rollback_reason().is_some();
    if failed {
        DistributionPhase::Failed
    } else if !has_deployment {
        DistributionPhase::Pending
    } else if ready {
        DistributionPhase::Ready
    } else {
        DistributionPhase::Initializing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConditionType::*;
    use Reason::*;

    #[test]
    fn transition_time_is_kept_while_the_status_stays() {
        let mut first = Conditions::new(&[], Some(1));
        first.set(Available, false, ReplicasUnavailable, "0/1");
        let stored = first.into_sorted();
        let mut second = Conditions::new(&stored, Some(2));
        second.set(Available, false, ReplicasUnavailable, "0/1 still");
        assert!(
            second.changed().is_empty(),
            "same status and reason: no event"
        );
        let kept = second.into_sorted();
        assert_eq!(kept[0].last_transition_time, stored[0].last_transition_time);
        assert_eq!(kept[0].observed_generation, Some(2));
        assert_eq!(kept[0].message, "0/1 still");

        let mut third = Conditions::new(&kept, Some(2));
        third.set(Available, true, MinimumReplicasAvailable, "1/1");
        assert_eq!(third.changed().len(), 1);
    }

    #[test]
    fn phase_prefers_failure_then_presence_then_readiness() {
        let mut c = Conditions::new(&[], None);
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
}
