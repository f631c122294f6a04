//! Automatic rollback, as pure decisions: when the newest revision of a stack cannot start and
//! no Pod of an older revision serves (a stack with storage rolls with `Recreate`; a drained
//! node, a scale from zero), return the Deployment to the last revision that was Ready.
//!
//! The memory lives in `status.rollback` (so an operator restart forgets nothing): `lastReady`
//! is recorded whenever a revision has every replica Ready; `rejected` when a revision is rolled
//! back from. The last Ready revision is restored from its ReplicaSet, the way `kubectl rollout
//! undo` does it: Kubernetes copies the Deployment's annotations, the operator's desired hash
//! among them, to the ReplicaSet of each revision, and keeps that ReplicaSet (scaled to zero) in
//! the Deployment's history.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use super::observed::Observed;
use super::rollout;
use super::stack::Stack;
use crate::api::common::RollbackPolicy;
use crate::api::conditions::Reason;
use crate::api::v1alpha2::{RejectedRevision, RevisionStatus, RollbackStatus};
use crate::naming::DESIRED_HASH;

/// The troubles that mean a revision cannot start (rather than wait for a node, an image or a
/// registry): a crash loop of the server or of an init container, or a rollout past its
/// progress deadline.
const CANNOT_START: [Reason; 3] = [
    Reason::ServerCrashLooping,
    Reason::InitContainerCrashLooping,
    Reason::RolloutStalled,
];

/// The label the Deployment controller adds to each revision's Pod template.
const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// The revision number the Deployment controller writes on the Deployment (its newest revision)
/// and on each revision's ReplicaSet.
const REVISION: &str = "deployment.kubernetes.io/revision";

/// What an observed Deployment means for the rollback memory.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Judgement {
    /// Nothing to record or do.
    Steady,
    /// A revision other than the remembered one has every replica Ready: remember it.
    Ready(RevisionStatus),
    /// The newest revision cannot start and nothing serves: reject it, return to `last_ready`.
    RollBack {
        /// The revision that could not start.
        rejected: RejectedRevision,
        /// The last revision that was Ready.
        last_ready: RevisionStatus,
    },
}

/// The stack's rollback policy (`Automatic` unless the spec says `Never`).
pub(crate) fn policy(stack: &Stack<'_>) -> RollbackPolicy {
    stack.workload.rollback.unwrap_or_default()
}

/// The rollback memory in the stored status.
pub(crate) fn memory(stack: &Stack<'_>) -> RollbackStatus {
    stack.recorded.rollback.cloned().unwrap_or_default()
}

/// The operator's desired hash of a Deployment or a ReplicaSet.
pub(crate) fn desired_hash<K: ResourceExt>(object: &K) -> Option<&str> {
    object.annotations().get(DESIRED_HASH).map(String::as_str)
}

/// The revision `deployment` runs, when the operator wrote it.
pub(crate) fn revision_of(deployment: &Deployment) -> Option<RevisionStatus> {
    let config = rollout::config_of(deployment);
    Some(RevisionStatus {
        desired_hash: desired_hash(deployment)?.to_owned(),
        image: rollout::image_of(deployment),
        config_map: Some(config).filter(|c| !c.is_empty()),
    })
}

/// The rejection that still stands for the revision the plan built (`desired_hash`), and the
/// revision to hold instead: the plan's revision was rolled back from and neither the spec (the
/// generation) nor anything it is built from (the hash covers the image, the config and the
/// referenced Secrets) changed since. `None` means: apply the plan.
pub(crate) fn held(
    stack: &Stack<'_>,
    desired_hash: &str,
) -> Option<(RejectedRevision, RevisionStatus)> {
    let (rejected, last_ready) = rejection_of_this_generation(stack)?;
    let stands =
        rejected.revision.desired_hash == desired_hash && last_ready.desired_hash != desired_hash;
    stands.then_some((rejected, last_ready))
}

/// Whether the ReplicaSets are worth reading for [`held`]: the memory holds a rejection made at
/// this generation, and the running Deployment (`current`) is not the last Ready revision, so a
/// hold would return to it from its ReplicaSet. (Whether the plan builds the rejected revision
/// again is decided after the reads.)
pub(crate) fn may_restore(stack: &Stack<'_>, current: Option<&Deployment>) -> bool {
    rejection_of_this_generation(stack).is_some_and(|(_, last_ready)| {
        current.and_then(desired_hash) != Some(last_ready.desired_hash.as_str())
    })
}

/// The rejected revision and the last Ready one, when the memory holds a rejection made at the
/// stack's generation and rollbacks are on: what [`held`] and [`may_restore`] both start from.
fn rejection_of_this_generation(stack: &Stack<'_>) -> Option<(RejectedRevision, RevisionStatus)> {
    if policy(stack) == RollbackPolicy::Never {
        return None;
    }
    let RollbackStatus {
        last_ready,
        rejected,
    } = memory(stack);
    let (rejected, last_ready) = (rejected?, last_ready?);
    (Some(rejected.generation) == stack.generation()).then_some((*rejected, last_ready))
}

/// Judges the Deployment as observed after the apply step (`pods`: its newest revision's Pods,
/// listed when [`judges_pods`] says they decide).
pub(crate) fn judge(
    stack: &Stack<'_>,
    deployment: &Deployment,
    pods: &[Pod],
    now: jiff::Timestamp,
) -> Judgement {
    let (revision, last_ready) = match before_the_pods(stack, deployment) {
        WithoutPods::Decided(judgement) => return judgement,
        WithoutPods::Due {
            revision,
            last_ready,
        } => (revision, last_ready),
    };
    // Past its deadline while a Pod waits for a node is a cluster out of room, not a revision
    // that cannot start: nothing is rolled back (the status says PodUnschedulable).
    if rollout::waiting_for_node(pods) {
        return Judgement::Steady;
    }
    let cause = rollout::trouble(deployment, pods)
        .filter(|t| CANNOT_START.contains(&t.reason))
        .or_else(|| rollout::stalled(deployment));
    match cause {
        Some(trouble) => Judgement::RollBack {
            rejected: RejectedRevision {
                revision,
                generation: stack.generation().unwrap_or_default(),
                reason: trouble.reason.as_str().to_owned(),
                message: trouble.message,
                rejected_at: Some(Time(now)),
            },
            last_ready,
        },
        None => Judgement::Steady,
    }
}

/// Whether [`judge`] looks at the Pods of `deployment`: only a rollback that is due does (a
/// revision not yet Ready, with none of its replicas available, and one to return to); no other
/// judgement needs them listed, nor the ReplicaSets that say which revision each Pod runs.
pub(crate) fn judges_pods(stack: &Stack<'_>, deployment: &Deployment) -> bool {
    matches!(before_the_pods(stack, deployment), WithoutPods::Due { .. })
}

/// What [`judge`] comes to before it looks at the Pods.
enum WithoutPods {
    /// The judgement: the Pods change nothing.
    Decided(Judgement),
    /// A rollback is due if the Pods show that `revision` cannot start.
    Due {
        revision: RevisionStatus,
        last_ready: RevisionStatus,
    },
}

fn before_the_pods(stack: &Stack<'_>, deployment: &Deployment) -> WithoutPods {
    let Some(revision) = revision_of(deployment) else {
        return WithoutPods::Decided(Judgement::Steady);
    };
    let last_ready = memory(stack).last_ready;
    let remembered = last_ready
        .as_ref()
        .is_some_and(|l| l.desired_hash == revision.desired_hash);
    let desired = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let status = deployment.status.clone().unwrap_or_default();
    let available = status.available_replicas.unwrap_or(0);
    if rollout::complete(deployment) {
        return WithoutPods::Decided(if desired > 0 && !remembered {
            Judgement::Ready(revision)
        } else {
            Judgement::Steady
        });
    }
    let observed =
        status.observed_generation.unwrap_or(0) >= deployment.metadata.generation.unwrap_or(0);
    let due = policy(stack) == RollbackPolicy::Automatic
        && !remembered
        && desired > 0
        && available == 0
        && observed;
    match last_ready.filter(|_| due) {
        Some(last_ready) => WithoutPods::Due {
            revision,
            last_ready,
        },
        None => WithoutPods::Decided(Judgement::Steady),
    }
}

/// The message of `DeploymentUpdated` while a rejected revision is held back: the same text
/// every reconcile (no status write at rest).
pub(crate) fn held_message(rejected: &RejectedRevision, last_ready: &RevisionStatus) -> String {
    format!(
        "the new revision ({}) could not start while nothing else served ({}: {}); the Deployment \
         was returned to the last revision that was Ready ({}). The rejected revision is not tried \
         again until the spec, a referenced Secret or ConfigMap, or the resolved image changes",
        describe(&rejected.revision),
        rejected.reason,
        rejected.message,
        describe(last_ready)
    )
}

/// The message of `DeploymentUpdated` when a rollback was due and cannot be made.
pub(crate) fn impossible_message(
    rejected: &RejectedRevision,
    last_ready: &RevisionStatus,
) -> String {
    format!(
        "the new revision ({}) could not start while nothing else served ({}: {}), and the \
         ReplicaSet of the last revision that was Ready ({}) is gone, so there is nothing to return \
         to; fix the spec",
        describe(&rejected.revision),
        rejected.reason,
        rejected.message,
        describe(last_ready)
    )
}

fn describe(revision: &RevisionStatus) -> String {
    match &revision.config_map {
        Some(config) => format!("image {}, config {config}", revision.image),
        None => format!("image {}, the image's own config", revision.image),
    }
}

/// Of `pods`, those of the Deployment's newest revision: the Pods its ReplicaSet of the same
/// revision number owns. An older revision crash-looping (its database down, say) while a fix
/// rolls out says nothing about the fix, so only these are judged. None while the Deployment
/// controller has not yet made the newest ReplicaSet.
pub(crate) fn newest_revision_pods(
    deployment: &Deployment,
    replica_sets: &[ReplicaSet],
    pods: &[Pod],
) -> Vec<Pod> {
    let Some(revision) = deployment.annotations().get(REVISION) else {
        return Vec::new();
    };
    let Some(newest) = replica_sets
        .iter()
        .find(|rs| rs.annotations().get(REVISION) == Some(revision))
        .and_then(|rs| rs.metadata.uid.as_deref())
    else {
        return Vec::new();
    };
    pods.iter()
        .filter(|pod| {
            pod.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.uid == newest)
        })
        .cloned()
        .collect()
}

/// Of a Deployment's ReplicaSets, the one of the revision with `desired_hash`.
pub(crate) fn replica_set_of<'a>(
    replica_sets: &'a [ReplicaSet],
    desired_hash: &str,
) -> Option<&'a ReplicaSet> {
    replica_sets
        .iter()
        .filter(|rs| self::desired_hash(*rs) == Some(desired_hash))
        // Should two carry it (a template changed by hand), the newest revision is the one that ran.
        .max_by_key(|rs| revision_number(rs))
}

fn revision_number(rs: &ReplicaSet) -> i64 {
    rs.annotations()
        .get(REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The planned Deployment (`desired`: its replicas, strategy and metadata follow the spec) with
/// the Pod template of `replica_set` and the desired hash of that revision: what `kubectl
/// rollout undo` would write. `None` when the ReplicaSet has no template.
pub(crate) fn restored(mut desired: Deployment, replica_set: &ReplicaSet) -> Option<Deployment> {
    let hash = desired_hash(replica_set)?.to_owned();
    let mut template = replica_set.spec.as_ref()?.template.clone()?;
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH);
    }
    desired.spec.as_mut()?.template = template;
    desired
        .annotations_mut()
        .insert(DESIRED_HASH.to_owned(), hash);
    Some(desired)
}

/// A revision that could not start, held back: the plan builds it again (nothing it is built
/// from changed), so the last Ready revision runs instead.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldRevision {
    /// The revision rolled back from.
    pub rejected: RejectedRevision,
    /// The revision returned to.
    pub last_ready: RevisionStatus,
    /// How the last Ready revision runs.
    pub how: Held,
}

/// How a held-back stack runs its last Ready revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// The running Deployment is that revision: it stays exactly as it is.
    KeepRunning,
    /// The Deployment returns to it, restored from its ReplicaSet (in [`crate::core::decide::Intent::desired`]).
    Restore,
    /// Its ReplicaSet is gone: nothing to return to, so the plan is applied and the status
    /// says why it fails.
    NothingToRestore,
}

/// Whether the revision `deployment` (as built) was rejected and is held back, and how the last
/// Ready one runs instead; when it is restored from its ReplicaSet, `deployment` becomes it.
pub(crate) fn hold(
    stack: &Stack<'_>,
    deployment: &mut Deployment,
    observed: &Observed,
) -> Option<HeldRevision> {
    let planned_hash = desired_hash(deployment).unwrap_or_default().to_owned();
    let (rejected, last_ready) = held(stack, &planned_hash)?;
    let running = observed.deployment.as_ref().and_then(desired_hash);
    let how = if running == Some(last_ready.desired_hash.as_str()) {
        Held::KeepRunning
    } else {
        let sets = observed.replica_sets.as_deref().unwrap_or_default();
        let restored = replica_set_of(sets, &last_ready.desired_hash)
            .and_then(|rs| restored(deployment.clone(), rs));
        match restored {
            Some(restored) => {
                *deployment = restored;
                Held::Restore
            }
            None => Held::NothingToRestore,
        }
    };
    Some(HeldRevision {
        rejected,
        last_ready,
        how,
    })
}

#[cfg(test)]
#[path = "tests/rollback.rs"]
mod tests;
