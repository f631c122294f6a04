//! External providers in the server Pod (spec 001): the shared volumes, the init containers in
//! CRD order, and what the server container needs (merged config, PYTHONPATH).

use serde_json::{Value, json};

use crate::api::common::{ExternalProviderRef, ExternalProvidersSpec, PullPolicy};
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::external::{
    MERGED_DIR, PROVIDERS_DIR, TERMINATION_LOG, TOOLS_DIR, install_container_name,
};

use super::workload::CONFIG_DIR;

/// Label of server Pods that install external providers (the operator watches only those).
pub const POD_LABEL: &str = "llamastack.io/external-providers";

/// Python packages installed for the providers (prepended to the server's PYTHONPATH).
pub const PYTHON_PACKAGES: &str = "/opt/llama-stack/external-providers/python-packages";

/// External providers in CRD order (section by section as the API lists them, then list order),
/// with the CRD section name.
pub fn ordered(spec: &ExternalProvidersSpec) -> Vec<(&'static str, &ExternalProviderRef)> {
    // `agents` and `postTraining` are refused by the API server (removed in llama-stack 0.7).
    let sections: [(&'static str, &Option<Vec<ExternalProviderRef>>); 11] = [
        ("inference", &spec.inference),
        ("safety", &spec.safety),
        ("responses", &spec.responses),
        ("batches", &spec.batches),
        ("vectorIo", &spec.vector_io),
        ("datasetIo", &spec.dataset_io),
        ("scoring", &spec.scoring),
        ("eval", &spec.eval),
        ("toolRuntime", &spec.tool_runtime),
        ("files", &spec.files),
        ("fileProcessors", &spec.file_processors),
    ];
    sections
        .into_iter()
        .flat_map(|(name, list)| list.iter().flatten().map(move |p| (name, p)))
        .collect()
}

/// The external providers of `cr`, if any.
pub fn of(cr: &LlamaStackDistribution) -> Vec<(&'static str, &ExternalProviderRef)> {
    cr.spec
        .external_providers
        .as_ref()
        .map(ordered)
        .unwrap_or_default()
}

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

/// Init containers: copy the tools (operator image), stage each provider (its image, CRD order),
/// install the packages, merge the config, preflight (distribution image).
pub fn init_containers(
    cr: &LlamaStackDistribution,
    image: &str,
    operator_image: &str,
) -> Vec<Value> {
    let providers = of(cr);
    if providers.is_empty() {
        return Vec::new();
    }
    let tools = json!({"name": "llso-tools", "mountPath": TOOLS_DIR});
    let shared = json!({"name": "external-providers", "mountPath": PROVIDERS_DIR});
    let merged = json!({"name": "merged-config", "mountPath": MERGED_DIR});
    let config = json!({"name": "config", "mountPath": CONFIG_DIR, "readOnly": true});
    let tool = |name: &str| format!("{TOOLS_DIR}/{name}");
    let mut containers = vec![step(
        "copy-tools",
        operator_image,
        vec![
            "/usr/local/bin/llama-stack-operator".into(),
            "install-tools".into(),
            "--to".into(),
            TOOLS_DIR.into(),
        ],
        json!([tools]),
        "10m",
        "64Mi",
    )];
    for (order, (section, provider)) in providers.iter().enumerate() {
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
        let mut container = step(
            &name,
            &provider.image,
            command,
            json!([tools, shared]),
            "10m",
            "64Mi",
        );
        container["imagePullPolicy"] = json!(match provider.image_pull_policy {
            PullPolicy::Always => "Always",
            PullPolicy::Never => "Never",
            PullPolicy::IfNotPresent => "IfNotPresent",
        });
        containers.push(container);
    }
    containers.push(step(
        "install-packages",
        image,
        vec![
            "python3".into(),
            tool("install_providers.py"),
            PROVIDERS_DIR.into(),
            TERMINATION_LOG.into(),
        ],
        json!([tools, shared]),
        "100m",
        "512Mi",
    ));
    containers.push(step(
        "merge-config",
        image,
        vec![
            tool("llama-stack-operator"),
            "merge-config".into(),
            format!("--base={CONFIG_DIR}/config.yaml"),
            format!("--metadata-dir={PROVIDERS_DIR}/metadata"),
            format!("--output={MERGED_DIR}/config.yaml"),
            format!("--extra-providers-output={MERGED_DIR}/extra-providers.yaml"),
        ],
        json!([tools, shared, merged, config]),
        "10m",
        "64Mi",
    ));
    let mut preflight = step(
        "preflight",
        image,
        vec![
            "python3".into(),
            tool("preflight.py"),
            PROVIDERS_DIR.into(),
            format!("{MERGED_DIR}/config.yaml"),
            TERMINATION_LOG.into(),
        ],
        json!([tools, shared, merged]),
        "100m",
        "512Mi",
    );
    preflight["env"] = json!([{"name": "PYTHONPATH", "value": PYTHON_PACKAGES}]);
    containers.push(preflight);
    containers
}

/// Volumes the steps share; `None` without external providers.
pub fn volumes(cr: &LlamaStackDistribution) -> Vec<Value> {
    if of(cr).is_empty() {
        return Vec::new();
    }
    vec![
        json!({"name": "llso-tools", "emptyDir": {"sizeLimit": "256Mi"}}),
        json!({"name": "external-providers", "emptyDir": {"sizeLimit": "4Gi"}}),
        json!({"name": "merged-config", "emptyDir": {"sizeLimit": "16Mi"}}),
    ]
}
