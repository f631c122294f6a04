//! The decide step, pure: from a stack and what [`super::gather`] read, everything a reconcile
//! does: which image runs which config (the pin policy and its fallback included), the desired
//! objects, whether a rejected revision is held back and how, or what blocks the stack and why.
//! Nothing here reads or writes; the same inputs always give the same decision.

use k8s_openapi::api::apps::v1::Deployment;

use super::builders::{self, BuildError, Desired, Inputs, ServerConfig};
use super::conditions::Blocked;
use super::gather::Observed;
pub(super) use super::plan::Operator;
use super::plan::{self, Planned};
use super::stack::Stack;
use super::{dereference, rollback};
use crate::api::v1alpha2::{RejectedRevision, RevisionStatus};

/// What one reconcile does.
#[derive(Debug)]
pub(super) struct Decision {
    /// How many Secrets the spec references, once every one was found (`SecretsResolved`);
    /// `None` when the decision stopped before they were checked, or one is missing.
    pub(super) secrets_found: Option<usize>,
    /// The objects to apply, or the problem the user must fix (then nothing is written: the
    /// running Deployment stays exactly as it was).
    pub(super) next: Result<Intent, Blocked>,
}

/// What to apply.
#[derive(Debug)]
pub(super) struct Intent {
    /// Which image runs which config.
    pub(super) planned: Planned,
    /// Every owned object (the Deployment already restored when a held revision says so).
    pub(super) desired: Desired,
    /// A rejected revision the plan would build again, held back instead.
    pub(super) hold: Option<Hold>,
}

/// A revision that could not start, held back: the plan builds it again (nothing it is built
/// from changed), so the last Ready revision runs instead.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Hold {
    /// The revision rolled back from.
    pub(super) rejected: RejectedRevision,
    /// The revision returned to.
    pub(super) last_ready: RevisionStatus,
    /// How the last Ready revision runs.
    pub(super) how: Held,
}

/// How a held-back stack runs its last Ready revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
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
    pub(super) fn keeps_deployment(&self) -> bool {
        self.hold
            .as_ref()
            .is_some_and(|h| h.how == Held::KeepRunning)
    }
}

/// Decides what one reconcile does. An `Err` is a bug in a builder, not a problem of the spec.
pub(super) fn decide(
    stack: &Stack<'_>,
    observed: &Observed,
    operator: &Operator<'_>,
) -> Result<Decision, BuildError> {
    let current = observed.deployment.as_ref();
    let blocked = |secrets_found, blocked| {
        Ok(Decision {
            secrets_found,
            next: Err(blocked),
        })
    };
    let planned = match plan::plan(stack, observed, operator) {
        Ok(planned) => planned,
        Err(failure) => return blocked(None, plan::blocked(stack, failure, current.is_some())),
    };
    let secrets = match dereference::secrets(stack, &observed.secrets) {
        Ok(secrets) => secrets,
        Err(missing) => return blocked(None, missing),
    };
    let found = Some(secrets.count);
    let derived = match dereference::url_parts(&planned.generated, &secrets) {
        Ok(derived) => derived,
        Err(unusable) => return blocked(found, unusable),
    };
    let client_certificate =
        match dereference::client_certificate(stack, observed.client_certificate.as_ref()) {
            Ok(pem) => pem,
            Err(invalid) => return blocked(found, invalid),
        };
    let rollout_hash =
        dereference::rollout_hash(secrets.hash.as_deref(), client_certificate.as_deref());
    let secrets_hash = rollout_hash.as_deref();
    let occupant = observed.derived_secret.as_ref();
    if let Err(taken) = dereference::derived_secret_free(stack, &derived, secrets_hash, occupant) {
        return blocked(found, taken);
    }
    let ca_bundle = match dereference::ca_bundle(stack, &observed.ca_bundles) {
        Ok(bundle) => bundle,
        Err(invalid) => return blocked(found, invalid),
    };
    let inputs = Inputs {
        image: &planned.image,
        server: planned.server,
        generated: Some(&planned.generated).filter(|_| planned.mount != ServerConfig::Image),
        config: planned.mount.clone(),
        ca_bundle: ca_bundle.as_deref(),
        secrets_hash,
        pull_secrets: &planned.pull_secrets,
        operator_namespace: operator.namespace,
        routes_available: operator.routes_available,
        monitoring_available: operator.monitoring_available,
        operator_image: operator.image.unwrap_or_default(),
        existing_selector: current
            .and_then(|d| d.spec.as_ref())
            .and_then(|s| s.selector.match_labels.as_ref()),
        derived: Some(&derived),
    };
    let mut desired = builders::desired(stack, &inputs)?;
    let hold = hold(stack, &mut desired.deployment, observed);
    Ok(Decision {
        secrets_found: found,
        next: Ok(Intent {
            planned,
            desired,
            hold,
        }),
    })
}

/// Whether the revision `deployment` (as built) was rejected and is held back, and how the last
/// Ready one runs instead; when it is restored from its ReplicaSet, `deployment` becomes it.
fn hold(stack: &Stack<'_>, deployment: &mut Deployment, observed: &Observed) -> Option<Hold> {
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
    Some(Hold {
        rejected,
        last_ready,
        how,
    })
}

#[cfg(test)]
mod tests;
