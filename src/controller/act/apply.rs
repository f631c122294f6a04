//! The apply step: writes what differs from the built set, in dependency order. The config, the
//! derived Secret, the ServiceAccount, the CA bundle and the data volume the Pods need come
//! first, then the Deployment (once, with everything together), then the objects around it.
//! Nothing is written when nothing changed.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch};
use kube::runtime::events::EventType;

use super::hand_over;
use super::prune;
use super::write::{
    Change, Indexed, create_config_map_once, patch_by, strategy_switch, sync, sync_derived_secret,
    sync_from, sync_in, sync_pvc,
};
use crate::api::conditions::Reason;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::controller::publish::events;
use crate::core::builders::{self, Desired};
use crate::core::door::Door;
use crate::core::observed::Applied;
use crate::core::observed::Observed;
use crate::core::rollout;
use crate::core::stack::Stack;
use crate::naming;

/// Writes `desired`. `observed` is what the reconcile read at its start (the Deployment, the
/// data volume's claim); with `keep_deployment` the Deployment stays as it is (a rolled-back
/// revision held in place).
pub(in crate::controller) async fn apply(
    stack: &Stack<'_>,
    ctx: &Context,
    desired: &Desired,
    observed: &Observed,
    keep_deployment: bool,
) -> Result<Applied, ApiError> {
    // A stack moved in place: what the LlamaStackDistribution controlled is the OGXServer's
    // before anything else is written.
    let handing_over = hand_over::moving(stack, observed);
    if let Some(owner) = stack.subject.owner.as_ref().filter(|_| handing_over) {
        let handed = hand_over::hand_over(stack, ctx, owner).await?;
        let note = format!(
            "{handed} objects of LlamaStackDistribution {} are this OGXServer's now; deleting the LlamaStackDistribution deletes none of them",
            stack.name
        );
        let on = &stack.subject;
        events::publish(ctx, on, EventType::Normal, Reason::MovedToOGXServer, note).await;
    }
    // Objects just handed over are still in the old door's watches as the old stack's: this
    // reconcile reads them all.
    let index = (!handing_over).then_some(Indexed {
        index: &ctx.owned,
        generation: stack.generation,
        untouched: !stack.recorded.written,
    });
    let pvc_phase = what_the_pods_need(stack, ctx, desired, observed, index).await?;
    let current = observed.deployment.as_ref();
    // A held rollback keeps the running Deployment; otherwise the built one is applied.
    let deployment = match current.filter(|_| keep_deployment) {
        Some(kept) => Some(kept.clone()),
        None => apply_deployment(stack, ctx, &desired.deployment, current).await?,
    };
    let route_url = around_the_server(stack, ctx, desired, index).await?;
    if let Some(deployment) = &deployment {
        prune_when_rollout_settles(stack, ctx, deployment, current.is_none()).await?;
    }
    Ok(Applied {
        deployment,
        pvc_phase,
        route_url,
    })
}

/// Writes what the server Pods need before they start: the config, the derived Secret, the
/// ServiceAccount, the CA bundle and the data volume. Returns the volume's claim phase.
async fn what_the_pods_need(
    stack: &Stack<'_>,
    ctx: &Context,
    desired: &Desired,
    observed: &Observed,
    index: Option<Indexed<'_>>,
) -> Result<Option<String>, ApiError> {
    // Every field named: an object added to `Desired` is written here or in
    // `around_the_server`, or said to be written elsewhere.
    let Desired {
        config_map,
        deployment: _,
        service: _,
        service_account,
        pvc,
        ca_bundle,
        network_policy: _,
        ingress: _,
        route: _,
        hpa: _,
        pdb: _,
        derived_secret,
        service_monitor: _,
        prometheus_rule: _,
    } = desired;
    let (ns, uid, client) = (stack.namespace, stack.uid(), &ctx.client);
    if let Some(cm) = config_map
        && create_config_map_once(&Api::namespaced(client.clone(), ns), &ctx.owned, cm).await?
    {
        ctx.metrics.config_generated();
    }
    if let Some(secret) = derived_secret {
        sync_derived_secret(&Api::<Secret>::namespaced(client.clone(), ns), secret).await?;
    }
    let sa_name = naming::managed_service_account_name(stack.name);
    sync_in::<ServiceAccount>(client, index, ns, &sa_name, service_account.as_ref(), uid).await?;
    // Named by content: a new bundle is a new object, the old one is pruned once no revision
    // that runs or may be returned to names it.
    if let Some(bundle) = ca_bundle {
        let name = bundle.name_any();
        sync_in::<ConfigMap>(client, index, ns, &name, Some(bundle), uid).await?;
    }
    // A volume taken over from another stack keeps its size: it was sized (and its class
    // chosen) for that stack, and a refused resize must not hold the server back.
    let grow = stack.adoption.claim.is_none();
    match pvc {
        Some(pvc) => {
            let api = Api::namespaced(client.clone(), ns);
            Ok(Some(
                sync_pvc(&api, pvc, observed.claim.as_ref(), grow).await?,
            ))
        }
        None => Ok(None),
    }
}

/// Writes the objects around the running server: its Service (noting the cluster IP the next
/// server read connects to), NetworkPolicy, Ingress or Route, HPA, PDB and, for an `OGXServer`,
/// its monitoring. Returns where the stack is exposed, once known.
async fn around_the_server(
    stack: &Stack<'_>,
    ctx: &Context,
    desired: &Desired,
    index: Option<Indexed<'_>>,
) -> Result<Option<String>, ApiError> {
    let Desired {
        service,
        network_policy,
        ingress,
        route,
        hpa,
        pdb,
        service_monitor,
        prometheus_rule,
        ..
    } = desired;
    let (ns, uid, client) = (stack.namespace, stack.uid(), &ctx.client);
    let service_name = naming::service_name(stack.name);
    let (_, written) =
        sync_in::<Service>(client, index, ns, &service_name, Some(service), uid).await?;
    if let Some(ip) = written
        .as_ref()
        .and_then(crate::controller::memory::server_info::cluster_ip)
    {
        ctx.servers
            .note_address(uid, &ip, std::time::Instant::now());
    }
    let policy_name = naming::network_policy_name(stack.name);
    let policy = network_policy.as_ref();
    sync_in::<NetworkPolicy>(client, index, ns, &policy_name, policy, uid).await?;
    let route_url = expose(stack, ctx, ingress.as_ref(), route.as_ref(), index).await?;
    let hpa_name = naming::hpa_name(stack.name);
    sync_in::<HorizontalPodAutoscaler>(client, index, ns, &hpa_name, hpa.as_ref(), uid).await?;
    let pdb_name = naming::pdb_name(stack.name);
    sync_in::<PodDisruptionBudget>(client, index, ns, &pdb_name, pdb.as_ref(), uid).await?;
    // Only the OGX door has `monitoring`: LLSD stacks pay no reads for it.
    if matches!(stack.door, Door::OgxServer { .. }) {
        let (monitor_, rule) = (service_monitor.as_ref(), prometheus_rule.as_ref());
        monitor(ctx, stack, monitor_, rule).await?;
    }
    Ok(route_url)
}

/// Applies the Deployment when its desired hash changed, with an Event saying what rolls out.
async fn apply_deployment(
    stack: &Stack<'_>,
    ctx: &Context,
    desired: &Deployment,
    current: Option<&Deployment>,
) -> Result<Option<Deployment>, ApiError> {
    let ns = stack.namespace;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), ns);
    if let Some(switch) = strategy_switch(desired, current) {
        deployments
            .patch(
                stack.name,
                &patch_by(naming::FIELD_MANAGER),
                &Patch::Merge(&switch),
            )
            .await
            .map_err(api_err(format!(
                "switch Deployment {} to Recreate",
                stack.name
            )))?;
    }
    let (change, deployment) = sync_from(
        &deployments,
        "Deployment",
        stack.name,
        Some(desired),
        current.cloned(),
        stack.uid(),
    )
    .await?;
    if change == Change::Applied {
        ctx.metrics.rollout();
        let reason = match current {
            Some(_) => Reason::RolloutStarted,
            None => Reason::Created,
        };
        let note = format!(
            "Deployment {} applied with image {} and config {}",
            stack.name,
            rollout::image_of(desired),
            rollout::config_of(desired)
        );
        events::publish(ctx, &stack.subject, EventType::Normal, reason, note).await;
    }
    Ok(deployment)
}

/// Applies (or, with monitoring off, deletes) an `OGXServer`'s ServiceMonitor and
/// PrometheusRule, where the cluster serves them.
async fn monitor(
    ctx: &Context,
    stack: &Stack<'_>,
    service_monitor: Option<&DynamicObject>,
    prometheus_rule: Option<&DynamicObject>,
) -> Result<(), ApiError> {
    if !ctx.monitoring_available() {
        return Ok(());
    }
    let objects = [
        (
            builders::service_monitor_resource(),
            naming::service_monitor_name(stack.name),
            service_monitor,
        ),
        (
            builders::prometheus_rule_resource(),
            naming::prometheus_rule_name(stack.name),
            prometheus_rule,
        ),
    ];
    for (resource, name, desired) in objects {
        let api: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), stack.namespace, &resource);
        sync(&api, &resource.kind, &name, desired, stack.uid()).await?;
    }
    Ok(())
}

/// Applies the Ingress, or the Route where the cluster serves Routes; returns the URL.
async fn expose(
    stack: &Stack<'_>,
    ctx: &Context,
    ingress: Option<&Ingress>,
    route: Option<&DynamicObject>,
    index: Option<Indexed<'_>>,
) -> Result<Option<String>, ApiError> {
    let ns = stack.namespace;
    let uid = stack.uid();
    let name = naming::ingress_name(stack.name);
    // A wanted Ingress is read (its address is the URL); one not wanted only where the watches
    // cannot say it is absent.
    let index = index.filter(|_| ingress.is_none());
    let (_, ingress) = sync_in::<Ingress>(&ctx.client, index, ns, &name, ingress, uid).await?;
    let mut url = ingress.as_ref().and_then(ingress_url);
    if ctx.routes_available() {
        let routes: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), ns, &builders::route_resource());
        let (_, route) = sync(&routes, "Route", &name, route, uid).await?;
        if let Some(host) = route.as_ref().and_then(|r| r.data["spec"]["host"].as_str()) {
            url = Some(format!("https://{host}"));
        }
    }
    Ok(url)
}

/// `http://<host or load balancer>` of an Ingress (`https://` when it has a TLS section); empty
/// until it has an address.
fn ingress_url(ingress: &Ingress) -> Option<String> {
    let lb = ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .and_then(|l| l.first())
        .and_then(|l| l.hostname.clone().or_else(|| l.ip.clone()));
    let host = ingress
        .spec
        .as_ref()
        .and_then(|s| s.rules.as_ref())
        .and_then(|r| r.first())
        .and_then(|r| r.host.clone());
    // With a TLS section the ingress controller serves HTTPS for the host.
    let tls = ingress
        .spec
        .as_ref()
        .and_then(|s| s.tls.as_ref())
        .is_some_and(|t| !t.is_empty());
    let scheme = if tls { "https" } else { "http" };
    Some(
        host.or(lb)
            .map(|h| format!("{scheme}://{h}"))
            .unwrap_or_default(),
    )
}

/// Prunes old revisions' objects once per rollout state (not on every resync: LISTs per object
/// per resync would dominate a large cluster's load); `created_now` when this reconcile made the
/// Deployment.
async fn prune_when_rollout_settles(
    stack: &Stack<'_>,
    ctx: &Context,
    deployment: &Deployment,
    created_now: bool,
) -> Result<(), ApiError> {
    let generation = deployment.metadata.generation.unwrap_or_default();
    let settled = deployment.status.as_ref().is_some_and(|s| {
        s.observed_generation == Some(generation) && s.replicas == s.updated_replicas
    });
    let key = stack.uid();
    if !ctx.needs_prune(key, (generation, settled)) {
        return Ok(());
    }
    // The Deployment was made by this very reconcile: no earlier revision runs, and what an
    // earlier one left (a Deployment deleted and made again) waits for the prune once this
    // rollout settles, which still looks.
    if !settled && created_now {
        ctx.pruned(key, (generation, settled));
        return Ok(());
    }
    prune::prune(&ctx.client, &ctx.owned, stack, deployment, settled).await?;
    ctx.pruned(key, (generation, settled));
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::networking::v1::Ingress;
    use serde_json::json;

    use super::ingress_url;

    #[test]
    fn an_ingress_with_tls_is_reached_over_https() {
        let ingress = |spec: serde_json::Value| -> Ingress {
            serde_json::from_value(json!({"metadata": {"name": "i"}, "spec": spec})).unwrap()
        };
        let rules = json!([{"host": "llama.example.com"}]);
        assert_eq!(
            ingress_url(&ingress(json!({"rules": rules}))).as_deref(),
            Some("http://llama.example.com")
        );
        assert_eq!(
            ingress_url(&ingress(
                json!({"rules": rules, "tls": [{"secretName": "c"}]})
            ))
            .as_deref(),
            Some("https://llama.example.com")
        );
    }
}
