//! The apply step: writes what differs from the built set, in dependency order. A move in place
//! hands the old stack's objects over first; then what the Pods need (the config, the derived
//! Secret, the ServiceAccount, the CA bundle, the data volume), the Deployment (once, with
//! everything together), what is around it, and the prune of old revisions once the rollout
//! settles. Nothing is written when nothing changed.

use super::Noted;
use super::around::around_the_server;
use super::deployment::apply_deployment;
use super::for_the_pods::what_the_pods_need;
use super::prune;
use super::write::Indexed;
use crate::controller::context::Context;
use crate::controller::error::ApiError;
use crate::core::decide::Intent;
use crate::core::observed::{Applied, Observed};
use crate::core::stack::Stack;

/// Writes what `intent` says. `observed` is what the reconcile read at its start (the
/// Deployment, the data volume's claim); a rolled-back revision held in place keeps the
/// Deployment as it is.
pub(in crate::controller) async fn apply(
    stack: &Stack<'_>,
    ctx: &Context,
    (intent, observed, moved): (&Intent, &Observed, bool),
    noted: &mut Vec<Noted>,
) -> Result<Applied, ApiError> {
    // Objects just handed over are still in the old door's watches as the old stack's: this
    // reconcile reads them all.
    let index = (!moved).then_some(Indexed {
        index: &ctx.owned,
        generation: stack.generation(),
        untouched: !stack.recorded.written,
    });
    let desired = &intent.desired;
    let pvc_phase = what_the_pods_need(stack, ctx, intent, observed, index).await?;
    let current = observed.deployment.as_ref();
    let deployment = match current.filter(|_| intent.keeps_deployment()) {
        Some(kept) => Some(kept.clone()),
        None => apply_deployment(stack, ctx, (&desired.deployment, current), noted).await?,
    };
    let route_url = around_the_server(stack, ctx, desired, index).await?;
    if let Some(migration) = &intent.migration {
        super::migration::carry_out(stack, &ctx.client, migration, noted).await?;
    }
    if let Some(deployment) = &deployment {
        prune::when_rollout_settles(stack, ctx, deployment, current.is_none()).await?;
    }
    Ok(Applied {
        deployment,
        pvc_phase,
        route_url,
    })
}
