//! One reconcile of a stack, as named steps:
//!
//! read (the resource into a [`Stack`], the core's) → gather (every read the decision needs,
//! what taking over would take first) → decide (the core's: the config, the pin, the desired
//! objects, taking over, a held rollback, or what blocks) → act (the take-over's writes, then
//! only what differs) → look (what the core asks to see: Pods, ReplicaSets, the server) →
//! assess (the core's: the rollback judgement, the status, when to look again) → publish.
//!
//! A problem the user must fix stops the pipeline before anything is written: the running
//! Deployment stays exactly as it was and a condition says why.

use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::Instrument;

use super::act::{ActOutcome, act};
use super::context::Context;
use super::error::{Error, Writing};
use super::memory::slim_cache;
use super::publish::{noted, publish};
use super::read::{gather, look};
use crate::api::conditions::{ConditionType, Reason};
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::{LlamaStackDistribution, LlamaStackDistributionStatus};
use crate::core::adoption;
use crate::core::assess::{Around, assess};
use crate::core::conditions::Blocked;
use crate::core::decide;
use crate::core::door::Door;
use crate::core::next_look::RESYNC;
use crate::core::reads;
use crate::core::report::Report;
use crate::core::stack::{Invalid, Model, Stack};
use crate::core::subject::{Subject, namesake_owner};
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
    let cr = slim_cache::expanded(&cr);
    if let Some(message) = ogx_servers.and_then(|store| taken_over(&cr, &store)) {
        let started = Instant::now();
        let recorded = (&cr.metadata, cr.status.as_ref());
        let result = refuse(recorded, Door::LlamaStackDistribution, &ctx, message).await;
        return record(&ctx, started, result);
    }
    reconcile_model(Model::of(&cr), Door::LlamaStackDistribution, &ctx, None).await
}

/// Reconciles one OGXServer through the same pipeline, as the model it maps into, and records
/// it in the metrics. One whose fields the model cannot carry yet is refused with the field.
pub async fn reconcile_ogx(cr: Arc<OGXServer>, ctx: Arc<Context>) -> Result<Action, Error> {
    reconcile_server(cr, ctx, None).await
}

/// [`reconcile_ogx`], except that what a LlamaStackDistribution of the same name recorded is
/// looked up in `stacks` (the stacks' controller's cache) once it has listed, instead of read.
pub async fn reconcile_server(
    cr: Arc<OGXServer>,
    ctx: Arc<Context>,
    stacks: Option<Store<LlamaStackDistribution>>,
) -> Result<Action, Error> {
    match ogx_server::to_model(&cr) {
        Ok(mut modelled) => {
            let namesake = namesake(&cr, &ctx, stacks.as_ref()).await;
            if modelled
                .status
                .as_ref()
                .is_none_or(|s| s.resolved_distribution.is_none())
            {
                adopt_recorded(&mut modelled.status, namesake.as_ref());
            }
            let owner = namesake.as_ref().and_then(namesake_reference);
            reconcile_model(modelled.model(&cr), ogx_server::door(&cr), &ctx, owner).await
        }
        Err(untranslatable) => {
            let started = Instant::now();
            let refusal = (Reason::FieldNotServed, untranslatable.to_string());
            let door = Door::OgxServer { metrics_port: None };
            let status = ogx_server::recorded(&cr);
            let result = refuse((&cr.metadata, status.as_ref()), door, &ctx, refusal).await;
            record(&ctx, started, result)
        }
    }
}

/// The LlamaStackDistribution of the server's name, if one exists: from `stacks` once it has
/// listed (a server that never resolves, say for a missing Secret, would read it on every look:
/// at 100 new servers 1.3 reads each, issue 62), else read (best effort: without it the server
/// resolves its distribution afresh, and its objects carry no plain owner).
async fn namesake(
    server: &OGXServer,
    ctx: &Context,
    stacks: Option<&Store<LlamaStackDistribution>>,
) -> Option<Arc<LlamaStackDistribution>> {
    let (ns, name) = (server.namespace().unwrap_or_default(), server.name_any());
    let listed = stacks.filter(|store| {
        store
            .wait_until_ready()
            .now_or_never()
            .is_some_and(|r| r.is_ok())
    });
    match listed {
        Some(store) => store.get(&ObjectRef::new(&name).within(&ns)),
        None => {
            let llsds: Api<LlamaStackDistribution> = Api::namespaced(ctx.client.clone(), &ns);
            llsds.get_opt(&name).await.ok().flatten().map(Arc::new)
        }
    }
}

/// The plain owner reference to the namesake, unless it is being deleted (the garbage
/// collector is removing it from every object then).
fn namesake_reference(namesake: &Arc<LlamaStackDistribution>) -> Option<OwnerReference> {
    let meta = &namesake.metadata;
    if meta.deletion_timestamp.is_some() {
        return None;
    }
    let (name, uid) = (meta.name.as_deref()?, meta.uid.as_deref()?);
    let api_version = <LlamaStackDistribution as kube::Resource>::api_version(&());
    Some(namesake_owner(&api_version, name, uid))
}

/// What a LlamaStackDistribution of the same name recorded (the pinned image, the rollback
/// memory), for an OGXServer that has recorded nothing yet: a stack moved from one API to the
/// other keeps running the same image, and its rollout to the new names is judged as before.
fn adopt_recorded(
    status: &mut Option<LlamaStackDistributionStatus>,
    namesake: Option<&Arc<LlamaStackDistribution>>,
) {
    let Some(recorded) = namesake.and_then(|n| n.status.clone()) else {
        return;
    };
    let status = status.get_or_insert_with(Default::default);
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
    model: Model<'_>,
    door: Door,
    ctx: &Context,
    namesake: Option<OwnerReference>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let span = tracing::info_span!(
        "reconcile",
        kind = door.type_meta().1,
        namespace = %model.meta.namespace.as_deref().unwrap_or_default(),
        name = %model.meta.name.as_deref().unwrap_or_default(),
    );
    // On the heap: the pipeline's future is large (several steps' state), and a worker thread's
    // stack is 2 MiB.
    let result = match Stack::read_through(model, door) {
        Ok(mut stack) => {
            stack.subject.namesake = namesake;
            Box::pin(reconcile_once(stack, ctx).instrument(span)).await
        }
        Err(Invalid::NoDistribution) => {
            let refusal = (
                Reason::ConfigGenerationFailed,
                Invalid::NoDistribution.to_string(),
            );
            refuse((model.meta, model.status), door, ctx, refusal)
                .instrument(span)
                .await
        }
        Err(invalid @ Invalid::Unnamed) => Err(Error::Read(invalid)),
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
    (meta, status): (&ObjectMeta, Option<&LlamaStackDistributionStatus>),
    door: Door,
    ctx: &Context,
    (reason, message): (Reason, String),
) -> Result<(Action, String), Error> {
    let generation = meta.generation;
    let mut report = Report::new(status, generation, jiff::Timestamp::now());
    report.block(Blocked::spec(
        ConditionType::ConfigGenerated,
        reason,
        message,
    ));
    let reason = publish(report.finished(generation), &Subject::of(meta, door), ctx)
        .await
        .map_err(Error::Publish)?;
    Ok((Action::requeue(RESYNC), reason))
}

/// How long a LlamaStackDistribution waits for the OGXServers' list before it is looked at
/// again.
const SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The pipeline, one call a step (read is the caller's: [`Stack::read_through`]); returns when
/// to look again and the reason for the metrics. A refused write is published (best effort)
/// and fails the reconcile.
async fn reconcile_once(mut stack: Stack<'_>, ctx: &Context) -> Result<(Action, String), Error> {
    let observed = gather(&mut stack, ctx).await?;
    let decision = decide::decide(&stack, &observed, &ctx.operator())?;
    let mut changes = Vec::new();
    let act = act(&mut stack, ctx, (&decision, &observed), &mut changes).await;
    noted(ctx, &stack.subject, changes).await;
    let act = act?;
    let stack = &stack;
    let now = jiff::Timestamp::now();
    let looks = reads::looks(stack, &decision, &observed, act.acted(), now);
    let pods_matter = looks.pods != reads::PodsNeeded::No;
    ctx.server_pods.matter(
        stack.door.managed_by(),
        stack.namespace(),
        stack.name(),
        pods_matter,
    );
    let seen = look(stack, ctx, &looks).await?;
    let resolver = ctx.resolver();
    let around = Around {
        catalog: resolver.catalog(),
        server_due: ctx.servers.retry_in(stack.uid()),
        now,
    };
    let assessment = assess(stack, &decision, act.acted(), (&looks, seen), around);
    if let Some(reason) = &assessment.rolled_back {
        ctx.metrics.rolled_back(reason);
    }
    let published = publish(assessment.finished, &stack.subject, ctx).await;
    if let ActOutcome::Refused { error, .. } = act {
        return Err(Error::Act(Writing::Apply, error));
    }
    let reason = published.map_err(Error::Publish)?;
    Ok((Action::requeue(assessment.requeue), reason))
}
