//! The observe step: reads what runs, for the status. The Deployment is read once at the start
//! of a reconcile (the apply step reuses it); the server Pods only when the status needs them.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::builders::{self, owned_by_selector};
use super::{ApiError, Context, api_err, rollout};
use crate::api::v1alpha2::LlamaStackDistribution;

/// The Deployment of the same name, if any.
pub(super) async fn deployment(
    cr: &LlamaStackDistribution,
    ctx: &Context,
) -> Result<Option<Deployment>, ApiError> {
    let ns = cr.namespace().unwrap_or_default();
    let name = cr.name_any();
    Api::<Deployment>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&name)
        .await
        .map_err(api_err(format!("read Deployment {ns}/{name}")))
}

/// The server Pods, when the status needs them (`None` otherwise: no read): when external
/// providers are installed in them (their init containers are the steps the status reports), or
/// while a rollout is not complete (a waiting container says why).
pub(super) async fn server_pods(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    deployment: Option<&Deployment>,
) -> Result<Option<Vec<Pod>>, ApiError> {
    let rolling = deployment.is_some_and(|d| !rollout::complete(d));
    if builders::external::of(cr).is_empty() && !rolling {
        return Ok(None);
    }
    let ns = cr.namespace().unwrap_or_default();
    let name = cr.name_any();
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &ns)
        .list(&ListParams::default().labels(&owned_by_selector(&name)))
        .await
        .map_err(api_err(format!("list the Pods of {ns}/{name}")))?;
    Ok(Some(pods.items))
}
