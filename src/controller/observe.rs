//! The observe step: reads what runs, for the status. The Deployment is read once at the start
//! of a reconcile (the apply step reuses it); the server Pods only when external providers are
//! installed in them, since their init containers are the install steps the status reports.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::builders::{self, owned_by_selector};
use super::{ApiError, Context, api_err};
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

/// The server Pods, when the resource has external providers (`None` otherwise: no read).
pub(super) async fn provider_pods(
    cr: &LlamaStackDistribution,
    ctx: &Context,
) -> Result<Option<Vec<Pod>>, ApiError> {
    if builders::external::of(cr).is_empty() {
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
