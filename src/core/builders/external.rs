//! External providers in the server Pod: the shared volumes, the init containers in
//! CRD order, and what the server container needs (merged config, PYTHONPATH).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, ResourceRequirements, SeccompProfile,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use llama_stack_resolver::server_line::ServerLine;
use serde_json::Value;

use crate::api::common::{ExternalProviderRef, PullPolicy};
use crate::core::stack::Stack;
use crate::external::{
    MERGED_DIR, PROVIDERS_DIR, TERMINATION_LOG, TOOLS_DIR, install_container_name,
};

use crate::naming::{CONFIG_DIR, volumes};

/// Python packages installed for the providers (prepended to the server's PYTHONPATH).
pub const PYTHON_PACKAGES: &str = "/opt/llama-stack/external-providers/python-packages";

/// The restricted Pod Security profile, for every install step.
fn restricted() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        run_as_non_root: Some(true),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            add: None,
        }),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            localhost_profile: None,
        }),
        ..SecurityContext::default()
    }
}

/// One install step: small requests, a memory limit, its report in the termination message.
fn step(
    name: &str,
    image: &str,
    command: Vec<String>,
    volume_mounts: Vec<VolumeMount>,
    cpu: &str,
    memory: &str,
) -> Container {
    let quantity = |q: &str| Quantity(q.to_owned());
    Container {
        name: name.to_owned(),
        image: Some(image.to_owned()),
        command: Some(command),
        volume_mounts: Some(volume_mounts),
        security_context: Some(restricted()),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_owned(), quantity(cpu)),
                ("memory".to_owned(), quantity(memory)),
            ])),
            limits: Some(BTreeMap::from([("memory".to_owned(), quantity(memory))])),
            claims: None,
        }),
        termination_message_policy: Some("File".to_owned()),
        ..Container::default()
    }
}

/// The mounts the steps share.
struct Mounts {
    tools: VolumeMount,
    shared: VolumeMount,
    merged: VolumeMount,
    config: VolumeMount,
}

impl Mounts {
    fn new(config_dir: &str) -> Self {
        let mount = |name: &str, path: &str| VolumeMount {
            name: name.to_owned(),
            mount_path: path.to_owned(),
            ..VolumeMount::default()
        };
        Self {
            tools: mount(volumes::TOOLS, TOOLS_DIR),
            shared: mount(volumes::EXTERNAL_PROVIDERS, PROVIDERS_DIR),
            merged: mount(volumes::MERGED_CONFIG, MERGED_DIR),
            config: VolumeMount {
                read_only: Some(true),
                ..mount(volumes::CONFIG, config_dir)
            },
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
    (image, server): (&str, ServerLine),
    operator_image: &str,
    config: &str,
) -> Vec<Container> {
    let providers = &stack.external_providers;
    if providers.is_empty() {
        return Vec::new();
    }
    let config_dir = config.rsplit_once('/').map_or(CONFIG_DIR, |(dir, _)| dir);
    let mounts = Mounts::new(config_dir);
    let mut containers = vec![copy_tools(operator_image, &mounts)];
    for (order, (section, provider)) in providers.iter().enumerate() {
        containers.push(stage_provider(order, (section, provider), server, &mounts));
    }
    containers.push(install_packages(image, &mounts));
    containers.push(merge_config(image, config, &mounts));
    containers.push(preflight(image, &mounts));
    containers
}

/// Copies the operator's binary and the Python steps to the tools volume.
fn copy_tools(operator_image: &str, mounts: &Mounts) -> Container {
    let command = vec![
        "/usr/local/bin/llama-stack-operator".into(),
        "install-tools".into(),
        "--to".into(),
        TOOLS_DIR.into(),
    ];
    let volume_mounts = vec![mounts.tools.clone()];
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
    (section, provider): (&str, &ExternalProviderRef),
    server: ServerLine,
    mounts: &Mounts,
) -> Container {
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
    // Only when it is not the default: the Pods of llama-stack stacks keep their template.
    if server != ServerLine::LlamaStack {
        command.push(format!("--server-line={}", server.as_str()));
    }
    let volume_mounts = vec![mounts.tools.clone(), mounts.shared.clone()];
    let mut container = step(
        &name,
        &provider.image,
        command,
        volume_mounts,
        "10m",
        "64Mi",
    );
    let policy = match provider.image_pull_policy {
        PullPolicy::Always => "Always",
        PullPolicy::Never => "Never",
        PullPolicy::IfNotPresent => "IfNotPresent",
    };
    container.image_pull_policy = Some(policy.to_owned());
    container
}

/// Installs the staged wheels with the distribution image's Python.
fn install_packages(image: &str, mounts: &Mounts) -> Container {
    let command = vec![
        "python3".into(),
        tool("install_providers.py"),
        PROVIDERS_DIR.into(),
        TERMINATION_LOG.into(),
    ];
    let volume_mounts = vec![mounts.tools.clone(), mounts.shared.clone()];
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
fn merge_config(image: &str, config: &str, mounts: &Mounts) -> Container {
    let command = vec![
        tool("llama-stack-operator"),
        "merge-config".into(),
        format!("--base={config}"),
        format!("--metadata-dir={PROVIDERS_DIR}/metadata"),
        format!("--output={MERGED_DIR}/config.yaml"),
        format!("--extra-providers-output={MERGED_DIR}/extra-providers.yaml"),
    ];
    let volume_mounts = vec![
        mounts.tools.clone(),
        mounts.shared.clone(),
        mounts.merged.clone(),
        mounts.config.clone(),
    ];
    step("merge-config", image, command, volume_mounts, "10m", "64Mi")
}

/// Imports every provider module the merged config names, before the server starts.
fn preflight(image: &str, mounts: &Mounts) -> Container {
    let command = vec![
        "python3".into(),
        tool("preflight.py"),
        PROVIDERS_DIR.into(),
        format!("{MERGED_DIR}/config.yaml"),
        TERMINATION_LOG.into(),
    ];
    let volume_mounts = vec![
        mounts.tools.clone(),
        mounts.shared.clone(),
        mounts.merged.clone(),
    ];
    let mut container = step("preflight", image, command, volume_mounts, "100m", "512Mi");
    container.env = Some(vec![EnvVar {
        name: "PYTHONPATH".to_owned(),
        value: Some(PYTHON_PACKAGES.to_owned()),
        value_from: None,
    }]);
    container
}

/// Volumes the steps share; none without external providers.
pub fn volumes(stack: &Stack) -> Vec<Volume> {
    if !stack.has_external_providers() {
        return Vec::new();
    }
    let scratch = |name: &str, size: &str| Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: None,
            size_limit: Some(Quantity(size.to_owned())),
        }),
        ..Volume::default()
    };
    vec![
        scratch(volumes::TOOLS, "256Mi"),
        scratch(volumes::EXTERNAL_PROVIDERS, "4Gi"),
        scratch(volumes::MERGED_CONFIG, "16Mi"),
    ]
}
