//! How the server is reached: Service, NetworkPolicy (`allowedFrom`, `policy`), Ingress or Route
//! (`expose`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, IngressTLS, NetworkPolicy, NetworkPolicyEgressRule,
    NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
    ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{ApiResource, DynamicObject, TypeMeta};
use serde_json::json;

use super::object::Common;
use crate::api::common::AllowedFromSpec;
use crate::api::network_peers;
use crate::api::v1alpha2::{ExposeOptions, PraxisGateway};
use crate::core::stack::Stack;
use crate::naming::{PORT_NAME, ingress_name, network_policy_name, service_name};

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
pub(super) fn service(stack: &Stack, common: &Common) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(service_name(stack.name())),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(common.selector_labels.clone()),
            ports: Some(
                common
                    .ports
                    .iter()
                    .map(|&(name, port)| ServicePort {
                        name: Some(name.to_owned()),
                        port,
                        target_port: Some(IntOrString::String(name.to_owned())),
                        protocol: Some("TCP".to_owned()),
                        ..ServicePort::default()
                    })
                    .collect(),
            ),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// Only the listed namespaces (plus the own namespace and the operator's) reach the server port;
/// `*` opens it to every namespace. Behind a gateway the gateway's Pods take the own namespace's
/// place (the OGX operator's Praxis lock-down), and the policy is always made: the server trusts
/// the identity headers of whoever reaches it. Rules of the user's own (`policy`) are added: ingress beside
/// that default rule, egress (with DNS to kube-dns) when given or listed in `policyTypes`.
/// Without `allowedFrom`, `policy` and a gateway no policy is made.
pub(super) fn network_policy(
    stack: &Stack,
    common: &Common,
    operator_namespace: Option<&str>,
) -> Option<NetworkPolicy> {
    let policy = stack.networking.policy;
    let gateway = stack.networking.gateway;
    let allowed = match (stack.networking.allowed_from, policy) {
        (None, None) if gateway.is_none() => return None,
        (Some(allowed), _) => allowed.clone(),
        (None, _) => AllowedFromSpec::default(),
    };
    // Behind a gateway `*` does not open the server (see `gateway_warnings`); the namespaces
    // listed beside it still may reach it.
    let listed = network_peers::listed_namespaces(&allowed).or_else(|| {
        gateway.and_then(|_| network_peers::listed_namespaces(&network_peers::named_only(&allowed)))
    });
    let from = match listed {
        None => vec![network_peers::every_namespace()],
        Some(listed) => {
            // The server's own namespace (behind a gateway: the gateway's Pods instead) and the
            // operator's, then the listed ones.
            let own = gateway.map_or_else(
                || NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector::default()),
                    ..NetworkPolicyPeer::default()
                },
                praxis_peer,
            );
            let operator = operator_namespace.map(network_peers::namespace_named);
            std::iter::once(own).chain(operator).chain(listed).collect()
        }
    };
    let mut ingress = vec![NetworkPolicyIngressRule {
        from: Some(from),
        ports: Some(vec![network_peers::tcp_port(stack.networking.port)]),
    }];
    ingress.extend(stack.door.metrics_port().map(monitoring_ingress));
    ingress.extend(policy.and_then(|p| p.ingress.clone()).unwrap_or_default());
    let own_egress = policy.and_then(|p| p.egress.clone()).unwrap_or_default();
    let mut policy_types = policy
        .and_then(|p| p.policy_types.clone())
        .unwrap_or_else(|| {
            let mut types = vec!["Ingress".to_owned()];
            if !own_egress.is_empty() {
                types.push("Egress".to_owned());
            }
            types
        });
    // Behind a gateway ingress is always governed, as the OGX operator's Praxis policy is.
    if gateway.is_some() && !policy_types.iter().any(|t| t == "Ingress") {
        policy_types.insert(0, "Ingress".to_owned());
    }
    let governs = |t: &str| policy_types.iter().any(|p| p == t);
    let egress = governs("Egress").then(|| {
        let mut rules = own_egress.clone();
        rules.push(dns_egress());
        rules
    });
    Some(NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(network_policy_name(stack.name())),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(common.selector.clone()),
            ingress: governs("Ingress").then_some(ingress),
            egress,
            policy_types: Some(policy_types),
        }),
    })
}

/// A selector matching exactly `labels`.
fn match_labels(labels: BTreeMap<String, String>) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels),
        ..LabelSelector::default()
    }
}

/// The Praxis Pods, by their namespace's name and their labels.
fn praxis_peer(praxis: &PraxisGateway) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        pod_selector: Some(praxis.pods()),
        ..network_peers::namespace_named(praxis.namespace())
    }
}

/// Prometheus scrapes the metrics port from OpenShift's monitoring namespaces (the namespaces
/// labelled `network.openshift.io/policy-group: monitoring`, as the OGX operator allows them);
/// elsewhere a rule of one's own in `policy.ingress` admits the scraper.
fn monitoring_ingress(metrics_port: i32) -> NetworkPolicyIngressRule {
    NetworkPolicyIngressRule {
        from: Some(vec![NetworkPolicyPeer {
            namespace_selector: Some(match_labels(BTreeMap::from([(
                "network.openshift.io/policy-group".to_owned(),
                "monitoring".to_owned(),
            )]))),
            ..NetworkPolicyPeer::default()
        }]),
        ports: Some(vec![network_peers::tcp_port(metrics_port)]),
    }
}

/// Egress to the cluster's DNS (kube-dns in kube-system, port 53): a policy that governs egress
/// would otherwise break every name the server looks up.
fn dns_egress() -> NetworkPolicyEgressRule {
    NetworkPolicyEgressRule {
        to: Some(vec![NetworkPolicyPeer {
            namespace_selector: Some(match_labels(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_owned(),
                "kube-system".to_owned(),
            )]))),
            pod_selector: Some(match_labels(BTreeMap::from([(
                "k8s-app".to_owned(),
                "kube-dns".to_owned(),
            )]))),
            ..NetworkPolicyPeer::default()
        }]),
        ports: Some(
            ["UDP", "TCP"]
                .into_iter()
                .map(|protocol| NetworkPolicyPort {
                    protocol: Some(protocol.to_owned()),
                    port: Some(IntOrString::Int(53)),
                    end_port: None,
                })
                .collect(),
        ),
    }
}

/// What a user should know about a server behind a gateway: what it does not honour there
/// (`expose`, `allowedFrom: ["*"]`, `policyTypes` without `Ingress`), since the server trusts the
/// identity headers of whoever reaches it.
pub fn gateway_warnings(stack: &Stack) -> Vec<String> {
    let networking = &stack.networking;
    if networking.gateway.is_none() {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    if networking.expose_ignored {
        warnings.push("networking.expose (an OGXServer's network.externalAccess) is not used: behind its gateway (Praxis) the server is reached only through the gateway, so no Ingress or Route is made; remove it".to_owned());
    }
    if networking
        .allowed_from
        .is_some_and(|a| network_peers::listed_namespaces(a).is_none())
    {
        warnings.push("networking.allowedFrom.namespaces: \"*\" is not used behind a gateway: the server trusts the identity headers of whoever reaches it, so only the gateway's Pods, the operator's namespace and the namespaces listed by name or label may; remove \"*\"".to_owned());
    }
    let types = networking.policy.and_then(|p| p.policy_types.as_ref());
    if types.is_some_and(|t| !t.iter().any(|t| t == "Ingress")) {
        warnings.push("networking.policy.policyTypes (an OGXServer's network.policy.policyTypes): Ingress is governed anyway behind a gateway, so that only the gateway reaches the server; list Ingress".to_owned());
    }
    warnings
}

/// What a user should know about the exposure the operator makes: an Ingress without
/// `expose.tlsSecretName` has no TLS section (and without `expose.hostname` no host), so unless
/// the ingress controller terminates TLS by default, clients reach the server over plain HTTP
/// (and `status.routeURL` says `http://`). A Route terminates TLS at the router: nothing to say.
pub fn exposure_warning(stack: &Stack, routes_available: bool) -> Option<String> {
    let options = stack.networking.expose.clone()?;
    if routes_available {
        return match (&options.hostname, &options.tls_secret_name) {
            (_, Some(_)) if stack.networking.tls => Some("networking.expose.tlsSecretName is not used: the server serves TLS itself, so its Route passes connections through and clients see the server's own certificate".to_owned()),
            (None, Some(_)) => Some("networking.expose.tlsSecretName is not used without networking.expose.hostname: the Route serves the router's certificate for the host it generates; set hostname to the name the certificate is for".to_owned()),
            _ => None,
        };
    }
    Some(match (options.hostname, options.tls_secret_name) {
        (None, None) => "networking.expose: the Ingress has no host and no TLS, so any host name the ingress controller serves reaches the server over plain HTTP; set networking.expose.hostname and networking.expose.tlsSecretName".to_owned(),
        (None, Some(_)) => "networking.expose: the Ingress has a TLS Secret but no host, so its certificate is served for any host name the ingress controller serves; set networking.expose.hostname to the name the certificate is for".to_owned(),
        (Some(host), None) => format!("networking.expose: the Ingress for {host} has no TLS section; clients reach it over plain HTTP unless the ingress controller terminates TLS for that host by default; set networking.expose.tlsSecretName"),
        (Some(_), Some(_)) => return None,
    })
}

/// `expose`: an Ingress, or a Route where the cluster serves Routes. `(None, None)` when not exposed.
pub(super) fn exposure(
    stack: &Stack,
    routes_available: bool,
) -> (Option<Ingress>, Option<DynamicObject>) {
    let Some(options) = stack.networking.expose.clone() else {
        return (None, None);
    };
    if routes_available && !ingress_for_certificate(stack, &options) {
        return (None, Some(route(stack, &options)));
    }
    (Some(ingress(stack, options)), None)
}

/// Whether an exposure with its own certificate is made as an Ingress where Routes are served:
/// OpenShift makes the Route from it, with that certificate (its ingress-to-route controller
/// copies the Secret into the Route, which the operator may not read). Not when the server
/// serves TLS itself (its Route passes connections through), nor without a host (OpenShift makes
/// no Route from an Ingress without one: the operator's Route then serves, with the router's
/// certificate, and a warning says the Secret is not used).
fn ingress_for_certificate(stack: &Stack, options: &ExposeOptions) -> bool {
    options.tls_secret_name.is_some() && options.hostname.is_some() && !stack.networking.tls
}

/// The OpenShift Route. It has no typed form here: a dynamic object keeps the fields it is given.
fn route(stack: &Stack, options: &ExposeOptions) -> DynamicObject {
    let mut spec = json!({"to": {"kind": "Service", "name": service_name(stack.name())}, "port": {"targetPort": PORT_NAME}});
    if let Some(host) = &options.hostname {
        spec["host"] = json!(host);
    }
    // The server terminates TLS itself: the router passes the connection through.
    spec["tls"] = if stack.networking.tls {
        json!({"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"})
    } else {
        json!({"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"})
    };
    let resource = route_resource();
    DynamicObject {
        types: Some(TypeMeta {
            api_version: resource.api_version,
            kind: resource.kind,
        }),
        metadata: ObjectMeta {
            name: Some(ingress_name(stack.name())),
            ..ObjectMeta::default()
        },
        data: json!({"spec": spec}),
    }
}

/// The Ingress; its TLS section only with `expose.tlsSecretName`.
fn ingress(stack: &Stack, options: ExposeOptions) -> Ingress {
    let metadata = ObjectMeta {
        name: Some(ingress_name(stack.name())),
        // The backend speaks HTTPS; common controllers read this annotation.
        annotations: stack.networking.tls.then(|| {
            BTreeMap::from([(
                "nginx.ingress.kubernetes.io/backend-protocol".to_owned(),
                "HTTPS".to_owned(),
            )])
        }),
        ..ObjectMeta::default()
    };
    let backend = IngressBackend {
        service: Some(IngressServiceBackend {
            name: service_name(stack.name()),
            port: Some(ServiceBackendPort {
                name: Some(PORT_NAME.to_owned()),
                number: None,
            }),
        }),
        resource: None,
    };
    let rule = IngressRule {
        host: options.hostname.clone(),
        http: Some(HTTPIngressRuleValue {
            paths: vec![HTTPIngressPath {
                path: Some("/".to_owned()),
                path_type: "Prefix".to_owned(),
                backend,
            }],
        }),
    };
    let tls = options.tls_secret_name.map(|secret| IngressTLS {
        secret_name: Some(secret),
        hosts: options.hostname.map(|host| vec![host]),
    });
    Ingress {
        metadata,
        spec: Some(IngressSpec {
            rules: Some(vec![rule]),
            ingress_class_name: options.ingress_class_name,
            tls: tls.map(|tls| vec![tls]),
            ..IngressSpec::default()
        }),
        ..Ingress::default()
    }
}
