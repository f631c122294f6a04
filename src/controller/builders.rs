//! Desired objects of a v1alpha2 LlamaStackDistribution (pure): the generated ConfigMap, the
//! Deployment and the Service. Only fields the operator owns are set (server-side apply).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::Resource;
use serde_json::{Value, json};

use crate::api::v1alpha2::LlamaStackDistribution;
use crate::cli::render::config_map_name;
use crate::config::GeneratedConfig;
use crate::config::env::EnvSource;

/// Field manager of every apply.
pub const FIELD_MANAGER: &str = "llama-stack-operator";
/// Pod-template annotation carrying the generated config's hash (a change rolls the Pods).
pub const CONFIG_HASH: &str = "llamastack.io/config-hash";
/// Deployment annotation carrying the hash of everything the operator applied (no-op detection).
pub const DESIRED_HASH: &str = "llamastack.io/desired-hash";
/// Where the config is mounted.
pub const CONFIG_DIR: &str = "/etc/llama-stack";
const DEFAULT_PORT: i32 = 8321;
const DATA_DIR: &str = "/.llama";
/// Size of the data PVC when `workload.storage.size` is not set.
pub const DEFAULT_STORAGE_SIZE: &str = "10Gi";

/// Where the server keeps its state: `workload.storage.mountPath`, else `/.llama`.
fn data_dir(cr: &LlamaStackDistribution) -> String {
    cr.spec
        .workload
        .as_ref()
        .and_then(|w| w.storage.as_ref())
        .and_then(|s| s.mount_path.clone())
        .unwrap_or_else(|| DATA_DIR.to_owned())
}

/// Name of the data PVC.
pub fn pvc_name(cr: &LlamaStackDistribution) -> String {
    format!("{}-pvc", cr.metadata.name.clone().unwrap_or_default())
}

/// The PersistentVolumeClaim for `workload.storage`, if asked for.
pub fn persistent_volume_claim(
    cr: &LlamaStackDistribution,
) -> Result<Option<PersistentVolumeClaim>, serde_json::Error> {
    let Some(storage) = cr.spec.workload.as_ref().and_then(|w| w.storage.as_ref()) else {
        return Ok(None);
    };
    let size = storage
        .size
        .as_ref()
        .map_or(DEFAULT_STORAGE_SIZE.to_owned(), |q| q.0.clone());
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": pvc_name(cr), "namespace": cr.metadata.namespace, "labels": labels(cr), "ownerReferences": owners(cr)},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
    }))
    .map(Some)
}

fn labels(cr: &LlamaStackDistribution) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_owned(),
            "llama-stack".to_owned(),
        ),
        (
            "app.kubernetes.io/instance".to_owned(),
            cr.metadata.name.clone().unwrap_or_default(),
        ),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            FIELD_MANAGER.to_owned(),
        ),
    ])
}

fn selector(cr: &LlamaStackDistribution) -> Value {
    json!({"app.kubernetes.io/name": "llama-stack", "app.kubernetes.io/instance": cr.metadata.name})
}

/// The controller owner reference; none for an object not yet stored (no uid, e.g. `render`).
fn owners(cr: &LlamaStackDistribution) -> Value {
    Value::Array(
        cr.controller_owner_ref(&())
            .and_then(|o| serde_json::to_value(o).ok())
            .into_iter()
            .collect(),
    )
}

fn port(cr: &LlamaStackDistribution) -> i32 {
    cr.spec.networking.as_ref().map_or(DEFAULT_PORT, |n| n.port)
}

/// The generated, immutable, hash-named ConfigMap.
pub fn config_map(
    cr: &LlamaStackDistribution,
    generated: &GeneratedConfig,
) -> Result<ConfigMap, serde_json::Error> {
    let name = cr.metadata.name.clone().unwrap_or_default();
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": config_map_name(&name, &generated.hash), "namespace": cr.metadata.namespace,
            "labels": labels(cr), "annotations": {CONFIG_HASH: generated.hash}, "ownerReferences": owners(cr)},
        "immutable": true,
        "data": {"config.yaml": generated.yaml},
    }))
}

fn env_vars(cr: &LlamaStackDistribution, generated: &GeneratedConfig) -> Vec<Value> {
    let mut env = vec![
        json!({"name": "LLAMA_STACK_CONFIG", "value": format!("{CONFIG_DIR}/config.yaml")}),
        // `llama stack run` ignores server.port; the port comes from here.
        json!({"name": "LLAMA_STACK_PORT", "value": port(cr).to_string()}),
        json!({"name": "LLAMA_STACK_CONFIG_DIR", "value": data_dir(cr)}),
        json!({"name": "SQLITE_STORE_DIR", "value": format!("{}/state", data_dir(cr))}),
        json!({"name": "HF_HOME", "value": format!("{}/huggingface", data_dir(cr))}),
    ];
    for var in &generated.env {
        env.push(match &var.source {
            EnvSource::SecretKeyRef(r) => json!({"name": var.name, "valueFrom": {"secretKeyRef": {"name": r.name, "key": r.key}}}),
            EnvSource::Value(v) => json!({"name": var.name, "value": v}),
            // The reconciler splits URLs into an owned Secret named after the resource.
            EnvSource::SecretUrlPart { part, .. } => json!({"name": var.name, "valueFrom": {"secretKeyRef": {
                "name": format!("{}-derived", cr.metadata.name.clone().unwrap_or_default()),
                "key": format!("storage-sql-{}", serde_json::to_value(part).ok().and_then(|p| p.as_str().map(str::to_owned)).unwrap_or_default())}}}),
        });
    }
    if let Some(overrides) = cr.spec.workload.as_ref().and_then(|w| w.overrides.as_ref()) {
        for var in overrides.env.iter().flatten() {
            env.push(serde_json::to_value(var).unwrap_or(Value::Null));
        }
    }
    env
}

/// The Deployment running the server with `image` and the generated config.
/// `config_map` is the generated ConfigMap, or the user's for `overrideConfig`.
pub fn deployment(
    cr: &LlamaStackDistribution,
    image: &str,
    generated: &GeneratedConfig,
    config_map: &str,
) -> Result<Deployment, serde_json::Error> {
    let name = cr.metadata.name.clone().unwrap_or_default();
    let workload = cr.spec.workload.clone().unwrap_or_default();
    let overrides = workload.overrides.clone().unwrap_or_default();
    let mut container = json!({
        "name": "llama-stack",
        "image": image,
        "ports": [{"name": "http", "containerPort": port(cr), "protocol": "TCP"}],
        "env": env_vars(cr, generated),
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": true}, {"name": "data", "mountPath": data_dir(cr)}],
        "resources": workload.resources.clone().map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .unwrap_or_else(|| json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}})),
        "startupProbe": {"httpGet": {"path": "/v1/health", "port": "http"}, "periodSeconds": 5, "failureThreshold": 60},
        "readinessProbe": {"httpGet": {"path": "/v1/health", "port": "http"}, "periodSeconds": 10},
        "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
    });
    if let Some(command) = &overrides.command {
        container["command"] = json!(command);
    }
    if let Some(args) = &overrides.args {
        container["args"] = json!(args);
    }
    if let Some(mounts) = &overrides.volume_mounts
        && let Some(list) = container["volumeMounts"].as_array_mut()
    {
        list.extend(mounts.iter().filter_map(|m| serde_json::to_value(m).ok()));
    }
    let mut volumes = vec![
        json!({"name": "config", "configMap": {"name": config_map}}),
        match workload.storage {
            Some(_) => {
                json!({"name": "data", "persistentVolumeClaim": {"claimName": pvc_name(cr)}})
            }
            None => json!({"name": "data", "emptyDir": {}}),
        },
    ];
    volumes.extend(
        overrides
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| serde_json::to_value(v).ok()),
    );
    let mut spec = json!({
        "selector": {"matchLabels": selector(cr)},
        "template": {
            "metadata": {"labels": labels(cr), "annotations": {CONFIG_HASH: generated.hash}},
            "spec": {
                "containers": [container],
                "volumes": volumes,
                "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            },
        },
    });
    if workload.autoscaling.is_none() {
        spec["replicas"] = json!(workload.replicas.unwrap_or(1));
    }
    if workload.storage.is_some() {
        // A ReadWriteOnce volume cannot be attached to the old and the new Pod at once.
        spec["strategy"] = json!({"type": "Recreate"});
    }
    if let Some(sa) = &overrides.service_account_name {
        spec["template"]["spec"]["serviceAccountName"] = json!(sa);
    }
    let mut deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": cr.metadata.namespace, "labels": labels(cr), "ownerReferences": owners(cr)},
        "spec": spec,
    });
    let desired_hash =
        llama_stack_resolver::base_config::sha256_hex(deployment.to_string().as_bytes());
    deployment["metadata"]["annotations"] = json!({DESIRED_HASH: desired_hash});
    serde_json::from_value(deployment)
}

/// The ClusterIP Service in front of the server.
pub fn service(cr: &LlamaStackDistribution) -> Result<Service, serde_json::Error> {
    let name = cr.metadata.name.clone().unwrap_or_default();
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("{name}-service"), "namespace": cr.metadata.namespace, "labels": labels(cr), "ownerReferences": owners(cr)},
        "spec": {"selector": selector(cr), "ports": [{"name": "http", "port": port(cr), "targetPort": "http", "protocol": "TCP"}]},
    }))
}
