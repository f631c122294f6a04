//! The observe step: reads what runs, for the status. The Deployment is read once at the start
//! of a reconcile (the apply step reuses it); the server Pods only when the status needs them.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams};

use super::context::Context;
use super::error::{ApiError, api_err};
use super::owned_index::Known;
use crate::core::observed::ServerInfo;
use crate::core::rollout;
use crate::core::stack::Stack;
use crate::naming::{owned_by_selector, service_name};

/// The Deployment of the same name, if any. Not read for a stack no operator has written a
/// status for while the Deployments' watches see none of that name: none of its own can exist
/// (see `write::Indexed::untouched`), and a stranger's of that name is found by the apply's
/// write, as after a read.
pub(super) async fn deployment(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<Option<Deployment>, ApiError> {
    let ns = stack.namespace;
    let name = stack.name;
    let unseen = matches!(
        ctx.owned.lookup("Deployment", ns, name, stack.generation),
        Known::Absent { .. }
    );
    if unseen && !stack.recorded.written {
        return Ok(None);
    }
    Api::<Deployment>::namespaced(ctx.client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(api_err(format!("read Deployment {ns}/{name}")))
}

/// Which server Pods a reconcile needs to see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PodsNeeded {
    /// None: the status does not use them.
    No,
    /// They are needed, but none can exist yet: the Deployment was created by this very
    /// reconcile, and its controller has made no ReplicaSet.
    NoneYet,
    /// They are needed: list them.
    List,
}

/// How long a rollout goes without progress before its Pods are listed for the status: the
/// timed look at a young rollout comes at that age (`next_look`), so one stuck that long is
/// looked at with its Pods; one that moves on before says nothing a Pod would add.
pub(super) const PODS_AFTER: std::time::Duration = crate::core::next_look::YOUNG_ROLLOUT;

/// What a reconcile knows of the rollout when it decides whether to list the Pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PodsWanted {
    /// External providers are installed in the Pods: their init containers are the steps the
    /// status reports.
    pub(super) external_providers: bool,
    /// The rollout is not complete and has gone [`PODS_AFTER`] without progress: a waiting
    /// container says why.
    pub(super) rollout_waiting: bool,
    /// A rollback is due on what the newest revision's Pods show (`rollback::judges_pods`).
    pub(super) rollback_due: bool,
    /// The Deployment did not exist before this reconcile's apply.
    pub(super) created_now: bool,
}

/// Whether the Pods are needed, and can exist.
pub(super) fn pods_needed(wanted: PodsWanted) -> PodsNeeded {
    let needed = wanted.external_providers || wanted.rollout_waiting || wanted.rollback_due;
    match (needed, wanted.created_now) {
        (false, _) => PodsNeeded::No,
        (true, true) => PodsNeeded::NoneYet,
        (true, false) => PodsNeeded::List,
    }
}

/// Whether `deployment`'s rollout is not complete and has gone [`PODS_AFTER`] without progress
/// at `now`.
pub(super) fn rollout_waiting(deployment: Option<&Deployment>, now: jiff::Timestamp) -> bool {
    deployment.is_some_and(|d| {
        !rollout::complete(d)
            && crate::core::next_look::waited(d, crate::naming::FIELD_MANAGER, now)
                .is_none_or(|waited| waited >= PODS_AFTER)
    })
}

/// The server Pods, when the status needs them ([`pods_needed`]; `None` otherwise: no read).
pub(super) async fn server_pods(
    stack: &Stack<'_>,
    ctx: &Context,
    wanted: PodsWanted,
) -> Result<Option<Vec<Pod>>, ApiError> {
    match pods_needed(wanted) {
        PodsNeeded::No => return Ok(None),
        PodsNeeded::NoneYet => return Ok(Some(Vec::new())),
        PodsNeeded::List => {}
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

/// The cluster IP of the stack's Service: the one noted when the operator last wrote or read
/// it, while the Service's watch shows the version it checked; else read.
async fn service_address(stack: &Stack<'_>, ctx: &Context) -> Result<String, String> {
    let ns = stack.namespace;
    let name = service_name(stack.name);
    let as_checked = matches!(
        ctx.owned.lookup("Service", ns, &name, stack.generation),
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
    let ip =
        cluster_ip(&service).ok_or_else(|| format!("Service {ns}/{name} has no cluster IP"))?;
    ctx.servers.note_address(stack.uid(), &ip, now);
    Ok(ip)
}

/// A Service's cluster IP, unless it has none (headless, or not yet given one).
pub(super) fn cluster_ip(service: &Service) -> Option<String> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .filter(|ip| !ip.is_empty() && ip != "None")
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
    ctx.servers
        .read(&format!("{scheme}://{host}:{port}"), caller)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(external: bool, waiting: bool, due: bool, created: bool) -> PodsWanted {
        PodsWanted {
            external_providers: external,
            rollout_waiting: waiting,
            rollback_due: due,
            created_now: created,
        }
    }

    #[test]
    fn pods_are_listed_only_when_the_status_needs_them_and_they_can_exist() {
        let cases = [
            // (external providers, rollout waiting, rollback due, created by this reconcile)
            (wanted(false, false, false, false), PodsNeeded::No),
            (wanted(false, false, false, true), PodsNeeded::No),
            (wanted(true, false, false, false), PodsNeeded::List),
            (wanted(false, true, false, false), PodsNeeded::List),
            (wanted(false, false, true, false), PodsNeeded::List),
            (wanted(false, true, false, true), PodsNeeded::NoneYet),
            (wanted(true, true, true, true), PodsNeeded::NoneYet),
        ];
        for (wanted, expected) in cases {
            assert_eq!(pods_needed(wanted), expected, "{wanted:?}");
        }
    }

    fn deployment(status: serde_json::Value) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "generation": 2, "creationTimestamp": "2026-11-29T10:00:00Z",
                "managedFields": [{"manager": crate::naming::FIELD_MANAGER, "operation": "Apply",
                    "time": "2026-11-29T10:00:30Z"}]},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_rollout_is_waiting_once_it_has_gone_a_while_without_progress() {
        let at = |time: &str| time.parse::<jiff::Timestamp>().unwrap();
        let rolling = deployment(serde_json::json!({"observedGeneration": 2, "replicas": 1,
            "updatedReplicas": 0, "conditions": [{"type": "Progressing", "status": "True",
            "lastUpdateTime": "2026-11-29T10:00:40Z"}]}));
        assert!(
            !rollout_waiting(Some(&rolling), at("2026-11-29T10:00:45Z")),
            "progress 5 s ago"
        );
        assert!(
            rollout_waiting(Some(&rolling), at("2026-11-29T10:00:50Z")),
            "10 s without"
        );
        let complete = deployment(serde_json::json!({"observedGeneration": 2, "replicas": 1,
            "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}));
        assert!(!rollout_waiting(
            Some(&complete),
            at("2026-11-29T11:00:00Z")
        ));
        assert!(
            !rollout_waiting(None, at("2026-11-29T11:00:00Z")),
            "no Deployment"
        );
    }
}
