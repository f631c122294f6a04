//! What the look reads of what runs, for the status: the server Pods and the ReplicaSets when
//! the status needs them, the server itself when it is due (the Deployment is gather's, read
//! once at the start of a reconcile, and the apply reuses it). The ReplicaSets are also what
//! gather reads for a revision a rollback may restore.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams};

use crate::controller::context::Context;
use crate::controller::error::{ApiError, Error, api_err};
use crate::controller::memory::owned_index::Known;
use crate::core::observed::{Seen, ServerInfo};
use crate::core::praxis::PraxisLook;
use crate::core::reads::{Looks, PodsNeeded};
use crate::core::stack::Stack;
use crate::naming::service_name;

/// Reads what the core asked to look at after the act ([`crate::core::reads::looks`]): the server Pods, the
/// ReplicaSets once Pods are found, the server itself.
pub(in crate::controller) async fn look(
    stack: &Stack<'_>,
    ctx: &Context,
    looks: &Looks<'_>,
) -> Result<Seen, Error> {
    let pods = server_pods(stack, ctx, looks.pods)
        .await
        .map_err(Error::Look)?;
    let found = pods.as_ref().is_some_and(|pods| !pods.is_empty());
    let replica_sets = if looks.replica_sets && found {
        Some(revisions(stack, ctx).await.map_err(Error::Look)?)
    } else {
        None
    };
    let server = match looks.server {
        Some(running) => server_info(stack, ctx, running).await,
        None => None,
    };
    let praxis_ready = match &looks.praxis {
        Some(Ok(praxis)) => Some(praxis_ready(ctx, praxis).await),
        Some(Err(_)) | None => None,
    };
    Ok(Seen {
        pods,
        replica_sets,
        server,
        praxis_ready,
    })
}

/// How many of the Praxis Pods `look` names are Ready, or why they could not be listed (said
/// in the status, not failing the reconcile: the condition only informs).
async fn praxis_ready(ctx: &Context, look: &PraxisLook) -> Result<usize, String> {
    Api::<Pod>::namespaced(ctx.client.clone(), &look.namespace)
        .list(&ListParams::default().labels(&look.selector))
        .await
        .map(|pods| crate::core::praxis::ready_count(&pods.items))
        .map_err(|e| crate::error_chain(&e))
}

/// The server Pods, when the look needs them (`None` otherwise: no read); none without a read
/// where the Pods' watch knows the stack has none.
pub(in crate::controller) async fn server_pods(
    stack: &Stack<'_>,
    ctx: &Context,
    needed: PodsNeeded,
) -> Result<Option<Vec<Pod>>, ApiError> {
    match needed {
        PodsNeeded::No => return Ok(None),
        PodsNeeded::NoneYet => return Ok(Some(Vec::new())),
        PodsNeeded::List => {}
    }
    let ns = stack.namespace();
    let name = stack.name();
    // Every server Pod's change wakes its stack: none seen is none to list.
    if ctx.server_pods.none_of(ns, name, stack.door.managed_by()) {
        return Ok(Some(Vec::new()));
    }
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default().labels(&stack.owned_by))
        .await
        .map_err(api_err(format!("list the Pods of {ns}/{name}")))?;
    Ok(Some(pods.items))
}

/// The ReplicaSets of the stack's Deployment (its revisions), for a rollback.
pub(in crate::controller) async fn revisions(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<Vec<ReplicaSet>, ApiError> {
    let ns = stack.namespace();
    let name = stack.name();
    let sets = Api::<ReplicaSet>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default().labels(&stack.owned_by))
        .await
        .map_err(api_err(format!("list the ReplicaSets of {ns}/{name}")))?;
    Ok(sets.items)
}

/// What the server of a Ready stack says about itself, when it is due to be read (see
/// `server_info`): `None` when it is not due.
pub(in crate::controller) async fn server_info(
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

/// The cluster IP of the stack's Service: the one noted when the operator last wrote or read
/// it, while the Service's watch shows the version it checked; else read.
async fn service_address(stack: &Stack<'_>, ctx: &Context) -> Result<String, String> {
    let ns = stack.namespace();
    let name = service_name(stack.name());
    let as_checked = matches!(
        ctx.owned.lookup("Service", ns, &name, stack.generation()),
        Known::Present(seen) if seen.checked()
    );
    let now = std::time::Instant::now();
    if let Some(ip) = as_checked
        .then(|| ctx.servers.address(stack.uid(), now))
        .flatten()
    {
        return Ok(ip);
    }
    let service = match Api::<Service>::namespaced(ctx.client.clone(), ns)
        .get_opt(&name)
        .await
    {
        Ok(Some(service)) => service,
        Ok(None) => return Err(format!("Service {ns}/{name} does not exist")),
        Err(e) => return Err(format!("cannot read Service {ns}/{name}: {e}")),
    };
    let ip = crate::core::observed::cluster_ip(&service)
        .ok_or_else(|| format!("Service {ns}/{name} has no cluster IP"))?;
    ctx.servers.note_address(stack.uid(), &ip, now);
    Ok(ip)
}

async fn read_server(stack: &Stack<'_>, ctx: &Context) -> ServerInfo {
    let ip = match service_address(stack, ctx).await {
        Ok(ip) => ip,
        Err(why) => return ServerInfo::NotResponding(why),
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
    let base = format!("{scheme}://{host}:{port}");
    super::server::read(ctx.server_http.as_ref(), &base, caller).await
}
