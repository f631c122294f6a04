//! Prometheus Operator objects for a stack whose door exports metrics (`OGXServer`'s
//! `monitoring`): a ServiceMonitor that scrapes the Service's `metrics` port, and a
//! PrometheusRule of per-API "in use" signals. Made only where the cluster serves
//! `monitoring.coreos.com/v1` (the CRDs of the Prometheus Operator).
//!
//! The names, the scrape label and the recorded series are those OGX users already query
//! (`<name>-service-monitor`, `monitoring.opendatahub.io/scrape`, `ogx:api_info:max`). The
//! selector differs on purpose: it names this stack's instance, so two servers in a namespace
//! are each scraped once (a selector on `managed-by` and `part-of` alone makes every monitor
//! scrape every server).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject, TypeMeta};
use serde_json::{Value, json};

use super::object::Common;
use crate::core::stack::Stack;
use crate::naming::{METRICS_PORT_NAME, prometheus_rule_name, service_monitor_name};

/// The label OpenShift AI's Prometheus discovers ServiceMonitors by.
const SCRAPE_LABEL: &str = "monitoring.opendatahub.io/scrape";
/// How often the server is scraped and the rules are evaluated.
const INTERVAL: &str = "60s";

/// `monitoring.coreos.com/v1` ServiceMonitor.
pub fn service_monitor_resource() -> ApiResource {
    monitoring_resource("ServiceMonitor", "servicemonitors")
}

/// `monitoring.coreos.com/v1` PrometheusRule.
pub fn prometheus_rule_resource() -> ApiResource {
    monitoring_resource("PrometheusRule", "prometheusrules")
}

fn monitoring_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "monitoring.coreos.com".to_owned(),
        version: "v1".to_owned(),
        api_version: "monitoring.coreos.com/v1".to_owned(),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

/// The ServiceMonitor and the PrometheusRule, when the stack exports metrics and the cluster
/// serves the kinds; `(None, None)` otherwise (existing ones are then deleted).
pub(super) fn monitoring(
    stack: &Stack,
    common: &Common,
    monitoring_available: bool,
) -> (Option<DynamicObject>, Option<DynamicObject>) {
    if !monitoring_available || stack.door.metrics_port().is_none() {
        return (None, None);
    }
    (
        Some(service_monitor(stack, common)),
        Some(prometheus_rule(stack)),
    )
}

fn service_monitor(stack: &Stack, common: &Common) -> DynamicObject {
    let mut monitor = dynamic(
        &service_monitor_resource(),
        service_monitor_name(stack.name()),
        json!({
            "selector": {"matchLabels": common.labels},
            "endpoints": [{"targetPort": METRICS_PORT_NAME, "path": "/metrics", "interval": INTERVAL}],
        }),
    );
    monitor
        .metadata
        .labels
        .get_or_insert_default()
        .insert(SCRAPE_LABEL.to_owned(), "true".to_owned());
    monitor
}

/// One binary series per API: 1 once the server has counted a request of it.
fn prometheus_rule(stack: &Stack) -> DynamicObject {
    let in_use = |api: &str, counter: &str| -> Value {
        json!({
            "record": "ogx:api_info:max",
            "labels": {"api": api},
            "expr": format!("clamp_max(sum({counter}) or vector(0), 1)"),
        })
    };
    let rules = vec![
        in_use("inference", r#"ogx_requests_total{api="inference"}"#),
        in_use("vector_io", r#"ogx_requests_total{api="vector_io"}"#),
        in_use("responses", r#"ogx_requests_total{api="responses"}"#),
        in_use("rag", "ogx_vector_io_documents_retrieved_total"),
        in_use("agentic", "ogx_responses_agentic_calls_total"),
    ];
    dynamic(
        &prometheus_rule_resource(),
        prometheus_rule_name(stack.name()),
        json!({"groups": [{"name": "telemetry.rules", "interval": INTERVAL, "rules": rules}]}),
    )
}

fn dynamic(resource: &ApiResource, name: String, spec: Value) -> DynamicObject {
    DynamicObject {
        types: Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        }),
        metadata: ObjectMeta {
            name: Some(name),
            ..ObjectMeta::default()
        },
        data: json!({ "spec": spec }),
    }
}
