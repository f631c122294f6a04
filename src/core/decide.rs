//! The decide step, pure: from a stack and what the shell's gather step (`controller::read::gather`) read, everything a reconcile
//! does: which image runs which config (the pin policy and its fallback included), the desired
//! objects, whether a rejected revision is held back and how, or what blocks the stack and why.
//! Nothing here reads or writes; the same inputs always give the same decision.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;

use super::builders::{self, BuildError, Desired, Inputs, ServerConfig};
use super::conditions::Blocked;
use super::observed::{Observed, Reach};
pub use super::plan::Operator;
use super::plan::{self, Planned};
use super::stack::Stack;
use super::take_over::{self, Survey};
use super::{adoption, dereference, rollback};
use crate::api::conditions::{ConditionType, Reason};
use crate::api::v1alpha2::{RejectedRevision, RevisionStatus};
use crate::naming::DESIRED_HASH;
use crate::ownership::controlled_by;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// What one reconcile does.
#[derive(Debug)]
pub struct Decision {
    /// How many Secrets the spec references, once every one was found (`SecretsResolved`);
    /// `None` when the decision stopped before they were checked, or one is missing.
    pub secrets_found: Option<usize>,
    /// The objects to apply, or the problem the user must fix (then nothing is written: the
    /// running Deployment stays exactly as it was).
    pub next: Result<Intent, Blocked>,
    /// What is taken over from another stack, first of the apply: nothing while `next` blocks
    /// (the old stack keeps serving), only what is handed back.
    pub take_over: Survey,
    /// A move in place: what the LlamaStackDistribution of the stack's name owns is handed to
    /// its `OGXServer` first of all ([`take_over::moves_in_place`]), whether or not the server
    /// can run yet: the LlamaStackDistribution stands down as soon as its `OGXServer` exists,
    /// and deleting it then must leave every object to the server (it stays an owner, so
    /// deleting the server instead leaves them to it).
    pub moves_in_place: bool,
}

/// What to apply.
#[derive(Debug)]
pub struct Intent {
    /// Which image runs which config.
    pub planned: Planned,
    /// Every owned object (the Deployment already restored when a held revision says so).
    pub desired: Desired,
    /// A rejected revision the plan would build again, held back instead.
    pub hold: Option<HeldRevision>,
    /// The patch that takes the data volume back from an `OGXServer` that took it and no longer
    /// exists ([`adoption::reclaim_patch`]), made before the volume is mounted.
    pub reclaim: Option<serde_json::Value>,
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
    /// The Deployment returns to it, restored from its ReplicaSet (in [`Intent::desired`]).
    Restore,
    /// Its ReplicaSet is gone: nothing to return to, so the plan is applied and the status
    /// says why it fails.
    NothingToRestore,
}

impl Intent {
    /// Whether the running Deployment is kept as it is instead of the built one.
    pub fn keeps_deployment(&self) -> bool {
        self.hold
            .as_ref()
            .is_some_and(|h| h.how == Held::KeepRunning)
    }
}

/// Decides what one reconcile does. An `Err` is a bug in a builder, not a problem of the spec.
pub fn decide(
    stack: &Stack<'_>,
    observed: &Observed,
    operator: &Operator<'_>,
) -> Result<Decision, BuildError> {
    let (secrets_found, next) = next(stack, observed, operator)?;
    let serving = next
        .as_ref()
        .is_ok_and(|intent| serves_as_is(stack, observed.deployment.as_ref(), intent));
    let take_over = take_over::decided(&observed.take_over, next.is_ok(), serving);
    let moves_in_place =
        take_over::moves_in_place(stack, observed.deployment.as_ref(), observed.claim.as_ref());
    Ok(Decision {
        secrets_found,
        next,
        take_over,
        moves_in_place,
    })
}

/// What the server itself does: how many Secrets were found, and what to apply or what blocks.
type Next = (Option<usize>, Result<Intent, Blocked>);

fn next(
    stack: &Stack<'_>,
    observed: &Observed,
    operator: &Operator<'_>,
) -> Result<Next, BuildError> {
    let current = observed.deployment.as_ref();
    let blocked = |secrets_found, blocked| Ok((secrets_found, Err(blocked)));
    // Two servers must never write one volume: one an `OGXServer` took is not mounted here.
    let taken = (observed.claim.as_ref())
        .filter(|_| !observed.claim_taker_gone)
        .and_then(|c| adoption::taken_by_another(&c.metadata, stack.name));
    if let Some(message) = taken {
        let blocked_by = Blocked::spec(
            ConditionType::ConfigGenerated,
            Reason::AdoptedByOGXServer,
            message,
        );
        return blocked(None, blocked_by);
    }
    let planned = match plan::plan(stack, observed, operator) {
        Ok(planned) => planned,
        Err(failure) => return blocked(None, plan::blocked(stack, failure, current.is_some())),
    };
    let referenced = match referenced(stack, observed, &planned) {
        Ok(referenced) => referenced,
        Err((found, blocked_by)) => return blocked(found, blocked_by),
    };
    let found = referenced.secrets_found;
    let secrets_hash = referenced.rollout_hash.as_deref();
    let inputs = Inputs {
        image: &planned.image,
        server: planned.server,
        // No config content for the image's own, nor for a user's ConfigMap not read (offline).
        generated: Some(&planned.generated)
            .filter(|g| planned.mount != ServerConfig::Image && !g.hash.is_empty()),
        config: planned.mount.clone(),
        ca_bundle: referenced.ca_bundle.as_deref(),
        secrets_hash,
        pull_secrets: &planned.pull_secrets,
        operator_namespace: operator.namespace,
        routes_available: operator.routes_available,
        monitoring_available: operator.monitoring_available,
        operator_image: operator.image.unwrap_or_default(),
        existing_selector: current
            .and_then(|d| d.spec.as_ref())
            .and_then(|s| s.selector.match_labels.as_ref()),
        derived: Some(&referenced.derived),
    };
    let mut desired = builders::desired(stack, &inputs)?;
    let hold = hold(stack, &mut desired.deployment, observed);
    let intent = Intent {
        planned,
        desired,
        hold,
        reclaim: reclaim(stack, observed),
    };
    Ok((found, Ok(intent)))
}

/// Whether the stack's own Deployment (`current`) has an available replica and this reconcile
/// leaves it as it is (no rollout begins): only then does it take another stack's address.
fn serves_as_is(stack: &Stack<'_>, current: Option<&Deployment>, intent: &Intent) -> bool {
    let Some(current) = current.filter(|d| controlled_by(&d.metadata, &stack.subject.uid)) else {
        return false;
    };
    let available = current
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .is_some_and(|n| n > 0);
    let hash = |meta: &ObjectMeta| meta.annotations.as_ref()?.get(DESIRED_HASH).cloned();
    let unchanged = intent.keeps_deployment()
        || hash(&current.metadata)
            .is_some_and(|h| Some(h) == hash(&intent.desired.deployment.metadata));
    available && unchanged
}

/// The claim patch that takes the stack's volume back, where an `OGXServer` took it and is gone.
fn reclaim(stack: &Stack<'_>, observed: &Observed) -> Option<serde_json::Value> {
    let claim = observed
        .claim
        .as_ref()
        .filter(|_| observed.claim_taker_gone)?;
    adoption::taker(&claim.metadata, stack.name)?;
    let owner = stack.subject.owner.as_ref()?;
    Some(adoption::reclaim_patch(&claim.metadata, stack.name, owner))
}

/// What the spec's references give the objects, once judged.
#[derive(Default)]
struct Dereferenced {
    /// How many Secrets are referenced, all found (`None` offline: not read).
    secrets_found: Option<usize>,
    /// The hash that rolls the Pods when a referenced value changes.
    rollout_hash: Option<String>,
    /// The parts of connection strings, for the `<name>-derived` Secret.
    derived: BTreeMap<String, ByteString>,
    /// The CA bundle's certificates.
    ca_bundle: Option<String>,
}

/// The references of `stack` judged from what was read, or what blocks it (with how many
/// Secrets were found, when that far). Offline ([`Reach::Manifests`]) none was read, so none
/// gives anything.
fn referenced(
    stack: &Stack<'_>,
    observed: &Observed,
    planned: &Planned,
) -> Result<Dereferenced, (Option<usize>, Blocked)> {
    if observed.reach == Reach::Manifests {
        return Ok(Dereferenced::default());
    }
    let secrets =
        dereference::secrets(stack, &observed.secrets).map_err(|missing| (None, missing))?;
    let found = Some(secrets.count);
    let derived = dereference::url_parts(&planned.generated, &secrets).map_err(|e| (found, e))?;
    let client_certificate =
        dereference::client_certificate(stack, observed.client_certificate.as_ref())
            .map_err(|e| (found, e))?;
    let rollout_hash =
        dereference::rollout_hash(secrets.hash.as_deref(), client_certificate.as_deref());
    let occupant = observed.derived_secret.as_ref();
    dereference::derived_secret_free(stack, &derived, rollout_hash.as_deref(), occupant)
        .map_err(|taken| (found, taken))?;
    let ca_bundle = dereference::ca_bundle(stack, &observed.ca_bundles).map_err(|e| (found, e))?;
    Ok(Dereferenced {
        secrets_found: found,
        rollout_hash,
        derived,
        ca_bundle,
    })
}

/// Whether the revision `deployment` (as built) was rejected and is held back, and how the last
/// Ready one runs instead; when it is restored from its ReplicaSet, `deployment` becomes it.
fn hold(
    stack: &Stack<'_>,
    deployment: &mut Deployment,
    observed: &Observed,
) -> Option<HeldRevision> {
    let planned_hash = rollback::desired_hash(deployment)
        .unwrap_or_default()
        .to_owned();
    let (rejected, last_ready) = rollback::held(stack, &planned_hash)?;
    let running = observed
        .deployment
        .as_ref()
        .and_then(rollback::desired_hash);
    let how = if running == Some(last_ready.desired_hash.as_str()) {
        Held::KeepRunning
    } else {
        let sets = observed.replica_sets.as_deref().unwrap_or_default();
        let restored = rollback::replica_set_of(sets, &last_ready.desired_hash)
            .and_then(|rs| rollback::restored(deployment.clone(), rs));
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
mod tests;
