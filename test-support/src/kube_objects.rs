//! Reads and writes of Kubernetes objects that several suites make.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use llama_stack_resolver::{Catalog, ResolverOptions};

/// The LlamaStackDistributions of `ns`, untyped, in `api_version` (`llamastack.io/v1alpha1`,
/// `llamastack.io/v1alpha2`).
pub fn llsd_api(client: &kube::Client, ns: &str, api_version: &str) -> Api<DynamicObject> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    untyped(
        client,
        ns,
        (group, version, "LlamaStackDistribution"),
        "llamastackdistributions",
    )
}

/// The `OGXServer`s of `ns`, untyped (the operator's own type needs no CRD in the crate).
pub fn ogx_server_api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    untyped(client, ns, ("ogx.io", "v1beta1", "OGXServer"), "ogxservers")
}

fn untyped(
    client: &kube::Client,
    ns: &str,
    (group, version, kind): (&str, &str, &str),
    plural: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// Creates the namespace `name`; one that exists already is fine.
pub async fn create_namespace(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
    {
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        other => other.map(drop),
    }
}

/// Creates the v1alpha2 LlamaStackDistribution `ns/name` with `spec`.
pub async fn create_stack(
    client: &kube::Client,
    ns: &str,
    name: &str,
    spec: serde_json::Value,
) -> Result<LlamaStackDistribution, kube::Error> {
    let cr: LlamaStackDistribution = serde_json::from_value(serde_json::json!({
        "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": name, "namespace": ns}, "spec": spec}))
    .map_err(kube::Error::SerdeError)?;
    Api::<LlamaStackDistribution>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cr)
        .await
}

/// The condition `type_` of a stack's status as (status, reason, message), if it has one.
pub fn condition(cr: &LlamaStackDistribution, type_: &str) -> Option<(String, String, String)> {
    let c = cr
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Resolver options for the test machine, which reaches no public registry: names resolve to
/// their embedded config, after a short timeout.
pub fn offline_resolver_options() -> ResolverOptions {
    let mut options = ResolverOptions::new(Catalog::embedded().expect("the embedded catalog"));
    options.timeout = Duration::from_secs(2);
    options
}
