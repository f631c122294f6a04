//! The decide step, pure: from a stack and what the shell's gather step (`controller::read::gather`) read, everything a reconcile
//! does: which image runs which config (the pin policy and its fallback included), the desired
//! objects, whether a rejected revision is held back and how, or what blocks the stack and why.
//! Nothing here reads or writes; the same inputs always give the same decision.

use super::adoption::Said;
use super::builders::{self, BuildError, Desired, Inputs, ServerConfig};
use super::conditions::Blocked;
use super::observed::Observed;
pub use super::plan::Operator;
use super::plan::{self, Planned};
pub use super::rollback::{Held, HeldRevision};
use super::stack::Stack;
use super::take_over::{self, Survey};
use super::{adoption, dereference, rollback};
use crate::api::conditions::{ConditionType, Reason};

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
    /// `TLSConfigured`, for a server behind Praxis whose TLS Secret was looked for.
    pub praxis_tls: Option<Said>,
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
    /// The Praxis migration, for a server that asks for one.
    pub migration: Option<super::migration::plan::MigrationPlan>,
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
    let serving = next.as_ref().is_ok_and(|intent| {
        let (desired, keeps) = (&intent.desired.deployment, intent.keeps_deployment());
        take_over::serves_as_is(stack, observed.deployment.as_ref(), (desired, keeps))
    });
    let take_over = take_over::decided(&observed.take_over, next.is_ok(), serving);
    let moves_in_place =
        take_over::moves_in_place(stack, observed.deployment.as_ref(), observed.claim.as_ref());
    let praxis_tls = stack.networking.gateway.and_then(|_| {
        super::praxis::tls_configured(stack.networking.tls_secret, &observed.secrets)
    });
    Ok(Decision {
        secrets_found,
        next,
        take_over,
        moves_in_place,
        praxis_tls,
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
        .and_then(|c| adoption::taken_by_another(&c.metadata, stack.name()));
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
    let referenced = match dereference::referenced(stack, observed, &planned) {
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
    let migration = super::migration::plan::plan(stack, observed, &inputs, &desired);
    let hold = rollback::hold(stack, &mut desired.deployment, observed);
    let intent = Intent {
        migration,
        planned,
        desired,
        hold,
        reclaim: adoption::reclaim(
            stack.name(),
            stack.subject.owner.as_ref(),
            observed
                .claim
                .as_ref()
                .filter(|_| observed.claim_taker_gone),
        ),
    };
    Ok((found, Ok(intent)))
}

#[cfg(test)]
#[path = "tests/decide.rs"]
mod tests;
