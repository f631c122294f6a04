//! The server Pod: its container (command, env, mounts, probes, resources, security), its
//! volumes, the external providers' install steps, the user's volumes, and spreading.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapProjection, ConfigMapVolumeSource, Container, ContainerPort,
    EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction, KeyToPath, Lifecycle,
    LifecycleHandler, PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec, Probe,
    ProjectedVolumeSource, ResourceRequirements, SeccompProfile, SecretKeySelector,
    SecretProjection, SecretVolumeSource, SecurityContext, SleepAction, TopologySpreadConstraint,
    Volume, VolumeMount, VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::inputs::{Inputs, ServerConfig};
use super::object::Common;
use super::user_parts::{self, UserParts};
use super::{ca_bundle, external};
use crate::api::v1alpha2::ClientIdentity;
use crate::core::stack::Stack;
use crate::naming::{
    CA_BUNDLE_KEY, MOVED_CONFIG_DIR, PORT_NAME, derived_secret_key, derived_secret_name,
    managed_service_account_name, mount_path, volumes,
};
use crate::stack_config::env::EnvSource;
use crate::stack_config::generate::{CLIENT_IDENTITY_DIR, TLS_DIR};
use llama_stack_resolver::server_line::{ServerLine, ServerRelease};

/// How long a stopping server keeps serving before it is signalled (the `preStop` sleep, a
/// native action since Kubernetes 1.30), while the Service's endpoints update everywhere.
pub const PRE_STOP_SECONDS: i64 = 5;
/// The server container's command unless the user gives one: `llama stack run` on the config in
/// `LLAMA_STACK_CONFIG` (Kubernetes expands `$(VAR)` from the container's environment), on the
/// port in `LLAMA_STACK_PORT`.
pub const SERVER_COMMAND: [&str; 4] = ["llama", "stack", "run", "$(LLAMA_STACK_CONFIG)"];

/// The ServiceAccount the server Pods run as: the user's, else the operator-managed one.
pub fn service_account_name(stack: &Stack) -> String {
    stack
        .user_service_account()
        .map_or_else(|| managed_service_account_name(stack.name()), str::to_owned)
}

/// UID and GID of the server outside OpenShift.
const RUN_AS: i64 = 1001;

/// How a server line is started and configured.
struct Launch {
    /// The state directory the image prepares (the data volume's default mount).
    data_dir: &'static str,
    /// The variable naming the config file for the server itself.
    config_var: &'static str,
    /// The variable the server reads its port from.
    port_var: &'static str,
    /// The variable naming the state directory.
    state_var: &'static str,
    /// The variable the server reads its worker count from, if any (it also covers a config the
    /// operator did not write).
    workers_var: Option<&'static str>,
    /// The command that runs a mounted config, or `None` for the image's entrypoint, which runs
    /// the file `RUN_CONFIG_PATH` names (and its own distribution when that names no file).
    command: Option<&'static [&'static str]>,
}

/// llama-stack 0.x: `llama stack run` on `LLAMA_STACK_CONFIG` (the upstream operator's command,
/// which users' manifests rely on).
const LLAMA_STACK: Launch = Launch {
    data_dir: "/.llama",
    config_var: "LLAMA_STACK_CONFIG",
    port_var: "LLAMA_STACK_PORT",
    state_var: "LLAMA_STACK_CONFIG_DIR",
    workers_var: None,
    command: Some(&SERVER_COMMAND),
};

/// OGX: the image's own entrypoint (`ogx-entrypoint.sh`: `ogx stack run "$RUN_CONFIG_PATH"`,
/// the contract every ogxai image keeps), with `OGX_*` variables; there is no `llama` command.
const OGX: Launch = Launch {
    data_dir: "/.ogx",
    config_var: "OGX_CONFIG",
    port_var: "OGX_PORT",
    state_var: "OGX_CONFIG_DIR",
    // Read from 1.2 on; earlier releases take `server.workers` from the config alone.
    workers_var: Some("OGX_WORKERS"),
    command: None,
};

/// The variable the image entrypoints of both lines read the config path from.
const ENTRYPOINT_CONFIG_VAR: &str = "RUN_CONFIG_PATH";

fn launch(server: ServerRelease) -> &'static Launch {
    match server.line {
        ServerLine::LlamaStack => &LLAMA_STACK,
        ServerLine::Ogx => &OGX,
    }
}

/// Where the server keeps its state: `workload.storage.mountPath`, else the line's directory.
fn data_dir<'a>(stack: &Stack<'a>, server: ServerRelease) -> &'a str {
    stack
        .storage
        .and_then(|s| s.mount_path.as_deref())
        .unwrap_or(launch(server).data_dir)
}

/// Where the config ConfigMap is mounted: the door's directory ([`CONFIG_DIR`](crate::naming::CONFIG_DIR) for a
/// LlamaStackDistribution, `/etc/ogx` for an OGXServer), unless the user mounts a volume of their
/// own there and the config is generated (the user's mount wins, the generated config moves
/// aside). A user's ConfigMap stays there, where its own command may name it.
pub fn config_dir(stack: &Stack, config: &ServerConfig) -> &'static str {
    let home = stack.door.config_dir();
    let taken = user_parts_of(stack)
        .mounts
        .iter()
        .any(|m| mount_path(&m.mount_path) == home);
    match config {
        ServerConfig::Generated(_) if taken => MOVED_CONFIG_DIR,
        _ => home,
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

/// A variable with a literal value.
fn literal(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        value_from: None,
    }
}

/// A variable read from a Secret's key.
fn from_secret(name: &str, secret: String, key: String, optional: Option<bool>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret,
                key,
                optional,
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// The server container's environment as the operator sets it; the user's is merged in with
/// the rest of what the user adds, once the Pod is built ([`user_parts::merge`]).
fn env_vars(stack: &Stack, inputs: &Inputs) -> Vec<EnvVar> {
    let with_external = stack.has_external_providers();
    let data_dir = data_dir(stack, inputs.server);
    let launch = launch(inputs.server);
    let mut env = Vec::new();
    if inputs.config.config_map().is_some() {
        let config = if with_external {
            format!("{}/config.yaml", crate::external::MERGED_DIR)
        } else {
            format!(
                "{}/{}",
                config_dir(stack, &inputs.config),
                inputs.config.key()
            )
        };
        if launch.command.is_none() {
            env.push(literal(ENTRYPOINT_CONFIG_VAR, config.clone()));
        }
        env.push(literal(launch.config_var, config));
    }
    env.extend([
        // `llama stack run` ignores server.port; the port comes from here.
        literal(launch.port_var, stack.networking.port.to_string()),
        literal(launch.state_var, data_dir),
        literal("SQLITE_STORE_DIR", format!("{data_dir}/state")),
        literal("HF_HOME", format!("{data_dir}/huggingface")),
        // A non-root user may not own the image's home directory.
        literal("HOME", data_dir),
    ]);
    if let (Some(var), Some(workers)) = (launch.workers_var, stack.workload.workers) {
        env.push(literal(var, workers.to_string()));
    }
    if with_external {
        env.push(literal("PYTHONPATH", external::PYTHON_PACKAGES));
    }
    if inputs.ca_bundle.is_some() {
        let file = format!("{}/{CA_BUNDLE_KEY}", ca_bundle::MOUNT_DIR);
        env.push(literal("SSL_CERT_FILE", file));
    }
    for var in inputs.generated.iter().flat_map(|g| g.env.iter()) {
        let name = var.name.as_str();
        env.push(match &var.source {
            EnvSource::SecretKeyRef(r) => from_secret(name, r.name.clone(), r.key.clone(), None),
            EnvSource::Value(v) => literal(name, v.clone()),
            // The reconciler splits URLs into an owned Secret named after the resource. A query
            // option the URL may not have is an optional key.
            EnvSource::SecretUrlPart { part, .. } => from_secret(
                name,
                derived_secret_name(stack.name(), inputs.secrets_hash.unwrap_or_default()),
                derived_secret_key(*part),
                part.optional().then_some(true),
            ),
        });
    }
    env
}

/// A read-only mount of the volume `name` at `path`.
fn read_only(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        read_only: Some(true),
        ..mount(name, path)
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        ..VolumeMount::default()
    }
}

fn volume_mounts(stack: &Stack, inputs: &Inputs) -> Vec<VolumeMount> {
    let mut mounts = Vec::new();
    if inputs.config.config_map().is_some() {
        mounts.push(read_only(
            volumes::CONFIG,
            config_dir(stack, &inputs.config),
        ));
    }
    mounts.push(mount(volumes::DATA, data_dir(stack, inputs.server)));
    if inputs.ca_bundle.is_some() {
        mounts.push(read_only(volumes::CA_BUNDLE, ca_bundle::MOUNT_DIR));
    }
    if stack.networking.tls_secret.is_some() {
        mounts.push(read_only(volumes::TLS, TLS_DIR));
    }
    if stack.networking.client_identity.is_some() {
        mounts.push(read_only(volumes::CLIENT_IDENTITY, CLIENT_IDENTITY_DIR));
    }
    if stack.has_external_providers() {
        mounts.push(read_only(
            volumes::EXTERNAL_PROVIDERS,
            crate::external::PROVIDERS_DIR,
        ));
        mounts.push(read_only(
            volumes::MERGED_CONFIG,
            crate::external::MERGED_DIR,
        ));
    }
    mounts
}

/// The health probe, over HTTPS when the server terminates TLS.
fn probe(stack: &Stack, period: i32, timeout: Option<i32>, failures: Option<i32>) -> Probe {
    let scheme = if stack.networking.tls_secret.is_some() {
        "HTTPS"
    } else {
        "HTTP"
    };
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/v1/health".to_owned()),
            port: IntOrString::String(PORT_NAME.to_owned()),
            scheme: Some(scheme.to_owned()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        timeout_seconds: timeout,
        failure_threshold: failures,
        ..Probe::default()
    }
}

/// The user's arguments, and `--insecure` for a server that refuses plain HTTP unless told and
/// runs a config the operator did not write (the image's own, or the user's): the image's
/// entrypoint appends them to its command. A generated config says `server.insecure` itself.
fn args(stack: &Stack, inputs: &Inputs) -> Option<Vec<String>> {
    let overrides = stack.overrides;
    let user = overrides.args.clone();
    let tell = inputs.server.takes_insecure_flag()
        && overrides.command.is_none()
        && stack.networking.tls_secret.is_none()
        && !matches!(inputs.config, ServerConfig::Generated(_))
        && !user.iter().flatten().any(|a| a == INSECURE_FLAG);
    if !tell {
        return user;
    }
    let mut args = user.unwrap_or_default();
    args.push(INSECURE_FLAG.to_owned());
    Some(args)
}

/// The flag OGX 1.2+ takes to serve plain HTTP.
const INSECURE_FLAG: &str = "--insecure";

/// One worker is one process; requests follow the worker count unless the user sets them.
fn default_resources(workers: i32) -> ResourceRequirements {
    let quantity = |q: String| Quantity(q);
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_owned(), quantity(format!("{}m", 500 * workers))),
            ("memory".to_owned(), quantity(format!("{workers}Gi"))),
        ])),
        limits: Some(BTreeMap::from([(
            "memory".to_owned(),
            quantity(format!("{}Gi", 4 * workers)),
        )])),
        claims: None,
    }
}

fn container(stack: &Stack, common: &Common, inputs: &Inputs) -> Container {
    let workload = stack.workload;
    let overrides = stack.overrides;
    let workers = workload.workers.unwrap_or(1).max(1);
    // A mounted config is what must run, whatever the image's own entrypoint would start
    // (distribution images differ, and some run the config baked into them). Without one, the
    // image's entrypoint runs its own config.
    let launch_command = launch(inputs.server)
        .command
        .map(|c| c.iter().map(|part| (*part).to_owned()).collect::<Vec<_>>());
    let command = match (&overrides.command, &inputs.config) {
        (Some(command), _) => Some(command.clone()),
        (None, ServerConfig::Image) => None,
        (None, _) => launch_command,
    };
    Container {
        name: stack.door.container().to_owned(),
        image: Some(inputs.image.to_owned()),
        args: args(stack, inputs),
        command,
        ports: Some(
            common
                .ports
                .iter()
                .map(|&(name, port)| ContainerPort {
                    name: Some(name.to_owned()),
                    container_port: port,
                    protocol: Some("TCP".to_owned()),
                    ..ContainerPort::default()
                })
                .collect(),
        ),
        env: Some(env_vars(stack, inputs)),
        volume_mounts: Some(volume_mounts(stack, inputs)),
        resources: Some(
            workload
                .resources
                .clone()
                .unwrap_or_else(|| default_resources(workers)),
        ),
        startup_probe: Some(probe(stack, 5, None, Some(60))),
        readiness_probe: Some(probe(stack, 10, None, None)),
        liveness_probe: Some(probe(stack, 20, Some(5), Some(6))),
        // A stopping Pod leaves the Service's endpoints at once, but every node's proxy learns it
        // a moment later: keep serving meanwhile, so that a rollout fails no request.
        lifecycle: Some(Lifecycle {
            pre_stop: Some(LifecycleHandler {
                sleep: Some(SleepAction {
                    seconds: PRE_STOP_SECONDS,
                }),
                ..LifecycleHandler::default()
            }),
            ..Lifecycle::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                add: None,
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

fn pod_volumes(stack: &Stack, common: &Common, inputs: &Inputs) -> Vec<Volume> {
    let volume = |name: &str| Volume {
        name: name.to_owned(),
        ..Volume::default()
    };
    let config_map = |name: &str| {
        Some(ConfigMapVolumeSource {
            name: name.to_owned(),
            ..ConfigMapVolumeSource::default()
        })
    };
    let mut volumes = Vec::new();
    if let Some(name) = inputs.config.config_map() {
        volumes.push(Volume {
            config_map: config_map(name),
            ..volume(volumes::CONFIG)
        });
    }
    volumes.push(match stack.storage {
        Some(_) => Volume {
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: stack.claim_name(),
                read_only: None,
            }),
            ..volume(volumes::DATA)
        },
        None => Volume {
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..volume(volumes::DATA)
        },
    });
    if let Some(name) = &common.ca_bundle_name {
        volumes.push(Volume {
            config_map: config_map(name),
            ..volume(volumes::CA_BUNDLE)
        });
    }
    if let Some(secret) = stack.networking.tls_secret {
        volumes.push(Volume {
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.to_owned()),
                ..SecretVolumeSource::default()
            }),
            ..volume(volumes::TLS)
        });
    }
    if let Some(identity) = stack.networking.client_identity {
        volumes.push(client_identity_volume(identity));
    }
    volumes.extend(external::volumes(stack));
    volumes
}

/// The certificate (from its ConfigMap) and the key (from its Secret, readable by the owner
/// and the Pod's group only) as `tls.crt` and `tls.key` of one directory.
fn client_identity_volume(identity: &ClientIdentity) -> Volume {
    let item = |key: &str, path: &str, mode: Option<i32>| KeyToPath {
        key: key.to_owned(),
        path: path.to_owned(),
        mode,
    };
    Volume {
        name: volumes::CLIENT_IDENTITY.to_owned(),
        projected: Some(ProjectedVolumeSource {
            default_mode: None,
            sources: Some(vec![
                VolumeProjection {
                    config_map: Some(ConfigMapProjection {
                        name: identity.certificate.name.clone(),
                        items: Some(vec![item(&identity.certificate.key, "tls.crt", None)]),
                        optional: None,
                    }),
                    ..VolumeProjection::default()
                },
                VolumeProjection {
                    secret: Some(SecretProjection {
                        name: identity.private_key.name.clone(),
                        items: Some(vec![item(
                            &identity.private_key.key,
                            "tls.key",
                            Some(0o440),
                        )]),
                        optional: None,
                    }),
                    ..VolumeProjection::default()
                },
            ]),
        }),
        ..Volume::default()
    }
}

/// Non-root for every container. Distribution images may declare root, so outside OpenShift a
/// fixed non-root UID and group are set (the data volume is group-owned); on OpenShift the
/// restricted SCC assigns them and a fixed UID would be refused.
fn pod_security(inputs: &Inputs) -> PodSecurityContext {
    let fixed = (!inputs.routes_available).then_some(RUN_AS);
    PodSecurityContext {
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            localhost_profile: None,
        }),
        run_as_user: fixed,
        run_as_group: fixed,
        fs_group: fixed,
        ..PodSecurityContext::default()
    }
}

/// The user's spread constraints, else, with more than one replica possible, a preference for
/// different nodes that never blocks scheduling.
fn spread(stack: &Stack, common: &Common) -> Option<Vec<TopologySpreadConstraint>> {
    let workload = stack.workload;
    let most = workload
        .autoscaling
        .as_ref()
        .map_or(workload.replicas.unwrap_or(1), |a| a.max_replicas);
    match &workload.topology_spread_constraints {
        Some(user) => Some(user.clone()),
        None if most > 1 => Some(vec![TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "kubernetes.io/hostname".to_owned(),
            when_unsatisfiable: "ScheduleAnyway".to_owned(),
            label_selector: Some(common.selector.clone()),
            ..TopologySpreadConstraint::default()
        }]),
        None => None,
    }
}

/// The server Pod: its container, the external providers' install steps, the user's volumes.
pub(super) fn pod(stack: &Stack, common: &Common, inputs: &Inputs) -> PodSpec {
    let init = external::init_containers(
        stack,
        (inputs.image, inputs.server.line),
        inputs.operator_image,
        &format!(
            "{}/{}",
            config_dir(stack, &inputs.config),
            inputs.config.key()
        ),
    );
    let mut pod = PodSpec {
        service_account_name: Some(service_account_name(stack)),
        automount_service_account_token: Some(false),
        // Kubernetes would give the server `<SERVICE>_PORT=tcp://…` and six more variables for
        // every Service in the namespace: a Service named `ogx` sets the OGX CLI's `OGX_PORT`
        // (the OGX quickstart chart turns links off for this), and a namespace of thousands
        // of stacks would fill the environment past what a process may start with. The server
        // finds its peers by DNS.
        enable_service_links: Some(false),
        containers: vec![container(stack, common, inputs)],
        init_containers: Some(init).filter(|init| !init.is_empty()),
        volumes: Some(pod_volumes(stack, common, inputs)),
        security_context: Some(pod_security(inputs)),
        termination_grace_period_seconds: stack.overrides.termination_grace_period_seconds,
        topology_spread_constraints: spread(stack, common),
        resource_claims: stack.workload.resource_claims.clone(),
        ..PodSpec::default()
    };
    let providers_path = stack
        .has_external_providers()
        .then_some(external::PYTHON_PACKAGES);
    user_parts::merge(&mut pod, 0, &user_parts_of(stack), providers_path);
    pod
}
