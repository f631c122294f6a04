//! The `LlamaStackDistribution` API: both served versions and the merged CRD.

pub(crate) mod api_docs;
pub(crate) mod apis;
pub mod common;
pub mod compact_conditions;
pub(crate) mod conditions;
pub mod network_peers;
pub(crate) mod object_refs;
pub mod ogx;
pub(crate) mod polymorphic;
mod schema;
pub mod shared_text;
pub mod v1alpha1;
pub mod v1alpha2;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use kube::CustomResourceExt;
use kube::core::crd::{MergeError, merge_crds};

/// API group of the resource.
pub const GROUP: &str = "llamastack.io";
/// The storage (hub) version.
pub const STORAGE_VERSION: &str = "v1alpha2";

/// Where the API server sends ConversionReviews: the operator's webhook Service as installed
/// by `deploy/`. Certificates (the `caBundle`) are injected at install time.
pub struct ConversionService<'a> {
    /// Namespace of the webhook Service.
    pub namespace: &'a str,
    /// Name of the webhook Service.
    pub name: &'a str,
    /// Port of the webhook Service.
    pub port: i32,
}

/// The Service `deploy/` installs for the webhooks.
pub const DEFAULT_CONVERSION_SERVICE: ConversionService<'static> = ConversionService {
    namespace: "llama-stack-operator-system",
    name: "llama-stack-operator-webhook",
    port: 443,
};

/// The CRD with both versions, `v1alpha2` stored, and webhook conversion.
///
/// Webhook conversion is not optional: with `strategy: None` the API server would store a
/// v1alpha1 object under v1alpha2 and prune every field v1alpha2 does not know.
pub fn crd(conversion: &ConversionService<'_>) -> Result<CustomResourceDefinition, MergeError> {
    let mut crd = merge_crds(
        vec![
            v1alpha1::LlamaStackDistribution::crd(),
            v1alpha2::LlamaStackDistribution::crd(),
        ],
        STORAGE_VERSION,
    )?;
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            conversion_review_versions: vec!["v1".to_owned()],
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: conversion.namespace.to_owned(),
                    name: conversion.name.to_owned(),
                    path: Some("/convert".to_owned()),
                    port: Some(conversion.port),
                }),
                ..WebhookClientConfig::default()
            }),
        }),
    });
    Ok(crd)
}

/// Why the CRD could not be rendered (a bug in the type definitions).
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The two versions could not be merged.
    #[error("cannot merge the CRD versions")]
    Merge(#[from] MergeError),
    /// YAML serialization failed.
    #[error("cannot serialize the CRD to YAML")]
    Yaml(#[from] serde_saphyr::ser::Error),
}

/// The CRD as the YAML document `crds/` holds.
pub fn crd_yaml(conversion: &ConversionService<'_>) -> Result<String, CrdError> {
    Ok(serde_saphyr::to_string(&crd(conversion)?)?)
}

/// The `OGXServer` CRD (`ogx.io/v1beta1`, one version, no conversion) as the YAML document
/// `crds/` holds.
pub fn ogx_crd_yaml() -> Result<String, CrdError> {
    Ok(serde_saphyr::to_string(
        &<ogx::OGXServer as CustomResourceExt>::crd(),
    )?)
}

/// The Markdown API reference `docs/api-reference.md` holds.
pub fn reference_markdown() -> Result<String, CrdError> {
    Ok(api_docs::markdown(&crd(&DEFAULT_CONVERSION_SERVICE)?))
}

#[cfg(test)]
mod tests;
