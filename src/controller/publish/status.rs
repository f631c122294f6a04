//! The stack's status as the API server stores it: read afresh, and written, each in the API the
//! stack came through.

use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::{LlamaStackDistribution, LlamaStackDistributionStatus};
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::core::door::Door;
use crate::core::subject::Subject;
use crate::naming::FIELD_MANAGER;
use crate::ogx_server::status as ogx_status;

/// The status as the API server has it now (read through the resource itself: the operator's
/// role may get the resources, not their status subresource).
pub(super) async fn fresh(
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

/// Writes `status` as the stack's status, in its door's API (server-side apply of the status
/// subresource).
pub(super) async fn write(
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
