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
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::Instrument;

use super::apply::apply;
use super::context::Context;
use super::error::{ApiError, Error};
use super::gather;
use super::publish::publish;
use super::{observe, take_over};
use crate::api::conditions::{ConditionType, Reason};
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::core::adoption::{self, Hold};
use crate::core::conditions::Blocked;
use crate::core::decide::{self, Decision};
use crate::core::door::Door;
use crate::core::next_look::{self, Outcome, RESYNC};
use crate::core::observed::{Applied, Observed, ServerInfo};
use crate::core::report::{self, Facts, Report};
use crate::core::rollback::{self, Judgement};
use crate::core::stack::{Invalid, Stack};
use crate::ogx_server;

/// Reconciles one LlamaStackDistribution, and records it in the metrics.
pub async fn reconcile(
    cr: Arc<LlamaStackDistribution>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    reconcile_stack(cr, ctx, None).await
}

/// [`reconcile`], except that one an `OGXServer` of the same name has taken over
/// (`ogx_servers` holds the metadata of those the operator sees) is left alone, and says so.
/// Nothing is done before that list is synced (at start, after a leader change): a stack moved
/// must never re-apply its own template over its `OGXServer`'s.
pub async fn reconcile_stack(
    cr: Arc<LlamaStackDistribution>,
    ctx: Arc<Context>,
    ogx_servers: Option<Store<PartialObjectMeta<OGXServer>>>,
) -> Result<Action, Error> {
    if let Some(store) = &ogx_servers {
        let synced = tokio::time::timeout(SYNC_WAIT, store.wait_until_ready()).await;
        if !matches!(synced, Ok(Ok(()))) {
            let started = Instant::now();
            return record(
                &ctx,
                started,
                Ok((Action::requeue(SYNC_WAIT), "WaitingForCache".to_owned())),
            );
        }
    }
    if let Some(message) = ogx_servers.and_then(|store| taken_over(&cr, &store)) {
        let started = Instant::now();
        let result = refuse(&cr, Door::LlamaStackDistribution, &ctx, message).await;
        return record(&ctx, started, result);
    }
    reconcile_model(&cr, Door::LlamaStackDistribution, &ctx).await
}

/// Reconciles one OGXServer through the same pipeline, as the model it maps into, and records
/// it in the metrics. One whose fields the model cannot carry yet is refused with the field.
pub async fn reconcile_ogx(cr: Arc<OGXServer>, ctx: Arc<Context>) -> Result<Action, Error> {
    match ogx_server::to_model(&cr) {
        Ok(mut model) => {
            if model
                .status
                .as_ref()
                .is_none_or(|s| s.resolved_distribution.is_none())
            {
                adopt_recorded(&mut model, &ctx).await;
            }
            reconcile_model(&model, Door::of_ogx_server(&cr), &ctx).await
        }
        Err(untranslatable) => {
            let started = Instant::now();
            let shell = ogx_server::shell(&cr);
            let refusal = (Reason::FieldNotServed, untranslatable.to_string());
            let door = Door::OgxServer { metrics_port: None };
            let result = refuse(&shell, door, &ctx, refusal).await;
            record(&ctx, started, result)
        }
    }
}

/// What a LlamaStackDistribution of the same name recorded (the pinned image, the rollback
/// memory), for an OGXServer that has recorded nothing yet: a stack moved from one API to the
/// other keeps running the same image, and its rollout to the new names is judged as before.
async fn adopt_recorded(model: &mut LlamaStackDistribution, ctx: &Context) {
    let (ns, name) = (model.namespace().unwrap_or_default(), model.name_any());
    let llsds: Api<LlamaStackDistribution> = Api::namespaced(ctx.client.clone(), &ns);
    // Best effort: without it the OGXServer resolves its distribution afresh.
    let Ok(Some(previous)) = llsds.get_opt(&name).await else {
        return;
    };
    let Some(recorded) = previous.status else {
        return;
    };
    let status = model.status.get_or_insert_with(Default::default);
    status.resolved_distribution = recorded.resolved_distribution;
    status.rollback = recorded.rollback;
}

/// Why the LlamaStackDistribution `cr` stands down, if it does: an `OGXServer` of the same name
/// serves it now, or one of another name takes over its objects (`ogx.io/adopt-*`).
fn taken_over(
    cr: &LlamaStackDistribution,
    servers: &Store<PartialObjectMeta<OGXServer>>,
) -> Option<(Reason, String)> {
    let (name, ns) = (cr.name_any(), cr.namespace().unwrap_or_default());
    if servers.get(&ObjectRef::new(&name).within(&ns)).is_some() {
        return Some((
            Reason::MovedToOGXServer,
            format!(
                "OGXServer {name} serves this stack now (same objects, same Service); delete this LlamaStackDistribution once the OGXServer is Ready"
            ),
        ));
    }
    servers.state().iter().find_map(|server| {
        if server.namespace().as_deref() != Some(ns.as_str()) {
            return None;
        }
        let server_name = server.name_any();
        let given = adoption::gives_up(&server_name, server.metadata.annotations.as_ref(), &name);
        (!given.is_empty()).then(|| {
            (
                Reason::AdoptedByOGXServer,
                format!(
                    "OGXServer {server_name} takes over {} (ogx.io/adopt-*), so the operator leaves this LlamaStackDistribution as it is; delete it once {server_name} is Ready (what was taken stays)",
                    given.join(" and ")
                ),
            )
        })
    })
}

async fn reconcile_model(
    model: &LlamaStackDistribution,
    door: Door,
    ctx: &Context,
) -> Result<Action, Error> {
    let started = Instant::now();
    let span = tracing::info_span!(
        "reconcile",
        kind = door.type_meta().1,
        namespace = %model.namespace().unwrap_or_default(),
        name = %model.name_any(),
    );
    // On the heap: the pipeline's future is large (several steps' state), and a worker thread's
    // stack is 2 MiB.
    let result = match Stack::read_through(model, door) {
        Ok(stack) => Box::pin(take_over_then_reconcile(stack, ctx).instrument(span)).await,
        Err(Invalid::NoDistribution) => {
            let refusal = (
                Reason::ConfigGenerationFailed,
                Invalid::NoDistribution.to_string(),
            );
            refuse(model, door, ctx, refusal).instrument(span).await
        }
        Err(invalid @ Invalid::Unnamed) => Err(Error::Invalid(invalid)),
    };
    record(ctx, started, result)
}

/// Records a reconcile in the metrics.
fn record(
    ctx: &Context,
    started: Instant,
    result: Result<(Action, String), Error>,
) -> Result<Action, Error> {
    let reason = match &result {
        Ok((_, reason)) => reason.as_str(),
        Err(error) => error.metric_label(),
    };
    ctx.metrics
        .reconciled(result.is_ok(), reason, started.elapsed());
    result.map(|(action, _)| action)
}

/// A resource that the core cannot reconcile as written (admission refuses most such; one
/// stored before the CRD's rules can carry it), or that it must leave alone: the status says
/// why, and nothing else is read or written.
async fn refuse(
    cr: &LlamaStackDistribution,
    door: Door,
    ctx: &Context,
    (reason, message): (Reason, String),
) -> Result<(Action, String), Error> {
    let mut report = Report::new(cr, jiff::Timestamp::now());
    report.block(Blocked::spec(
        ConditionType::ConfigGenerated,
        reason,
        message,
    ));
    let reason = publish(report, (cr, door), ctx)
        .await
        .map_err(Error::Status)?;
    Ok((Action::requeue(RESYNC), reason))
}

/// Surveys what the stack's annotations ask to take over (an `OGXServer`'s: reads only), then
/// runs the pipeline, which takes it once the server's own decision holds.
async fn take_over_then_reconcile(
    mut stack: Stack<'_>,
    ctx: &Context,
) -> Result<(Action, String), Error> {
    let survey = take_over::survey(&stack, ctx).await.map_err(Error::Adopt)?;
    stack.adoption = survey.adopted.clone();
    reconcile_once(&mut stack, ctx, survey).await
}

/// Makes the writes taking over was decided to make (only hand-backs while the server cannot
/// run: the old stack keeps serving). Returns the hold, when the server's own objects must wait.
async fn take_over(
    stack: &mut Stack<'_>,
    ctx: &Context,
    decision: &Decision,
) -> Result<Option<Hold>, Error> {
    stack.adoption = decision.take_over.adopted.clone();
    take_over::carry_out(stack, ctx, &decision.take_over.writes)
        .await
        .map_err(Error::Adopt)?;
    Ok(decision.take_over.adopted.hold)
}

/// While taking over holds the server back, only the status is written.
async fn held(stack: &Stack<'_>, ctx: &Context, hold: Hold) -> Result<(Action, String), Error> {
    let mut report = Report::new(stack.resource, jiff::Timestamp::now());
    report.adoption(&stack.adoption.said);
    let reason = publish(report, (stack.resource, stack.door), ctx)
        .await
        .map_err(Error::Status)?;
    let again = match hold {
        Hold::Waiting => ADOPTION_POLL,
        Hold::Refused => RESYNC,
    };
    Ok((Action::requeue(again), reason))
}

/// How long a LlamaStackDistribution waits for the OGXServers' list before it is looked at
/// again.
const SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How soon to look again while the old stack's Pods stop.
const ADOPTION_POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// The pipeline; returns when to look again and the reason for the metrics.
async fn reconcile_once(
    stack: &mut Stack<'_>,
    ctx: &Context,
    survey: crate::core::take_over::Survey,
) -> Result<(Action, String), Error> {
    let observed = gather::gather(stack, ctx, survey).await?;
    let decision = decide::decide(stack, &observed, &ctx.operator())?;
    if let Some(hold) = take_over(stack, ctx, &decision).await? {
        return held(stack, ctx, hold).await;
    }
    let stack: &Stack<'_> = stack;
    let applied = match apply_decision(stack, ctx, &decision, &observed).await {
        Ok(applied) => applied,
        Err(error) => {
            let facts = Facts {
                decision: &decision,
                applied: Err(&crate::error_chain(&error)),
                deployment: observed.deployment.as_ref(),
                pods: None,
                judgement: &Judgement::Steady,
                server: None,
            };
            // Best effort: the reconcile fails with the apply error either way.
            let _ = publish(report(stack, ctx, facts), (stack.resource, stack.door), ctx).await;
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
    let reason = publish(report, (stack.resource, stack.door), ctx)
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
    report::report(
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
    apply(
        stack,
        ctx,
        &intent.desired,
        observed,
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
    let judged = deployment
        .filter(|_| applied.is_some() && decision.next.as_ref().is_ok_and(|i| i.hold.is_none()));
    let rollback_due = judged.is_some_and(|d| rollback::judges_pods(stack, d));
    let wanted = observe::PodsWanted {
        external_providers: stack.has_external_providers(),
        rollout_waiting: observe::rollout_waiting(deployment, jiff::Timestamp::now()),
        rollback_due,
        created_now: observed.deployment.is_none() && deployment.is_some(),
    };
    let pods = observe::server_pods(stack, ctx, wanted)
        .await
        .map_err(Error::Observe)?;
    let mut judgement = Judgement::Steady;
    if let Some(judged) = judged {
        // Only the newest revision's Pods are judged (its ReplicaSet is read for that, and only
        // while a rollback is due on what they show).
        let newest = match pods.as_deref() {
            Some(pods) if !pods.is_empty() && rollback_due => {
                let sets = observe::replica_sets(stack, ctx)
                    .await
                    .map_err(Error::Observe)?;
                rollback::newest_revision_pods(judged, &sets, pods)
            }
            _ => Vec::new(),
        };
        judgement = rollback::judge(stack, judged, &newest, jiff::Timestamp::now());
    }
    let serving = deployment.filter(|d| {
        report::is_ready(Some(d)) && d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) > 0
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
