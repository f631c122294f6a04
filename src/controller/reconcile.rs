//! One reconcile of a LlamaStackDistribution, as named steps:
//!
//! read (the resource into a [`Stack`]) → gather (every read the decision needs) → decide
//! (pure: the config, the pin, the desired objects, a held rollback, or what blocks) → apply
//! (only what differs) → observe (what runs now: Pods and the server, lazily) → report (pure:
//! the status) → publish.
//!
//! A problem the user must fix stops the pipeline before anything is written: the running
//! Deployment stays exactly as it was and a condition says why.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use tracing::Instrument;

use super::apply::{Applied, apply};
use super::conditions::Blocked;
use super::context::Context;
use super::decide::{self, Decision, Operator};
use super::error::{ApiError, Error};
use super::gather::{self, Observed};
use super::next_look::{self, Outcome, RESYNC};
use super::rollback::{self, Judgement};
use super::stack::{Invalid, Stack};
use super::status::{self, Facts, Report};
use super::{observe, server_info::ServerInfo};
use crate::api::conditions::{ConditionType, Reason};
use crate::api::v1alpha2::LlamaStackDistribution;

/// Reconciles one LlamaStackDistribution, and records it in the metrics.
pub async fn reconcile(
    cr: Arc<LlamaStackDistribution>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let span = tracing::info_span!(
        "reconcile",
        namespace = %cr.namespace().unwrap_or_default(),
        name = %cr.name_any(),
    );
    // On the heap: the pipeline's future is large (several steps' state), and a worker thread's
    // stack is 2 MiB.
    let result = match Stack::read(&cr) {
        Ok(stack) => Box::pin(reconcile_once(&stack, &ctx).instrument(span)).await,
        Err(Invalid::NoDistribution) => refuse(&cr, &ctx).instrument(span).await,
        Err(invalid @ Invalid::Unnamed) => Err(Error::Invalid(invalid)),
    };
    let reason = match &result {
        Ok((_, reason)) => reason.as_str(),
        Err(error) => error.metric_label(),
    };
    ctx.metrics
        .reconciled(result.is_ok(), reason, started.elapsed());
    result.map(|(action, _)| action)
}

/// A resource that cannot be read into a [`Stack`] (admission refuses it; one stored before the
/// CRD's rules can carry it): the status says why, and nothing else is read or written.
async fn refuse(cr: &LlamaStackDistribution, ctx: &Context) -> Result<(Action, String), Error> {
    let mut report = Report::new(cr, jiff::Timestamp::now());
    report.block(Blocked::spec(
        ConditionType::ConfigGenerated,
        Reason::ConfigGenerationFailed,
        Invalid::NoDistribution.to_string(),
    ));
    let reason = report.publish(cr, ctx).await.map_err(Error::Status)?;
    Ok((Action::requeue(RESYNC), reason))
}

/// The pipeline; returns when to look again and the reason for the metrics.
async fn reconcile_once(stack: &Stack<'_>, ctx: &Context) -> Result<(Action, String), Error> {
    let observed = gather::gather(stack, ctx).await?;
    let decision = decide::decide(stack, &observed, &Operator::of(ctx))?;
    let applied = match apply_decision(stack, ctx, &decision, &observed).await {
        Ok(applied) => applied,
        Err(error) => {
            let facts = Facts {
                decision: &decision,
                applied: Err(&error),
                deployment: observed.deployment.as_ref(),
                pods: None,
                judgement: &Judgement::Steady,
                server: None,
            };
            // Best effort: the reconcile fails with the apply error either way.
            let _ = report(stack, ctx, facts).publish(stack.resource, ctx).await;
            return Err(Error::Apply(error));
        }
    };
    let running = look(stack, ctx, &decision, &observed, applied.as_ref()).await?;
    if let Judgement::RollBack { rejected, .. } = &running.judgement {
        ctx.metrics.rolled_back(&rejected.reason);
    }
    let facts = Facts {
        decision: &decision,
        applied: Ok(applied.as_ref()),
        deployment: running.deployment,
        pods: running.pods.as_deref(),
        judgement: &running.judgement,
        server: running.server,
    };
    let report = report(stack, ctx, facts);
    let ready = report.ready();
    let reason = report
        .publish(stack.resource, ctx)
        .await
        .map_err(Error::Status)?;
    let requeue = next_look::after(Outcome {
        retry: decision.next.as_ref().err().map(|blocked| blocked.retry),
        ready,
        rolled_back: matches!(running.judgement, Judgement::RollBack { .. }),
        waited: running.deployment.and_then(|d| {
            next_look::waited(d, crate::naming::FIELD_MANAGER, jiff::Timestamp::now())
        }),
        server_due: ctx.servers.retry_in(stack.uid()),
    });
    Ok((Action::requeue(requeue), reason))
}

/// The status of this reconcile, on the resource's stored one.
fn report(stack: &Stack<'_>, ctx: &Context, facts: Facts<'_>) -> Report {
    status::report(
        stack,
        facts,
        ctx.resolver().catalog(),
        jiff::Timestamp::now(),
    )
}

/// Applies what was decided; `None` when the decision blocked (nothing is written).
async fn apply_decision(
    stack: &Stack<'_>,
    ctx: &Context,
    decision: &Decision,
    observed: &Observed,
) -> Result<Option<Applied>, ApiError> {
    let Ok(intent) = &decision.next else {
        return Ok(None);
    };
    let current = observed.deployment.as_ref();
    apply(
        stack,
        ctx,
        &intent.desired,
        current,
        intent.keeps_deployment(),
    )
    .await
    .map(Some)
}

/// What runs after the apply, read lazily.
struct Running<'a> {
    /// The Deployment: the one applied, else the one read at the start.
    deployment: Option<&'a Deployment>,
    /// The server Pods, when the status needs them.
    pods: Option<Vec<Pod>>,
    /// What the rollback memory makes of the Deployment.
    judgement: Judgement,
    /// What the server says of itself, when it serves and is due to be asked.
    server: Option<ServerInfo>,
}

/// Reads what runs now, as far as the status needs it: the server Pods while a rollout is under
/// way or external providers are installed in them; the newest revision's ReplicaSet when those
/// Pods are judged for a rollback (only a Deployment applied from a plan that is not held back
/// is judged); the server itself when the stack is Ready and it is due.
async fn look<'a>(
    stack: &Stack<'_>,
    ctx: &Context,
    decision: &Decision,
    observed: &'a Observed,
    applied: Option<&'a Applied>,
) -> Result<Running<'a>, Error> {
    let deployment = match applied {
        Some(applied) => applied.deployment.as_ref(),
        None => observed.deployment.as_ref(),
    };
    let pods = observe::server_pods(stack, ctx, deployment)
        .await
        .map_err(Error::Observe)?;
    let judged = deployment
        .filter(|_| applied.is_some() && decision.next.as_ref().is_ok_and(|i| i.hold.is_none()));
    let mut judgement = Judgement::Steady;
    if let Some(judged) = judged {
        // Only the newest revision's Pods are judged (its ReplicaSet is read for that, and only
        // while Pods were listed: a rollout under way).
        let newest = match pods.as_deref() {
            Some(pods) if !pods.is_empty() => {
                let sets = observe::replica_sets(stack, ctx)
                    .await
                    .map_err(Error::Observe)?;
                rollback::newest_revision_pods(judged, &sets, pods)
            }
            _ => Vec::new(),
        };
        judgement = rollback::judge(stack, judged, &newest);
    }
    let serving = deployment.filter(|d| {
        status::is_ready(Some(d)) && d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) > 0
    });
    let server = match serving {
        Some(running) => observe::server_info(stack, ctx, running).await,
        None => None,
    };
    Ok(Running {
        deployment,
        pods,
        judgement,
        server,
    })
}
