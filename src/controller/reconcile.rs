//! One reconcile of a LlamaStackDistribution, as named steps:
//!
//! read (the resource into a [`Stack`]) → plan (resolve + generate) → dereference (Secrets, connection strings, CA bundle) → build
//! (every owned object, pure) → apply (only what differs) → observe (what runs) → rollback
//! judgement (a revision that cannot start while nothing serves) → status.
//!
//! A problem the user must fix stops the pipeline before anything is written: the running
//! Deployment stays exactly as it was and a condition says why.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use tracing::Instrument;

use super::apply::{Applied, apply};
use super::builders::{self, Inputs, ServerConfig};
use super::conditions::Blocked;
use super::context::Context;
use super::error::Error;
use super::next_look::{self, Outcome, RESYNC};
use super::rollback::{self, Judgement};
use super::stack::{Invalid, Stack};
use super::status::Report;
use super::{dereference, observe, plan};
use crate::api::conditions::Reason;
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
    let mut report = Report::new(cr);
    let failure = plan::Failure {
        reason: Reason::ConfigGenerationFailed,
        message: Invalid::NoDistribution.to_string(),
        image: None,
    };
    report.block(report.plan_failed(failure, false));
    let reason = report
        .publish(cr, ctx, false, false)
        .await
        .map_err(Error::Status)?;
    Ok((Action::requeue(RESYNC), reason))
}

/// The pipeline; returns when to look again and the reason for the metrics.
async fn reconcile_once(stack: &Stack<'_>, ctx: &Context) -> Result<(Action, String), Error> {
    let mut report = Report::new(stack.resource);
    let current = observe::deployment(stack, ctx)
        .await
        .map_err(Error::Observe)?;
    let converged = match converge(stack, ctx, &mut report, current.as_ref()).await {
        Err(Error::Apply(error)) => {
            // The API server's refusal (a policy engine, a quota) belongs in the status, where
            // users look, not only in the operator's log.
            report.apply_failed(&error);
            let has_deployment = current.is_some();
            let ready = report.workload(stack, current.as_ref(), None, None);
            // Best effort: the reconcile fails with the apply error either way.
            let _ = report
                .publish(stack.resource, ctx, has_deployment, ready)
                .await;
            return Err(Error::Apply(error));
        }
        other => other?,
    };
    let (deployment, applied, retry) = match converged {
        Ok(applied) => (applied.deployment.clone(), Some(applied), None),
        Err(blocked) => {
            let retry = blocked.retry;
            report.block(blocked);
            (current, None, Some(retry))
        }
    };
    let pods = observe::server_pods(stack, ctx, deployment.as_ref())
        .await
        .map_err(Error::Observe)?;
    if applied.is_some() {
        let with_providers = stack.has_external_providers();
        report.external_providers(stack, pods.as_deref().filter(|_| with_providers));
    }
    let ready = report.workload(
        stack,
        deployment.as_ref(),
        applied.as_ref(),
        pods.as_deref(),
    );
    let mut rolled_back = false;
    if let Some(observed) = deployment
        .as_ref()
        .filter(|_| applied.as_ref().is_some_and(|a| !a.held))
    {
        // Only the newest revision's Pods are judged (its ReplicaSet is read for that, and only
        // while Pods were listed: a rollout under way).
        let newest = match pods.as_deref() {
            Some(pods) if !pods.is_empty() => {
                let sets = observe::replica_sets(stack, ctx)
                    .await
                    .map_err(Error::Observe)?;
                rollback::newest_revision_pods(observed, &sets, pods)
            }
            _ => Vec::new(),
        };
        match rollback::judge(stack, observed, &newest) {
            Judgement::Steady => {}
            Judgement::Ready(revision) => report.revision_ready(revision),
            Judgement::RollBack {
                rejected,
                last_ready,
            } => {
                ctx.metrics.rolled_back(&rejected.reason);
                report.rolled_back(rejected, &last_ready);
                rolled_back = true;
            }
        }
    }
    let serving = deployment
        .as_ref()
        .filter(|d| ready && d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) > 0);
    if let Some(running) = serving
        && let Some(info) = observe::server_info(stack, ctx, running).await
    {
        report.server_info(info);
    }
    let reason = report
        .publish(stack.resource, ctx, deployment.is_some(), ready)
        .await
        .map_err(Error::Status)?;
    let requeue = next_look::after(Outcome {
        retry,
        ready,
        rolled_back,
        waited: deployment.as_ref().and_then(|d| {
            next_look::waited(d, crate::naming::FIELD_MANAGER, jiff::Timestamp::now())
        }),
        server_due: ctx.servers.retry_in(stack.uid()),
    });
    Ok((Action::requeue(requeue), reason))
}

/// Takes the `Ok` of a step, or ends the pipeline with what blocked it.
macro_rules! or_blocked {
    ($step:expr) => {
        match $step {
            Ok(value) => value,
            Err(blocked) => return Ok(Err(blocked)),
        }
    };
}

/// plan → dereference → build → apply. Returns what was applied, or what blocked the pipeline
/// (then nothing was written).
async fn converge(
    stack: &Stack<'_>,
    ctx: &Context,
    report: &mut Report,
    current: Option<&Deployment>,
) -> Result<Result<Applied, Blocked>, Error> {
    let planned = match plan::plan(stack, ctx, current.is_some()).await {
        Ok(planned) => planned,
        Err(plan::PlanError::Api(error)) => return Err(Error::Plan(error)),
        Err(plan::PlanError::Blocked(failure)) => {
            return Ok(Err(report.plan_failed(failure, current.is_some())));
        }
    };
    let client = &ctx.client;
    let secrets = or_blocked!(
        dereference::secrets(client, stack)
            .await
            .map_err(Error::Dereference)?
    );
    report.secrets_resolved(secrets.count);
    let derived = or_blocked!(dereference::url_parts(&planned.generated, &secrets));
    or_blocked!(
        dereference::derived_secret_free(client, stack, &derived, secrets.hash.as_deref())
            .await
            .map_err(Error::Dereference)?
    );
    let ca_bundle = or_blocked!(
        dereference::ca_bundle(client, stack)
            .await
            .map_err(Error::Dereference)?
    );
    let inputs = Inputs {
        image: &planned.image,
        server: planned.server,
        generated: Some(&planned.generated).filter(|_| planned.mount != ServerConfig::Image),
        config: planned.mount.clone(),
        ca_bundle: ca_bundle.as_deref(),
        secrets_hash: secrets.hash.as_deref(),
        pull_secrets: &planned.pull_secrets,
        operator_namespace: ctx.operator_namespace(),
        routes_available: ctx.routes_available(),
        operator_image: ctx.operator_image().unwrap_or_default(),
        existing_selector: current
            .and_then(|d| d.spec.as_ref())
            .and_then(|s| s.selector.match_labels.as_ref()),
        derived: Some(&derived),
    };
    let mut desired = builders::desired(stack, &inputs)?;
    let planned_hash = rollback::desired_hash(&desired.deployment)
        .unwrap_or_default()
        .to_owned();
    let held = rollback::held(stack, &planned_hash);
    let mut keep_deployment = false;
    let mut restorable = true;
    if let Some((_, last_ready)) = &held {
        if current.and_then(rollback::desired_hash) == Some(last_ready.desired_hash.as_str()) {
            keep_deployment = true;
        } else {
            let sets = observe::replica_sets(stack, ctx)
                .await
                .map_err(Error::Observe)?;
            let restored = rollback::replica_set_of(&sets, &last_ready.desired_hash)
                .and_then(|rs| rollback::restored(desired.deployment.clone(), rs));
            match restored {
                Some(deployment) => desired.deployment = deployment,
                // Nothing to return to: the plan is applied and the status says why it fails.
                None => restorable = false,
            }
        }
    }
    let mut applied = apply(stack, ctx, desired, current, keep_deployment)
        .await
        .map_err(Error::Apply)?;
    report.config_applied(stack, &planned);
    report.distributions(stack, ctx.resolver().catalog());
    match &held {
        Some((rejected, last_ready)) if restorable => report.hold(rejected, last_ready),
        Some((rejected, last_ready)) => report.rollback_not_possible(rejected, last_ready),
        None => report.rejection_lifted(),
    }
    applied.held = held.is_some();
    Ok(Ok(applied))
}
