//! How the server is reached: Service, NetworkPolicy (`allowedFrom`), Ingress or Route (`expose`).

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use kube::api::{ApiResource, DynamicObject};
use serde_json::{Value, json};

use super::names::PORT_NAME;
use super::object::{BuildError, metadata, selector, stamp, stamped};
use crate::controller::stack::Stack;

/// What the Service's name adds to the resource's name.
pub const SERVICE_SUFFIX: &str = "-service";

/// Name of the Service.
pub fn service_name(stack: &Stack) -> String {
    format!("{}{SERVICE_SUFFIX}", stack.name)
}

/// Name of the NetworkPolicy.
pub fn network_policy_name(stack: &Stack) -> String {
    format!("{}-network-policy", stack.name)
}

/// Name of the Ingress (and of the Route).
pub fn ingress_name(stack: &Stack) -> String {
    format!("{}-ingress", stack.name)
}

/// OpenShift's `route.openshift.io/v1` Route.
pub fn route_resource() -> ApiResource {
    ApiResource {
        group: "route.openshift.io".to_owned(),
        version: "v1".to_owned(),
        api_version: "route.openshift.io/v1".to_owned(),
        kind: "Route".to_owned(),
        plural: "routes".to_owned(),
    }
}

/// The ClusterIP Service in front of the server.
pub(super) fn service(stack: &Stack) -> Result<Service, BuildError> {
    stamped(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": metadata(stack, &service_name(stack)),
        "spec": {"selector": selector(stack), "ports": [{"name": PORT_NAME, "port": stack.networking.port, "targetPort": PORT_NAME, "protocol": "TCP"}]},
    }))
}

/// Only the listed namespaces (plus the own namespace and the operator's) reach the server port;
/// `*` opens it to every namespace. Without `allowedFrom` no policy is made.
pub(super) fn network_policy(
    stack: &Stack,
    operator_namespace: Option<&str>,
) -> Result<Option<NetworkPolicy>, BuildError> {
    let Some(allowed) = stack.networking.allowed_from else {
        return Ok(None);
    };
    let namespaces = allowed.namespaces.clone().unwrap_or_default();
    let by_name = |ns: &str| json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}});
    let from: Vec<Value> = if namespaces.iter().any(|n| n == "*") {
        vec![json!({"namespaceSelector": {}})]
    } else {
        let mut peers = vec![json!({"podSelector": {}})];
        peers.extend(operator_namespace.map(by_name));
        peers.extend(namespaces.iter().map(|n| by_name(n)));
        peers.extend(allowed.labels.iter().flatten().map(|key| {
            json!({"namespaceSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]}})
        }));
        peers
    };
    stamped(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": metadata(stack, &network_policy_name(stack)),
        "spec": {"podSelector": {"matchLabels": selector(stack)}, "policyTypes": ["Ingress"],
            "ingress": [{"from": from, "ports": [{"protocol": "TCP", "port": stack.networking.port}]}]},
    }))
    .map(Some)
}

/// `expose`: an Ingress, or a Route where the cluster serves Routes. `(None, None)` when not exposed.
/// What a user should know about the exposure the operator makes: an Ingress without
/// `expose.tlsSecretName` has no TLS section (and without `expose.hostname` no host), so unless
/// the ingress controller terminates TLS by default, clients reach the server over plain HTTP
/// (and `status.routeURL` says `http://`). A Route terminates TLS at the router: nothing to say.
pub fn exposure_warning(stack: &Stack, routes_available: bool) -> Option<String> {
    if routes_available {
        return None;
    }
    let options = stack.networking.expose.clone()?;
    Some(match (options.hostname, options.tls_secret_name) {
        (None, None) => "networking.expose: the Ingress has no host and no TLS, so any host name the ingress controller serves reaches the server over plain HTTP; set networking.expose.hostname and networking.expose.tlsSecretName".to_owned(),
        (None, Some(_)) => "networking.expose: the Ingress has a TLS Secret but no host, so its certificate is served for any host name the ingress controller serves; set networking.expose.hostname to the name the certificate is for".to_owned(),
        (Some(host), None) => format!("networking.expose: the Ingress for {host} has no TLS section; clients reach it over plain HTTP unless the ingress controller terminates TLS for that host by default; set networking.expose.tlsSecretName"),
        (Some(_), Some(_)) => return None,
    })
}

pub(super) fn exposure(
    stack: &Stack,
    routes_available: bool,
) -> Result<(Option<Ingress>, Option<DynamicObject>), BuildError> {
    let Some(options) = stack.networking.expose.clone() else {
        return Ok((None, None));
    };
    let hostname = options.hostname.clone();
    let tls = stack.networking.tls;
    if routes_available {
        let mut spec = json!({"to": {"kind": "Service", "name": service_name(stack)}, "port": {"targetPort": PORT_NAME}});
        if let Some(host) = &hostname {
            spec["host"] = json!(host);
        }
        // The server terminates TLS itself: the router passes the connection through.
        spec["tls"] = if tls {
            json!({"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"})
        } else {
            json!({"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"})
        };
        // A Route has no typed form here: as a dynamic object it keeps every field it is given.
        let route: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": metadata(stack, &ingress_name(stack)),
            "spec": spec,
        }))
        .map_err(|source| BuildError::Invalid {
            kind: "Route",
            source,
        })?;
        let route = stamp("Route", route)?;
        return Ok((None, Some(route)));
    }
    let mut rule = json!({"http": {"paths": [{"path": "/", "pathType": "Prefix",
        "backend": {"service": {"name": service_name(stack), "port": {"name": PORT_NAME}}}}]}});
    if let Some(host) = &hostname {
        rule["host"] = json!(host);
    }
    let mut metadata = metadata(stack, &ingress_name(stack));
    if tls {
        // The backend speaks HTTPS; common controllers read this annotation.
        metadata["annotations"] = json!({"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"});
    }
    let mut spec = json!({"rules": [rule]});
    if let Some(class) = &options.ingress_class_name {
        spec["ingressClassName"] = json!(class);
    }
    if let Some(secret) = &options.tls_secret_name {
        let mut tls = json!({"secretName": secret});
        if let Some(host) = &hostname {
            tls["hosts"] = json!([host]);
        }
        spec["tls"] = json!([tls]);
    }
    let ingress = stamped(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": metadata,
        "spec": spec,
    }))?;
    Ok((Some(ingress), None))
}
