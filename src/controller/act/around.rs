//! What is around the running server, written once its Deployment is: its Service (noting the
//! cluster IP the next server read connects to), NetworkPolicy, Ingress or Route, HPA, PDB and,
//! for an `OGXServer`, its monitoring.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DynamicObject};

use super::write::{Indexed, sync, sync_in};
use crate::controller::context::Context;
use crate::controller::error::ApiError;
use crate::core::builders::{self, Desired};
use crate::core::door::Door;
use crate::core::observed::cluster_ip;
use crate::core::stack::Stack;
use crate::naming;

/// Writes the objects around the running server. Returns where the stack is exposed, once known.
pub(in crate::controller) async fn around_the_server(
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
    let (ns, uid, client) = (stack.namespace(), stack.uid(), &ctx.client);
    let service_name = naming::service_name(stack.name());
    let (_, written) =
        sync_in::<Service>(client, index, ns, &service_name, Some(service), uid).await?;
    if let Some(ip) = written.as_ref().and_then(cluster_ip) {
        ctx.servers
            .note_address(uid, &ip, std::time::Instant::now());
    }
    let policy_name = naming::network_policy_name(stack.name());
    let policy = network_policy.as_ref();
    sync_in::<NetworkPolicy>(client, index, ns, &policy_name, policy, uid).await?;
    // A wanted Ingress is read (its address is the URL); one not wanted only where the watches
    // cannot say it is absent. The Route has the Ingress's name.
    let exposed_as = naming::ingress_name(stack.name());
    let ingress_index = index.filter(|_| ingress.is_none());
    let (_, ingress) = sync_in::<Ingress>(
        client,
        ingress_index,
        ns,
        &exposed_as,
        ingress.as_ref(),
        uid,
    )
    .await?;
    let route = match ctx.routes_available() {
        true => {
            let routes = Api::namespaced_with(client.clone(), ns, &builders::route_resource());
            sync(&routes, "Route", &exposed_as, route.as_ref(), uid)
                .await?
                .1
        }
        false => None,
    };
    let hpa_name = naming::hpa_name(stack.name());
    sync_in::<HorizontalPodAutoscaler>(client, index, ns, &hpa_name, hpa.as_ref(), uid).await?;
    let pdb_name = naming::pdb_name(stack.name());
    sync_in::<PodDisruptionBudget>(client, index, ns, &pdb_name, pdb.as_ref(), uid).await?;
    // Only the OGX door has `monitoring`: LLSD stacks pay no reads for it.
    if matches!(stack.door, Door::OgxServer { .. }) && ctx.monitoring_available() {
        let monitors = [
            (
                builders::service_monitor_resource(),
                naming::service_monitor_name(stack.name()),
                service_monitor,
            ),
            (
                builders::prometheus_rule_resource(),
                naming::prometheus_rule_name(stack.name()),
                prometheus_rule,
            ),
        ];
        for (resource, name, desired) in monitors {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
            sync(&api, &resource.kind, &name, desired.as_ref(), uid).await?;
        }
    }
    Ok(exposed_at(ingress.as_ref(), route.as_ref()))
}

/// Where the stack is exposed: the Route's host over HTTPS where there is one, else the
/// Ingress's address.
fn exposed_at(ingress: Option<&Ingress>, route: Option<&DynamicObject>) -> Option<String> {
    match route.and_then(|r| r.data["spec"]["host"].as_str()) {
        Some(host) => Some(format!("https://{host}")),
        None => ingress.and_then(ingress_url),
    }
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
