//! The server workload: generated ConfigMap, Deployment, ServiceAccount and data PVC.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, ServiceAccount};
use serde_json::{Value, json};

use super::inputs::{Inputs, ServerConfig};
use super::names::{
    CONFIG_DIR, MOVED_CONFIG_DIR, PORT_NAME, PRE_STOP_SECONDS, SERVER_COMMAND, labels, volumes,
};
use super::object::{
    BuildError, CA_BUNDLE_HASH, CONFIG_HASH, SECRETS_HASH, common_labels, metadata, owners,
    selector, stamped, typed,
};
use super::user_parts::{self, UserParts};
use super::{ca_bundle, derived, external};
use crate::controller::stack::Stack;
use crate::stack_config::GeneratedConfig;
use crate::stack_config::env::EnvSource;
use crate::stack_config::generate::TLS_DIR;

const DATA_DIR: &str = "/.llama";
/// UID and GID of the server outside OpenShift.
const RUN_AS: i64 = 1001;
/// Size of the data PVC when `workload.storage.size` is not set.
pub const DEFAULT_STORAGE_SIZE: &str = "10Gi";

/// Name of the generated ConfigMap: `<cr>-config-<first 8 hex of the content hash>`. Hash-named
/// and immutable, so a rollout's old and new Pods each mount exactly the config they started with.
pub fn config_map_name(cr: &str, hash: &str) -> String {
    let hex = hash.strip_prefix("sha256:").unwrap_or(hash);
    format!(
        "{}{}",
        generated_config_map_prefix(cr),
        &hex[..8.min(hex.len())]
    )
}

/// What every generated ConfigMap of `cr` is named with (pruning finds the old ones by it).
pub fn generated_config_map_prefix(cr: &str) -> String {
    format!("{cr}-config-")
}

/// Where the server keeps its state: `workload.storage.mountPath`, else `/.llama`.
fn data_dir<'a>(stack: &Stack<'a>) -> &'a str {
    stack
        .storage
        .and_then(|s| s.mount_path.as_deref())
        .unwrap_or(DATA_DIR)
}

/// Name of the data PVC.
pub fn pvc_name(stack: &Stack) -> String {
    format!("{}-pvc", stack.name)
}

/// Name of the operator-managed ServiceAccount (made unless the user names their own).
pub fn managed_service_account_name(stack: &Stack) -> String {
    format!("{}-sa", stack.name)
}

/// The ServiceAccount the server Pods run as: the user's, else the operator-managed one.
pub fn service_account_name(stack: &Stack) -> String {
    stack
        .user_service_account()
        .map_or_else(|| managed_service_account_name(stack), str::to_owned)
}

/// The managed ServiceAccount: no API token (the server never calls the API server), and the
/// pull secrets of the namespace's `default` ServiceAccount, so private images pull as they
/// would without it. `None` when the user names their own.
pub fn service_account(
    stack: &Stack,
    pull_secrets: &[String],
) -> Result<Option<ServiceAccount>, BuildError> {
    if stack.user_service_account().is_some() {
        return Ok(None);
    }
    let secrets: Vec<Value> = pull_secrets.iter().map(|n| json!({"name": n})).collect();
    stamped(json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": metadata(stack, &managed_service_account_name(stack)),
        "automountServiceAccountToken": false,
        "imagePullSecrets": secrets,
    }))
    .map(Some)
}

/// The PersistentVolumeClaim for `workload.storage`, if asked for.
pub fn persistent_volume_claim(stack: &Stack) -> Result<Option<PersistentVolumeClaim>, BuildError> {
    let Some(storage) = stack.storage else {
        return Ok(None);
    };
    let size = storage
        .size
        .as_ref()
        .map_or(DEFAULT_STORAGE_SIZE.to_owned(), |q| q.0.clone());
    stamped(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": metadata(stack, &pvc_name(stack)),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
    }))
    .map(Some)
}

/// The generated, immutable, hash-named ConfigMap.
pub fn config_map(stack: &Stack, generated: &GeneratedConfig) -> Result<ConfigMap, BuildError> {
    typed(
        "ConfigMap",
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": config_map_name(stack.name, &generated.hash), "namespace": Some(stack.namespace).filter(|ns| !ns.is_empty()),
                "labels": common_labels(stack), "annotations": {CONFIG_HASH: generated.hash}, "ownerReferences": owners(stack)},
            "immutable": true,
            "data": {"config.yaml": generated.yaml},
        }),
    )
}

/// Where the config ConfigMap is mounted: [`CONFIG_DIR`], unless the user mounts a volume of
/// their own there and the config is generated (the user's mount wins, the generated config moves
/// aside). A user's ConfigMap stays at [`CONFIG_DIR`], where its own command may name it.
pub fn config_dir(stack: &Stack, config: ServerConfig) -> &'static str {
    let taken = user_parts_of(stack)
        .mounts
        .iter()
        .any(|m| user_parts::normalized(&m.mount_path) == CONFIG_DIR);
    match config {
        ServerConfig::Generated(_) if taken => MOVED_CONFIG_DIR,
        _ => CONFIG_DIR,
    }
}

/// What the user adds to the Pod (`workload.overrides`).
fn user_parts_of<'a>(stack: &Stack<'a>) -> UserParts<'a> {
    let overrides = stack.overrides;
    UserParts {
        volumes: overrides.volumes.as_deref().unwrap_or_default(),
        mounts: overrides.volume_mounts.as_deref().unwrap_or_default(),
        env: overrides.env.as_deref().unwrap_or_default(),
    }
}

fn env_vars(stack: &Stack, inputs: &Inputs) -> Vec<Value> {
    let with_external = stack.has_external_providers();
    let mut env = Vec::new();
    if inputs.config.config_map().is_some() {
        let config = if with_external {
            format!("{}/config.yaml", crate::external::MERGED_DIR)
        } else {
            format!(
                "{}/{}",
                config_dir(stack, inputs.config),
                inputs.config.key()
            )
        };
        env.push(json!({"name": "LLAMA_STACK_CONFIG", "value": config}));
    }
    env.extend([
        // `llama stack run` ignores server.port; the port comes from here.
        json!({"name": "LLAMA_STACK_PORT", "value": stack.networking.port.to_string()}),
        json!({"name": "LLAMA_STACK_CONFIG_DIR", "value": data_dir(stack)}),
        json!({"name": "SQLITE_STORE_DIR", "value": format!("{}/state", data_dir(stack))}),
        json!({"name": "HF_HOME", "value": format!("{}/huggingface", data_dir(stack))}),
        // A non-root user may not own the image's home directory.
        json!({"name": "HOME", "value": data_dir(stack)}),
    ]);
    if with_external {
        env.push(json!({"name": "PYTHONPATH", "value": external::PYTHON_PACKAGES}));
    }
    if inputs.ca_bundle.is_some() {
        env.push(json!({"name": "SSL_CERT_FILE", "value": format!("{}/{}", ca_bundle::MOUNT_DIR, ca_bundle::CA_BUNDLE_KEY)}));
    }
    for var in inputs.generated.iter().flat_map(|g| g.env.iter()) {
        env.push(match &var.source {
            EnvSource::SecretKeyRef(r) => json!({"name": var.name, "valueFrom": {"secretKeyRef": {"name": r.name, "key": r.key}}}),
            EnvSource::Value(v) => json!({"name": var.name, "value": v}),
            // The reconciler splits URLs into an owned Secret named after the resource.
            // A query option the URL may not have is an optional key.
            EnvSource::SecretUrlPart { part, .. } if part.optional() => json!({"name": var.name, "valueFrom": {"secretKeyRef": {
                "name": derived::derived_secret_name(stack),
                "key": derived::derived_secret_key(*part), "optional": true}}}),
            EnvSource::SecretUrlPart { part, .. } => json!({"name": var.name, "valueFrom": {"secretKeyRef": {
                "name": derived::derived_secret_name(stack),
                "key": derived::derived_secret_key(*part)}}}),
        });
    }
    user_parts::merge_env(
        env,
        user_parts_of(stack).env,
        with_external.then_some(external::PYTHON_PACKAGES),
    )
}

fn container(stack: &Stack, inputs: &Inputs) -> Value {
    let workload = stack.workload;
    let overrides = stack.overrides;
    let scheme = if stack.networking.tls_secret.is_some() {
        "HTTPS"
    } else {
        "HTTP"
    };
    let probe = |extra: Value| {
        let mut p = json!({"httpGet": {"path": "/v1/health", "port": PORT_NAME, "scheme": scheme}});
        if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        p
    };
    let mut mounts = Vec::new();
    if inputs.config.config_map().is_some() {
        mounts.push(json!({"name": volumes::CONFIG, "mountPath": config_dir(stack, inputs.config), "readOnly": true}));
    }
    mounts.push(json!({"name": volumes::DATA, "mountPath": data_dir(stack)}));
    if inputs.ca_bundle.is_some() {
        mounts.push(
            json!({"name": volumes::CA_BUNDLE, "mountPath": ca_bundle::MOUNT_DIR, "readOnly": true}),
        );
    }
    if stack.networking.tls_secret.is_some() {
        mounts.push(json!({"name": volumes::TLS, "mountPath": TLS_DIR, "readOnly": true}));
    }
    if stack.has_external_providers() {
        mounts.push(json!({"name": volumes::EXTERNAL_PROVIDERS, "mountPath": crate::external::PROVIDERS_DIR, "readOnly": true}));
        mounts.push(json!({"name": volumes::MERGED_CONFIG, "mountPath": crate::external::MERGED_DIR, "readOnly": true}));
    }
    // One worker is one process; requests follow the worker count unless the user sets them.
    let workers = workload.workers.unwrap_or(1).max(1);
    let default_resources = json!({"requests": {"cpu": format!("{}m", 500 * workers), "memory": format!("{}Gi", workers)},
        "limits": {"memory": format!("{}Gi", 4 * workers)}});
    let mut container = json!({
        "name": "llama-stack",
        "image": inputs.image,
        "ports": [{"name": PORT_NAME, "containerPort": stack.networking.port, "protocol": "TCP"}],
        "env": env_vars(stack, inputs),
        "volumeMounts": mounts,
        "resources": workload.resources.clone().and_then(|r| serde_json::to_value(r).ok()).unwrap_or(default_resources),
        "startupProbe": probe(json!({"periodSeconds": 5, "failureThreshold": 60})),
        "readinessProbe": probe(json!({"periodSeconds": 10})),
        "livenessProbe": probe(json!({"periodSeconds": 20, "timeoutSeconds": 5, "failureThreshold": 6})),
        // A stopping Pod leaves the Service's endpoints at once, but every node's proxy learns it
        // a moment later: keep serving meanwhile, so that a rollout fails no request.
        "lifecycle": {"preStop": {"sleep": {"seconds": PRE_STOP_SECONDS}}},
        "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
    });
    // A mounted config is what must run, whatever the image's own entrypoint would start
    // (distribution images differ, and some run the config baked into them). Without one, the
    // image's entrypoint runs its own config.
    match (&overrides.command, inputs.config) {
        (Some(command), _) => container["command"] = json!(command),
        (None, ServerConfig::Image) => {}
        (None, _) => container["command"] = json!(SERVER_COMMAND),
    }
    if let Some(args) = &overrides.args {
        container["args"] = json!(args);
    }
    container
}

fn volumes(stack: &Stack, inputs: &Inputs) -> Vec<Value> {
    let mut volumes = Vec::new();
    if let Some(config_map) = inputs.config.config_map() {
        volumes.push(json!({"name": volumes::CONFIG, "configMap": {"name": config_map}}));
    }
    volumes.push(match stack.storage {
        Some(_) => {
            json!({"name": volumes::DATA, "persistentVolumeClaim": {"claimName": pvc_name(stack)}})
        }
        None => json!({"name": volumes::DATA, "emptyDir": {}}),
    });
    if inputs.ca_bundle.is_some() {
        volumes.push(
            json!({"name": volumes::CA_BUNDLE, "configMap": {"name": ca_bundle::ca_bundle_name(stack)}}),
        );
    }
    if let Some(secret) = stack.networking.tls_secret {
        volumes.push(json!({"name": volumes::TLS, "secret": {"secretName": secret}}));
    }
    volumes.extend(external::volumes(stack));
    volumes
}

/// Non-root for every container. Distribution images may declare root, so outside OpenShift a
/// fixed non-root UID and group are set (the data volume is group-owned); on OpenShift the
/// restricted SCC assigns them and a fixed UID would be refused.
fn pod_security(inputs: &Inputs) -> Value {
    let mut security = json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}});
    if !inputs.routes_available {
        security["runAsUser"] = json!(RUN_AS);
        security["runAsGroup"] = json!(RUN_AS);
        security["fsGroup"] = json!(RUN_AS);
    }
    security
}

/// The Deployment running the server with the resolved image and the config ConfigMap. (About 80
/// lines: the Pod template is one JSON object, read as the manifest it becomes.)
pub fn deployment(stack: &Stack, inputs: &Inputs) -> Result<Deployment, BuildError> {
    let workload = stack.workload;
    let overrides = stack.overrides;
    let mut annotations = serde_json::Map::new();
    if let Some(generated) = inputs.generated {
        annotations.insert(CONFIG_HASH.to_owned(), json!(generated.hash));
    }
    if let Some(hash) = inputs.secrets_hash {
        annotations.insert(SECRETS_HASH.to_owned(), json!(hash));
    }
    if let Some(pem) = inputs.ca_bundle {
        annotations.insert(
            CA_BUNDLE_HASH.to_owned(),
            json!(llama_stack_resolver::digest::sha256_hex(pem.as_bytes())),
        );
    }
    let mut pod = json!({
        "serviceAccountName": service_account_name(stack),
        "automountServiceAccountToken": false,
        "containers": [container(stack, inputs)],
        "volumes": volumes(stack, inputs),
        "securityContext": pod_security(inputs),
    });
    let init = external::init_containers(
        stack,
        inputs.image,
        inputs.operator_image,
        &format!(
            "{}/{}",
            config_dir(stack, inputs.config),
            inputs.config.key()
        ),
    );
    if !init.is_empty() {
        pod["initContainers"] = json!(init);
    }
    user_parts::merge_volumes(&mut pod, 0, &user_parts_of(stack));
    if let Some(seconds) = overrides.termination_grace_period_seconds {
        pod["terminationGracePeriodSeconds"] = json!(seconds);
    }
    let replicas = workload.replicas.unwrap_or(1);
    let spreading = workload
        .autoscaling
        .as_ref()
        .map_or(replicas, |a| a.max_replicas);
    match &workload.topology_spread_constraints {
        Some(user) => pod["topologySpreadConstraints"] = json!(user),
        // More than one replica: prefer different nodes, without ever blocking scheduling.
        None if spreading > 1 => {
            pod["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": selector(stack)}}]);
        }
        None => {}
    }
    let mut pod_labels = common_labels(stack);
    if stack.has_external_providers() {
        pod_labels.insert(labels::EXTERNAL_PROVIDERS.to_owned(), "true".to_owned());
    }
    let selector = match inputs.existing_selector {
        Some(existing) => {
            for (k, v) in existing {
                pod_labels.entry(k.clone()).or_insert_with(|| v.clone());
            }
            json!(existing)
        }
        None => selector(stack),
    };
    let mut spec = json!({
        "selector": {"matchLabels": selector},
        "template": {"metadata": {"labels": pod_labels, "annotations": annotations}, "spec": pod},
    });
    if workload.autoscaling.is_none() {
        spec["replicas"] = json!(replicas);
    }
    if workload.storage.is_some() {
        // A ReadWriteOnce volume cannot be attached to the old and the new Pod at once.
        spec["strategy"] = json!({"type": "Recreate"});
    }
    if let Some(seconds) = workload.progress_deadline_seconds {
        spec["progressDeadlineSeconds"] = json!(seconds);
    }
    stamped(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": metadata(stack, stack.name),
        "spec": spec,
    }))
}
