//! The observe step: reads what runs, for the status. The Deployment is read once at the start
//! of a reconcile (the apply step reuses it); the server Pods only when the status needs them.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams};

use super::context::Context;
use super::error::{ApiError, api_err};
use super::rollout;
use super::server_info::ServerInfo;
use super::stack::Stack;
use crate::naming::{owned_by_selector, service_name};

/// The Deployment of the same name, if any.
pub(super) async fn deployment(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<Option<Deployment>, ApiError> {
    let ns = stack.namespace;
    let name = stack.name;
    Api::<Deployment>::namespaced(ctx.client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(api_err(format!("read Deployment {ns}/{name}")))
}

/// The server Pods, when the status needs them (`None` otherwise: no read): when external
/// providers are installed in them (their init containers are the steps the status reports), or
/// while a rollout is not complete (a waiting container says why).
pub(super) async fn server_pods(
    stack: &Stack<'_>,
    ctx: &Context,
    deployment: Option<&Deployment>,
) -> Result<Option<Vec<Pod>>, ApiError> {
    let rolling = deployment.is_some_and(|d| !rollout::complete(d));
    if !stack.has_external_providers() && !rolling {
        return Ok(None);
    }
    let ns = stack.namespace;
    let name = stack.name;
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default().labels(&owned_by_selector(name)))
        .await
        .map_err(api_err(format!("list the Pods of {ns}/{name}")))?;
    Ok(Some(pods.items))
}

/// The ReplicaSets of the stack's Deployment (its revisions), for a rollback.
pub(super) async fn replica_sets(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<Vec<ReplicaSet>, ApiError> {
    let ns = stack.namespace;
    let name = stack.name;
    let sets = Api::<ReplicaSet>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default().labels(&owned_by_selector(name)))
        .await
        .map_err(api_err(format!("list the ReplicaSets of {ns}/{name}")))?;
    Ok(sets.items)
}

/// What the server of a Ready stack says about itself, when it is due to be read (see
/// `server_info`): `None` when it is not due.
pub(super) async fn server_info(
    stack: &Stack<'_>,
    ctx: &Context,
    deployment: &Deployment,
) -> Option<ServerInfo> {
    let uid = Some(stack.uid()).filter(|uid| !uid.is_empty())?;
    // The Deployment's generation changes with every new revision: a new config is read at once.
    let revision = deployment
        .metadata
        .generation
        .unwrap_or_default()
        .to_string();
    let now = std::time::Instant::now();
    if !ctx.servers.due(uid, &revision, now) {
        return ctx.servers.last_info(uid, &revision);
    }
    let info = read_server(stack, ctx).await;
    ctx.servers.record(uid, &revision, now, &info);
    Some(info)
}

async fn read_server(stack: &Stack<'_>, ctx: &Context) -> ServerInfo {
    let ns = stack.namespace;
    let name = service_name(stack.name);
    let service = match Api::<Service>::namespaced(ctx.client.clone(), ns)
        .get_opt(&name)
        .await
    {
        Ok(Some(service)) => service,
        Ok(None) => {
            return ServerInfo::NotResponding(format!("Service {ns}/{name} does not exist"));
        }
        Err(e) => {
            return ServerInfo::NotResponding(format!("cannot read Service {ns}/{name}: {e}"));
        }
    };
    let Some(ip) = service
        .spec
        .and_then(|s| s.cluster_ip)
        .filter(|ip| !ip.is_empty() && ip != "None")
    else {
        return ServerInfo::NotResponding(format!("Service {ns}/{name} has no cluster IP"));
    };
    let port = stack.networking.port;
    let scheme = if stack.networking.tls {
        "https"
    } else {
        "http"
    };
    let host = if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip
    };
    // Behind a gateway the server answers only callers the gateway named (its headers).
    let caller = stack
        .networking
        .gateway
        .map(|_| crate::stack_config::OPERATOR_CALLER);
    ctx.servers
        .read(&format!("{scheme}://{host}:{port}"), caller)
        .await
}
