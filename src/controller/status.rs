//! Status conditions (pure): `lastTransitionTime` changes only when a condition's status
//! changes, and the phase follows from the conditions.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::api::common::DistributionPhase;

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
    pub fn set(&mut self, type_: &str, ok: bool, reason: &str, message: impl Into<String>) {
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
            reason: reason.to_owned(),
            message: message.into(),
            last_transition_time,
            observed_generation: self.generation,
        });
    }

    /// Drops a condition that no longer applies (e.g. `StorageReady` once storage is removed).
    pub fn remove(&mut self, type_: &str) {
        self.current.retain(|c| c.type_ != type_);
    }

    /// Whether a condition is present and `False`.
    pub fn is_false(&self, type_: &str) -> bool {
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
    pub fn failure_reason_of(&self, type_: &str) -> Option<&str> {
        self.current
            .iter()
            .find(|c| c.type_ == type_ && c.status == "False")
            .map(|c| c.reason.as_str())
    }

    /// The reason of the first `False` spec condition (for metrics).
    pub fn failure_reason(&self) -> Option<String> {
        [
            "ConfigGenerated",
            "SecretsResolved",
            "ExternalProvidersReady",
        ]
        .iter()
        .find_map(|t| self.failure_reason_of(t))
        .map(str::to_owned)
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
    let failed = ["ConfigGenerated", "SecretsResolved"]
        .iter()
        .any(|t| conditions.is_false(t))
        || conditions.failure_reason_of("ExternalProvidersReady") == Some("ExternalProviderFailed");
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

    #[test]
    fn transition_time_is_kept_while_the_status_stays() {
        let mut first = Conditions::new(&[], Some(1));
        first.set("Available", false, "ReplicasUnavailable", "0/1");
        let stored = first.into_sorted();
        let mut second = Conditions::new(&stored, Some(2));
        second.set("Available", false, "ReplicasUnavailable", "0/1 still");
        assert!(
            second.changed().is_empty(),
            "same status and reason: no event"
        );
        let kept = second.into_sorted();
        assert_eq!(kept[0].last_transition_time, stored[0].last_transition_time);
        assert_eq!(kept[0].observed_generation, Some(2));
        assert_eq!(kept[0].message, "0/1 still");

        let mut third = Conditions::new(&kept, Some(2));
        third.set("Available", true, "MinimumReplicasAvailable", "1/1");
        assert_eq!(third.changed().len(), 1);
    }

    #[test]
    fn phase_prefers_failure_then_presence_then_readiness() {
        let mut c = Conditions::new(&[], None);
        assert_eq!(phase(&c, false, false), DistributionPhase::Pending);
        assert_eq!(phase(&c, true, false), DistributionPhase::Initializing);
        assert_eq!(phase(&c, true, true), DistributionPhase::Ready);
        c.set("SecretsResolved", false, "SecretNotFound", "x");
        assert_eq!(phase(&c, true, true), DistributionPhase::Failed);
        c.remove("SecretsResolved");
        assert_eq!(phase(&c, true, true), DistributionPhase::Ready);
    }
}
