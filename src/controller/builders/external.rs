//! External providers in the server Pod: the shared volumes, the init containers in
//! CRD order, and what the server container needs (merged config, PYTHONPATH).

use serde_json::{Value, json};

use crate::api::common::{ExternalProviderRef, PullPolicy};
use crate::controller::stack::Stack;
use crate::external::{
    MERGED_DIR, PROVIDERS_DIR, TERMINATION_LOG, TOOLS_DIR, install_container_name,
};

use super::names::{CONFIG_DIR, volumes};

/// Python packages installed for the providers (prepended to the server's PYTHONPATH).
pub const PYTHON_PACKAGES: &str = "/opt/llama-stack/external-providers/python-packages";

fn restricted() -> Value {
    json!({"allowPrivilegeEscalation": false, "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"}})
}

fn step(
    name: &str,
    image: &str,
    command: Vec<String>,
    mounts: Value,
    cpu: &str,
    memory: &str,
) -> Value {
    json!({
        "name": name, "image": image, "command": command, "volumeMounts": mounts,
        "securityContext": restricted(),
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}},
        "terminationMessagePolicy": "File",
    })
}

/// The volume mounts the steps use.
struct Mounts {
    tools: Value,
    shared: Value,
    merged: Value,
    config: Value,
}

impl Mounts {
    /// `config_dir`: where the server container sees the config ConfigMap.
    fn new(config_dir: &str) -> Self {
        Self {
            tools: json!({"name": volumes::TOOLS, "mountPath": TOOLS_DIR}),
            shared: json!({"name": volumes::EXTERNAL_PROVIDERS, "mountPath": PROVIDERS_DIR}),
            merged: json!({"name": volumes::MERGED_CONFIG, "mountPath": MERGED_DIR}),
            config: json!({"name": volumes::CONFIG, "mountPath": config_dir, "readOnly": true}),
        }
    }
}

/// A tool the first step copied to the shared tools volume.
fn tool(name: &str) -> String {
    format!("{TOOLS_DIR}/{name}")
}

/// Init containers: copy the tools (operator image), stage each provider (its image, CRD order),
/// install the packages, merge the config (`config`: its path in the server container), preflight
/// (distribution image).
pub fn init_containers(
    stack: &Stack,
    image: &str,
    operator_image: &str,
    config: &str,
) -> Vec<Value> {
    let providers = &stack.external_providers;
    if providers.is_empty() {
        return Vec::new();
    }
    let config_dir = config.rsplit_once('/').map_or(CONFIG_DIR, |(dir, _)| dir);
    let mounts = Mounts::new(config_dir);
    let mut containers = vec![copy_tools(operator_image, &mounts)];
    for (order, (section, provider)) in providers.iter().enumerate() {
        containers.push(stage_provider(order, section, provider, &mounts));
    }
    containers.push(install_packages(image, &mounts));
    containers.push(merge_config(image, config, &mounts));
    containers.push(preflight(image, &mounts));
    containers
}

/// Copies the operator's binary and the Python steps to the tools volume.
fn copy_tools(operator_image: &str, mounts: &Mounts) -> Value {
    let command = vec![
        "/usr/local/bin/llama-stack-operator".into(),
        "install-tools".into(),
        "--to".into(),
        TOOLS_DIR.into(),
    ];
    let volume_mounts = json!([mounts.tools]);
    step(
        "copy-tools",
        operator_image,
        command,
        volume_mounts,
        "10m",
        "64Mi",
    )
}

/// Validates one provider image's metadata and stages its wheels (runs in that image).
fn stage_provider(
    order: usize,
    section: &str,
    provider: &ExternalProviderRef,
    mounts: &Mounts,
) -> Value {
    let name = install_container_name(&provider.provider_id);
    let mut command = vec![
        tool("llama-stack-operator"),
        "stage-provider".into(),
        format!("--provider-id={}", provider.provider_id),
        format!("--api={section}"),
        format!("--image={}", provider.image),
        format!("--order={order}"),
        format!("--init-container={name}"),
        format!("--source={}", crate::external::PROVIDER_ROOT),
        format!("--dest={PROVIDERS_DIR}"),
        format!("--termination-log={TERMINATION_LOG}"),
    ];
    if let Some(config) = &provider.config {
        command.push(format!("--config-json={}", Value::Object(config.clone())));
    }
    let volume_mounts = json!([mounts.tools, mounts.shared]);
    let mut container = step(
        &name,
        &provider.image,
        command,
        volume_mounts,
        "10m",
        "64Mi",
    );
    container["imagePullPolicy"] = json!(match provider.image_pull_policy {
        PullPolicy::Always => "Always",
        PullPolicy::Never => "Never",
        PullPolicy::IfNotPresent => "IfNotPresent",
    });
    container
}

/// Installs the staged wheels with the distribution image's Python.
fn install_packages(image: &str, mounts: &Mounts) -> Value {
    let command = vec![
        "python3".into(),
        tool("install_providers.py"),
        PROVIDERS_DIR.into(),
        TERMINATION_LOG.into(),
    ];
    let volume_mounts = json!([mounts.tools, mounts.shared]);
    step(
        "install-packages",
        image,
        command,
        volume_mounts,
        "100m",
        "512Mi",
    )
}

/// Merges the staged providers into the config.
fn merge_config(image: &str, config: &str, mounts: &Mounts) -> Value {
    let command = vec![
        tool("llama-stack-operator"),
        "merge-config".into(),
        format!("--base={config}"),
        format!("--metadata-dir={PROVIDERS_DIR}/metadata"),
        format!("--output={MERGED_DIR}/config.yaml"),
        format!("--extra-providers-output={MERGED_DIR}/extra-providers.yaml"),
    ];
    let volume_mounts = json!([mounts.tools, mounts.shared, mounts.merged, mounts.config]);
    step("merge-config", image, command, volume_mounts, "10m", "64Mi")
}

/// Imports every provider module the merged config names, before the server starts.
fn preflight(image: &str, mounts: &Mounts) -> Value {
    let command = vec![
        "python3".into(),
        tool("preflight.py"),
        PROVIDERS_DIR.into(),
        format!("{MERGED_DIR}/config.yaml"),
        TERMINATION_LOG.into(),
    ];
    let volume_mounts = json!([mounts.tools, mounts.shared, mounts.merged]);
    let mut container = step("preflight", image, command, volume_mounts, "100m", "512Mi");
    container["env"] = json!([{"name": "PYTHONPATH", "value": PYTHON_PACKAGES}]);
    container
}

/// Volumes the steps share; none without external providers.
pub fn volumes(stack: &Stack) -> Vec<Value> {
    if !stack.has_external_providers() {
        return Vec::new();
    }
    vec![
        json!({"name": volumes::TOOLS, "emptyDir": {"sizeLimit": "256Mi"}}),
        json!({"name": volumes::EXTERNAL_PROVIDERS, "emptyDir": {"sizeLimit": "4Gi"}}),
        json!({"name": volumes::MERGED_CONFIG, "emptyDir": {"sizeLimit": "16Mi"}}),
    ]
}
