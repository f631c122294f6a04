//! What the core's table tests share: a stored stack, the operator as the core takes it, and a
//! distribution resolved to a pinned image with its embedded base config.

use std::sync::Arc;

use llama_stack_resolver::{Resolution, ResolveError, embedded_base_config};
use serde_json::{Value, json};

use crate::api::v1alpha2::LlamaStackDistribution;
use crate::core::decide::Operator;
use crate::core::observed::Observed;

/// The image the starter distribution resolves to.
pub(crate) const PINNED: &str = "docker.io/ogxai/distribution-starter@sha256:2222222222222222222222222222222222222222222222222222222222222222";

/// A stored stack `s` in `ns`, generation 3, with `spec` and `status`.
pub(crate) fn resource(spec: Value, status: Value) -> LlamaStackDistribution {
    serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u-1", "generation": 3},
        "spec": spec, "status": status}),
    )
    .unwrap()
}

/// The starter distribution resolved to a pinned image with its embedded base config.
pub(crate) fn resolution(pinned: bool, stale: Option<ResolveError>) -> Resolution {
    Resolution {
        image: PINNED.to_owned(),
        pinned,
        config: embedded_base_config("starter").unwrap().unwrap(),
        stale: stale.map(Arc::new),
        signature: None,
    }
}

/// What a reconcile reads of a stack whose distribution resolved.
pub(crate) fn resolved() -> Observed {
    Observed {
        reference: "docker.io/ogxai/distribution-starter:1.3.0".to_owned(),
        resolution: Some(Ok(resolution(true, None))),
        ..Observed::default()
    }
}

/// The operator as the core takes it.
pub(crate) fn operator() -> Operator<'static> {
    Operator {
        image: Some("registry.corp/operator@sha256:33"),
        namespace: Some("llso-system"),
        routes_available: false,
        monitoring_available: false,
    }
}
