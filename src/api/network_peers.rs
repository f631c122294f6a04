//! `allowedFrom` in NetworkPolicy terms, shared by the policy the operator builds and by
//! `convert --to ogx.io/v1beta1`, which writes the same peers as an ingress rule of one's own.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::common::AllowedFromSpec;

/// A peer of every Pod in the namespaces `selector` selects.
fn namespaces(selector: LabelSelector) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        namespace_selector: Some(selector),
        ..NetworkPolicyPeer::default()
    }
}

/// Every Pod of every namespace.
pub fn every_namespace() -> NetworkPolicyPeer {
    namespaces(LabelSelector::default())
}

/// Every Pod of the namespace `name`.
pub fn namespace_named(name: &str) -> NetworkPolicyPeer {
    namespaces(LabelSelector {
        match_labels: Some(BTreeMap::from([(
            "kubernetes.io/metadata.name".to_owned(),
            name.to_owned(),
        )])),
        match_expressions: None,
    })
}

/// `allowed` without `*`: the namespaces it names, by name and label, and no others (what a
/// server behind a gateway honours).
pub fn named_only(allowed: &AllowedFromSpec) -> AllowedFromSpec {
    let mut named = allowed.clone();
    if let Some(names) = named.namespaces.as_mut() {
        names.retain(|n| n != "*");
    }
    named
}

/// The namespaces `allowed` lists, by name and by label (a namespace carrying the label key);
/// `None` when it lists `*`, every namespace.
pub fn listed_namespaces(allowed: &AllowedFromSpec) -> Option<Vec<NetworkPolicyPeer>> {
    let names = allowed.namespaces.as_deref().unwrap_or_default();
    if names.iter().any(|n| n == "*") {
        return None;
    }
    let by_label = allowed.labels.iter().flatten().map(|key| {
        namespaces(LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.clone(),
                operator: "Exists".to_owned(),
                values: None,
            }]),
        })
    });
    Some(
        names
            .iter()
            .map(|n| namespace_named(n))
            .chain(by_label)
            .collect(),
    )
}

/// TCP to `port`.
pub fn tcp_port(port: i32) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some("TCP".to_owned()),
        port: Some(IntOrString::Int(port)),
        end_port: None,
    }
}
