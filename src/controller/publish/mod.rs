//! The publish step: the status a reconcile came to, written when it differs from the stored one,
//! with the Events of its transitions.

pub(in crate::controller) mod events;

use std::time::Instant;

use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::EventType;
use serde_json::json;

use crate::api::conditions::Reason;
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::{LlamaStackDistribution, LlamaStackDistributionStatus};
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::controller::memory::{recent_writes, slim_cache};
use crate::core::door::Door;
use crate::core::report::Finished;
use crate::core::subject::Subject;
use crate::naming::FIELD_MANAGER;
use crate::ogx_server::status as ogx_status;

/// Sets the phase, publishes Events for the transitions and writes the status when it
/// differs from the stored one. Returns the reason recorded in the metrics (the phase, or
/// why it failed).
pub(in crate::controller) async fn publish(
    finished: Finished,
    subject: &Subject,
    ctx: &Context,
) -> Result<String, ApiError> {
    let Finished {
        reason,
        became_ready,
        previous,
        mut status,
        conditions,
    } = finished;
    // The cache keeps the providers as a digest (`slim_cache`): compared as such.
    let (mut compared, mut stored) = (status.clone(), previous);
    slim_cache::slim_status(&mut compared);
    slim_cache::slim_status(&mut stored);
    if compared == stored {
        return Ok(reason);
    }
    let uid = &subject.uid;
    let digest = recent_writes::digest(&serde_json::to_value(&compared).unwrap_or_default());
    let now = Instant::now();
    if ctx.recent_writes.just_written(uid, digest, now) {
        // The cache has not caught up with this very write: its Events are out already.
        return Ok(reason);
    }
    if slim_cache::has_digests(&status) {
        // Between reads of the server (or before the first one in this process) the providers
        // are a digest of those stored: those are written again.
        let fresh = fresh_status(ctx, subject).await?;
        slim_cache::restore_providers(&mut status, &fresh);
    }
    events::failures(ctx, subject, &conditions).await;
    if became_ready {
        let replicas = status
            .available_replicas
            .map(|n| format!("{n} replicas available"))
            .unwrap_or_default();
        events::publish(ctx, subject, EventType::Normal, Reason::Ready, replicas).await;
    }
    write(ctx, subject, &status).await?;
    ctx.recent_writes.wrote(uid, digest, now);
    Ok(reason)
}

/// The status as the API server has it now (read through the resource itself: the operator's
/// role may get the resources, not their status subresource).
async fn fresh_status(
    ctx: &Context,
    subject: &Subject,
) -> Result<LlamaStackDistributionStatus, ApiError> {
    let (ns, name, door) = (&subject.namespace, &subject.name, subject.door);
    let what = format!("read {} {ns}/{name}", door.type_meta().1);
    match door {
        Door::LlamaStackDistribution => {
            let llsds: Api<LlamaStackDistribution> = Api::namespaced(ctx.client.clone(), ns);
            let fresh = llsds.get(name).await.map_err(api_err(what))?;
            Ok(fresh.status.unwrap_or_default())
        }
        Door::OgxServer { .. } => {
            let servers: Api<OGXServer> = Api::namespaced(ctx.client.clone(), ns);
            let fresh = servers.get(name).await.map_err(api_err(what.clone()))?;
            Ok(fresh
                .status
                .as_ref()
                .map(ogx_status::into_model)
                .transpose()
                .map_err(|e| api_err(what)(kube::Error::SerdeError(e)))?
                .unwrap_or_default())
        }
    }
}

async fn write(
    ctx: &Context,
    subject: &Subject,
    status: &LlamaStackDistributionStatus,
) -> Result<(), ApiError> {
    let (ns, name, door) = (&subject.namespace, &subject.name, subject.door);
    let (api_version, kind) = door.type_meta();
    let what = format!("update the status of {kind} {ns}/{name}");
    // A status that cannot be serialized is an error, never a `null` that would wipe it.
    let status = match door {
        Door::LlamaStackDistribution => serde_json::to_value(status),
        Door::OgxServer { .. } => ogx_status::from_model(status).and_then(serde_json::to_value),
    }
    .map_err(|e| api_err(what.clone())(kube::Error::SerdeError(e)))?;
    let patch = json!({"apiVersion": api_version, "kind": kind, "status": status});
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match door {
        Door::LlamaStackDistribution => {
            Api::<LlamaStackDistribution>::namespaced(ctx.client.clone(), ns)
                .patch_status(name, &params, &Patch::Apply(&patch))
                .await
                .map(drop)
        }
        Door::OgxServer { .. } => Api::<OGXServer>::namespaced(ctx.client.clone(), ns)
            .patch_status(name, &params, &Patch::Apply(&patch))
            .await
            .map(drop),
    }
    .map_err(api_err(what))
}
