//! End to end on a real node: kubelet and containerd run the operator's Pods from real images,
//! pulled by digest from a registry with htpasswd auth and a private CA, with the pull secret the
//! resolver used. The operator runs as a process (as in `operator_process`), in the same sealed
//! network namespace as the cluster (see `support::sealed`).
//!
//! The distribution image is Debian trixie with llama-stack 0.7.3 and what its config needs,
//! built by `scripts/build-test-images.sh` and labelled with its base config both ways
//! (`io.llamastack.config.base64`, and a layer holding the file). The operator's image is built
//! from the repository's `Dockerfile` (`scripts/build-operator-image.sh`) and the two example
//! providers' (llama-stack's and OGX's) from their `Containerfile`s; all are pulled by digest from
//! the same registry.
//!
//! Beside it, an OGX 1.3.0 image (the line llama-stack became), labelled as OGX's own build labels
//! real images (`com.ogx.*`), which the operator ConfigMap's `image-overrides` names for
//! `starter`, as an air-gapped mirror of the catalog's `docker.io/ogxai/distribution-starter`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

mod adoption;
mod praxis;
mod rollback;
mod storage;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::{Value, json};
use support::control_plane::{ControlPlane, start_controllers_with_crd};
use support::harness::{run_suite, table};
use support::llama_stack::{self, http_get, http_post};
use support::node::{RealNode, TrustedRegistry, operator_image};
use support::node_stack::{
    BAKED_PROVIDER, copy_to_registry, distribution_image, external_spec, ogx_distribution_image,
    ogx_praxis_image, ogx_slim_spec, provider_images, pull_secret_namespace, push, push_pinned,
    push_to, slim_spec,
};
use support::operator::{
    OperatorProcess, convert_through, spawn_operator_with_webhooks, webhook_certificates,
};
use support::process::free_port;
use support::registries::Registries;
use support::test_ca::TestCa;

/// A config llama-stack 0.7.3 refuses at start-up (`max_tokens` must be an integer).
const REJECTED_CONFIG: &str = "version: 2\ndistro_name: broken\napis: [inference]\nproviders:\n  inference:\n  - provider_id: vllm-broken\n    provider_type: remote::vllm\n    config:\n      base_url: http://10.88.0.1:9/v1\n      max_tokens: not-a-number\n";

/// From creation to a Ready stack: an image pull and a Python server start on two cores.
const READY: Duration = Duration::from_secs(240);
/// Until a condition's verdict on a revision: a crash loop is one once the server has failed to
/// start twice (kubelet restarts at once after the first exit), each start a Python server's
/// imports, which took minutes on a slow CI machine.
const VERDICT: Duration = Duration::from_secs(2 * 240);

struct Images {
    /// `<registry>/e2e/distribution:base64` and `:layer`, as pushed (tags).
    base64: String,
    layer: String,
    /// `:plain`: the same image without any config label (its own command runs its config).
    plain: String,
    /// The `:base64` image in the token-auth registry, whose CA the operator trusts and the
    /// node's containerd does not.
    untrusted: String,
    /// The operator's image and the example providers' (llama-stack's and OGX's), pinned by digest.
    operator: String,
    acme: String,
    echo: String,
    /// The OGX image, pinned by digest; `image-overrides` names its tag for `starter`.
    ogx: String,
    /// The OGX image with `ogx migrate praxis` (a build of 1.3.0), pinned by digest.
    praxis: String,
}

struct Env {
    plane: ControlPlane,
    _registries: Registries,
    node: RealNode,
    /// The operator; stopped and started again by the check that restarts it.
    operator: Mutex<Option<OperatorProcess>>,
    /// How the operator was started: its webhook address and flags.
    operator_launch: (String, Vec<String>),
    images: Images,
    work: tempfile::TempDir,
}

/// Starts the e2e operator with its webhooks on `webhook_addr`, the certificates in `work`.
fn start_operator(
    plane: &ControlPlane,
    work: &Path,
    (webhook_addr, flags): &(String, Vec<String>),
) -> Result<OperatorProcess, String> {
    let bin = Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    // As the operator's own ServiceAccount, with exactly the rights deploy/ grants, on an API
    // server that enforces owner-reference permissions as OpenShift's does.
    let kubeconfig = support::operator::install_operator_rbac(plane).map_err(|e| e.to_string())?;
    spawn_operator_with_webhooks(plane, bin, "e2e", &kubeconfig, webhook_addr, work, &flags)
        .map_err(|e| e.to_string())
}

fn prepare() -> Result<Env, String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let layout = distribution_image(work.path())?;
    let (ogx_layout, _) = ogx_distribution_image(work.path())?;
    let praxis_layout = ogx_praxis_image(&ogx_layout)?;

    let operator_layout = operator_image().map_err(|e| e.to_string())?;
    let (acme_layout, echo_layout) = provider_images()?;

    let regs = Registries::start().map_err(|e| e.to_string())?;
    let images = Images {
        base64: push(&layout, "base64", &regs)?,
        layer: push(&layout, "layer", &regs)?,
        plain: push(&layout, "plain", &regs)?,
        untrusted: push_to(&layout, "base64", &regs.token.host, &regs)?,
        operator: push_pinned(&operator_layout, "llama-stack-operator", &regs)?,
        acme: push_pinned(&acme_layout, "acme-words", &regs)?,
        echo: push_pinned(&echo_layout, "acme-echo", &regs)?,
        ogx: push_pinned(&ogx_layout, "ogx-distribution", &regs)?,
        praxis: push_pinned(&praxis_layout, "ogx-praxis", &regs)?,
    };
    let (plane, _rt, _client) = start_controllers_with_crd().map_err(|e| e.to_string())?;
    // The mirror of the catalog's starter image, as an air-gapped cluster configures it; the
    // operator reads it before its first reconcile.
    let mirror = copy_to_registry(
        &ogx_layout,
        "latest",
        &format!(
            "{}/mirror/ogxai/distribution-starter:1.3.0",
            regs.basic.host
        ),
        &regs,
    )?;
    let settings = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": support::operator::OPERATOR_NAMESPACE}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "llama-stack-operator-config", "namespace": support::operator::OPERATOR_NAMESPACE},
         "data": {"image-overrides": format!("starter: {mirror}\n")}}]});
    support::operator::kubectl(
        &plane,
        &["apply", "--server-side", "-f", "-"],
        Some(&settings.to_string()),
    )
    .map_err(|e| e.to_string())?;
    let ca_file = regs.dir.path().join("ca.pem");
    let node = RealNode::start(
        &plane,
        &[TrustedRegistry {
            host: regs.basic.host.clone(),
            ca_file: ca_file.clone(),
        }],
    )
    .map_err(|e| e.to_string())?;
    let webhook_addr = format!("127.0.0.1:{}", free_port().map_err(|e| e.to_string())?);
    let webhook_ca = webhook_certificates(work.path())?;
    let operator_launch = (
        webhook_addr.clone(),
        vec![
            format!("--registry-ca-file={}", ca_file.display()),
            "--no-reference-checks".to_owned(),
            format!("--operator-image={}", images.operator),
        ],
    );
    let operator = start_operator(&plane, work.path(), &operator_launch)?;
    convert_through(
        &plane,
        &format!("https://{webhook_addr}/convert"),
        &webhook_ca,
    )?;
    Ok(Env {
        plane,
        _registries: regs,
        node,
        operator: Mutex::new(Some(operator)),
        operator_launch,
        images,
        work,
    })
}

impl Env {
    /// Stops the operator (SIGTERM, as a rolling update of its Deployment does).
    fn stop_operator(&self) {
        drop(
            self.operator
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
    }

    /// Starts the operator again. Only from the main thread (the last check): the process is
    /// tied to the thread that starts it.
    fn restart_operator(&self) -> Result<(), Failed> {
        let operator = start_operator(&self.plane, self.work.path(), &self.operator_launch)?;
        *self.operator.lock().unwrap_or_else(|p| p.into_inner()) = Some(operator);
        Ok(())
    }

    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, Failed> {
        support::operator::kubectl(&self.plane, args, stdin)
            .map_err(|e| Failed::from(e.to_string()))
    }

    fn json(&self, args: &[&str]) -> Result<Value, Failed> {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        Ok(serde_json::from_str(&self.kubectl(&all, None)?)?)
    }

    /// The Pods of stack `ns/name` (by its instance label), those being deleted included.
    fn stack_pods(&self, ns: &str, name: &str) -> Result<Vec<Value>, Failed> {
        let instance = format!("app.kubernetes.io/instance={name}");
        let pods = self.json(&["get", "pods", "-n", ns, "-l", &instance])?;
        Ok(pods["items"].as_array().cloned().unwrap_or_default())
    }

    /// A namespace with the registry's pull secret on its default ServiceAccount.
    fn namespace(&self, ns: &str, host: &str) -> Result<(), Failed> {
        pull_secret_namespace(&self.plane, ns, host).map_err(|e| Failed::from(e.to_string()))
    }

    fn create_stack(&self, ns: &str, name: &str, image: &str) -> Result<(), Failed> {
        self.create_v1alpha2(ns, name, slim_spec(image, "vllm-e2e"))
    }

    /// Merge-patches the LlamaStackDistribution `ns/name` with `patch`.
    fn patch_llsd(&self, ns: &str, name: &str, patch: &Value) -> Result<(), Failed> {
        let patch = patch.to_string();
        self.kubectl(
            &[
                "patch", "llsd", name, "-n", ns, "--type", "merge", "-p", &patch,
            ],
            None,
        )?;
        Ok(())
    }

    /// Creates the ConfigMap `ns/name` holding [`REJECTED_CONFIG`] as `config.yaml`.
    fn create_rejected_config(&self, ns: &str, name: &str) -> Result<(), Failed> {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": {"config.yaml": REJECTED_CONFIG}});
        self.kubectl(&["create", "-f", "-"], Some(&cm.to_string()))?;
        Ok(())
    }

    /// The Events of `ns` with `reason`, as `kubectl get events` prints them.
    fn events(&self, ns: &str, reason: &str) -> Result<String, Failed> {
        let selector = format!("reason={reason}");
        self.kubectl(
            &["get", "events", "-n", ns, "--field-selector", &selector],
            None,
        )
    }

    /// Creates the v1alpha2 LlamaStackDistribution `ns/name` with `spec`.
    fn create_v1alpha2(&self, ns: &str, name: &str, spec: Value) -> Result<(), Failed> {
        let cr = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": name, "namespace": ns}, "spec": spec});
        self.kubectl(&["create", "-f", "-"], Some(&cr.to_string()))?;
        Ok(())
    }

    /// Waits until the stack's phase is Ready; on time-out, says what the cluster shows.
    fn wait_ready(&self, ns: &str, name: &str) -> Result<Value, Failed> {
        let deadline = Instant::now() + READY;
        loop {
            let llsd = self.json(&["get", "llsd", name, "-n", ns])?;
            if llsd["status"]["phase"] == "Ready" {
                return Ok(llsd);
            }
            if Instant::now() > deadline {
                let pods = self
                    .kubectl(&["get", "pods", "-n", ns, "-o", "yaml"], None)
                    .unwrap_or_default();
                let events = self
                    .kubectl(&["get", "events", "-n", ns], None)
                    .unwrap_or_default();
                return Err(format!(
                    "{ns}/{name} not Ready after {READY:?}; status: {}\nPods:\n{pods}\nEvents:\n{events}\n{}",
                    llsd["status"],
                    self.node.failure("node")
                )
                .into());
            }
            std::thread::sleep(Duration::from_secs(2));
        }
    }
}

/// The Pod of stack `name` asks for the digest the resolver pinned, kubelet ran that digest,
/// and containerd holds it.
fn kubelet_ran_the_pinned_digest(
    env: &Env,
    ns: &str,
    name: &str,
    llsd: &Value,
) -> Result<(), Failed> {
    let pinned = llsd["status"]["resolvedDistribution"]["image"]
        .as_str()
        .ok_or("no resolvedDistribution.image")?
        .to_owned();
    let digest = pinned
        .rsplit_once('@')
        .ok_or("the resolved image is not pinned")?
        .1;
    assert_eq!(
        llsd["status"]["resolvedDistribution"]["configSource"],
        "oci-label"
    );
    let selector = format!("app.kubernetes.io/instance={name}");
    let pods = env.json(&["get", "pods", "-n", ns, "-l", &selector])?;
    let pod = &pods["items"][0];
    let server = pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["ready"] == true))
        .ok_or_else(|| format!("no ready container in {}", pod["status"]))?;
    let spec_image = pod["spec"]["containers"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == server["name"]))
        .map(|c| c["image"].clone());
    assert_eq!(
        spec_image,
        Some(json!(pinned)),
        "the Pod asks for the pinned reference"
    );
    assert!(
        server["imageID"]
            .as_str()
            .unwrap_or_default()
            .ends_with(digest),
        "kubelet ran {} (pinned {digest})",
        server["imageID"]
    );
    assert!(
        env.node.images()?.contains(digest),
        "containerd holds the pinned digest"
    );

    Ok(())
}

/// The status of stack `name` carries the server's version and providers, as the operator read
/// them through the Service.
fn the_status_tells_what_the_server_says(env: &Env, ns: &str, name: &str) -> Result<(), Failed> {
    let mut status = Value::Null;
    eventually("the server's version and providers in the status", || {
        status = env.json(&["get", "llsd", name, "-n", ns])?["status"].clone();
        Ok(status["version"]["llamaStackServerVersion"] == "0.7.3")
    })
    .map_err(|e| format!("{e:?}; status: {status}"))?;
    let listed = &status["distributionConfig"]["providers"];
    let vllm = listed
        .as_array()
        .and_then(|p| p.iter().find(|p| p["provider_id"] == "vllm-e2e"))
        .ok_or_else(|| format!("vllm-e2e not in {listed}"))?;
    assert_eq!(vllm["api"], "inference");
    assert!(
        vllm["health"]["status"].is_string(),
        "health as the server reports it: {vllm}"
    );
    assert_eq!(
        vllm["config"]["base_url"], "http://10.88.0.1:9/v1",
        "the provider's config as the server reports it (what the upstream operator's users read): {vllm}"
    );
    let responding = condition(&status, "ServerResponding");
    assert_eq!(
        (responding["status"].as_str(), responding["reason"].as_str()),
        (Some("True"), Some("ServerResponded"))
    );
    Ok(())
}

/// A v1alpha2 stack from the private, labelled image becomes Ready on the real node; kubelet ran
/// the digest the resolver pinned, and the server answers through the Service the operator made.
fn labelled_private_image_serves_through_its_service(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-serve";
    env.namespace(ns, registry_host(&env.images.base64))?;
    env.create_stack(ns, "slim", &env.images.base64)?;
    let llsd = env.wait_ready(ns, "slim")?;

    kubelet_ran_the_pinned_digest(env, ns, "slim", &llsd)?;

    let address = service_address(env, ns, "slim")?;
    assert_eq!(served_version(&address)?, "0.7.3");

    let ids = provider_ids(&address)?;
    assert!(
        ids.iter().any(|id| id == "vllm-e2e") && !ids.iter().any(|id| id == BAKED_PROVIDER),
        "the server runs the operator's config, not the image's: {ids:?}"
    );

    the_status_tells_what_the_server_says(env, ns, "slim")
}

/// The image whose base config is a file in a layer (named by `io.llamastack.config.layer`
/// and `.path`) works the same way.
fn config_in_a_layer_serves_too(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-layer";
    env.namespace(ns, registry_host(&env.images.layer))?;
    env.create_stack(ns, "slim", &env.images.layer)?;
    let llsd = env.wait_ready(ns, "slim")?;
    assert_eq!(
        llsd["status"]["resolvedDistribution"]["configSource"],
        "oci-label"
    );
    let address = service_address(env, ns, "slim")?;
    let (code, body) = http_get(&format!("http://{address}/v1/health"))?;
    assert_eq!(code, 200, "GET /v1/health through the Service: {body}");
    Ok(())
}

/// The `clusterIP:port` of the stack's Service, once it accepts connections.
fn service_address(env: &Env, ns: &str, name: &str) -> Result<String, Failed> {
    let service = env.json(&["get", "service", &format!("{name}-service"), "-n", ns])?;
    let ip = service["spec"]["clusterIP"]
        .as_str()
        .ok_or("no clusterIP")?;
    let address = format!("{ip}:{}", service["spec"]["ports"][0]["port"]);
    // A Ready Pod reaches the Service's endpoints, and kube-proxy's rules, a moment later: until
    // then a connection is refused with "No route to host" (a CI run failed so, 2026-11-27).
    let socket: std::net::SocketAddr = address.parse()?;
    eventually(&format!("{address} accepting connections"), || {
        Ok(std::net::TcpStream::connect_timeout(&socket, Duration::from_secs(2)).is_ok())
    })?;
    Ok(address)
}

/// The providers the server behind `address` lists (`/v1/providers`).
fn listed_providers(address: &str) -> Result<Vec<Value>, Failed> {
    let (code, body) = http_get(&format!("http://{address}/v1/providers"))?;
    if code != 200 {
        return Err(format!("GET /v1/providers: {code} {body}").into());
    }
    let mut providers: Value = serde_json::from_str(&body)?;
    match providers["data"].take() {
        Value::Array(list) => Ok(list),
        _ => Ok(Vec::new()),
    }
}

/// The ids of `providers` (as [`listed_providers`] returns them).
fn ids(providers: &[Value]) -> Vec<String> {
    providers
        .iter()
        .filter_map(|p| p["provider_id"].as_str().map(str::to_owned))
        .collect()
}

/// The provider ids the server behind `address` lists.
fn provider_ids(address: &str) -> Result<Vec<String>, Failed> {
    Ok(ids(&listed_providers(address)?))
}

/// The inference provider ids the server behind `address` lists (OGX also lists the builtin
/// interactions and messages providers its config keeps).
fn inference_provider_ids(address: &str) -> Result<Vec<String>, Failed> {
    let listed = listed_providers(address)?;
    let inference: Vec<Value> = listed
        .into_iter()
        .filter(|p| p["api"] == "inference")
        .collect();
    Ok(ids(&inference))
}

/// The version the server behind `address` reports (`/v1/version`).
fn served_version(address: &str) -> Result<String, Failed> {
    let (code, body) = http_get(&format!("http://{address}/v1/version"))?;
    if code != 200 {
        return Err(format!("GET /v1/version: {code} {body}").into());
    }
    let version: Value = serde_json::from_str(&body)?;
    Ok(version["version"].as_str().unwrap_or_default().to_owned())
}

/// [`served_version`], once the Service routes to a Pod that answers: a Deployment counts its
/// Pod Ready before kube-proxy sends the Service's traffic to the Pod's new address ("No route
/// to host" in between, seen in CI on a loaded machine after a Pod was replaced).
fn served_version_once_routed(address: &str) -> Result<String, Failed> {
    let mut version = String::new();
    eventually("the server answering through its Service", || {
        Ok(served_version(address).map(|v| version = v).is_ok())
    })?;
    Ok(version)
}

/// Probes `/v1/health` through the Service every 200 ms from a thread until dropped; counts
/// the probes that failed.
struct Prober {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<(u32, u32, Vec<String>)>>,
}

impl Prober {
    fn start(address: String) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut ok, mut failed, mut errors) = (0, 0, Vec::new());
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                match http_get(&format!("http://{address}/v1/health")) {
                    Ok((200, _)) => ok += 1,
                    other => {
                        failed += 1;
                        errors.push(format!("{other:?}"));
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            (ok, failed, errors)
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    /// (successful probes, failed probes, the failures).
    fn finish(mut self) -> (u32, u32, Vec<String>) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

/// The condition of `type_` in a status (`null` when absent).
fn condition(status: &Value, type_: &str) -> Value {
    status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or_default()
}

/// Waits until the status of stack `name` has the condition `type_` with `reason`; returns that
/// status, or says what the status and the Pods last were.
fn wait_for_reason(
    env: &Env,
    ns: &str,
    name: &str,
    type_: &str,
    reason: &str,
) -> Result<Value, Failed> {
    let mut status = Value::Null;
    support::wait::poll_until(
        VERDICT,
        Duration::from_secs(1),
        &format!("{type_} with {reason}"),
        || {
            status = env.json(&["get", "llsd", name, "-n", ns])?["status"].clone();
            Ok::<bool, Failed>(condition(&status, type_)["reason"] == reason)
        },
    )
    .map_err(Failed::from)
    .map_err(|e| {
        let pods = env
            .kubectl(&["get", "pods", "-n", ns, "-o", "wide"], None)
            .unwrap_or_default();
        format!("{e:?}; status: {status}; pods:\n{pods}")
    })?;
    Ok(status)
}

/// Waits for `check` to pass, up to [`READY`]; the error says what it last saw.
fn eventually(what: &str, check: impl FnMut() -> Result<bool, Failed>) -> Result<(), Failed> {
    support::wait::poll_until(READY, Duration::from_secs(1), what, check).map_err(Failed::from)
}

/// A config change rolls out once, through one new ReplicaSet, and the old Pod serves until the
/// new one is ready; then a config the server rejects crash-loops in a new Pod while the old Pod
/// keeps serving, and the status names the crash.
fn changes_roll_once_and_a_rejected_config_never_takes_the_stack_down(
    env: &Env,
) -> Result<(), Failed> {
    let ns = "e2e-roll";
    env.namespace(ns, registry_host(&env.images.base64))?;
    env.create_stack(ns, "roll", &env.images.base64)?;
    env.wait_ready(ns, "roll")?;
    let address = service_address(env, ns, "roll")?;
    a_change_rolls_once_without_a_failed_request(env, ns, &address)?;
    a_rejected_config_crash_loops_behind_the_old_pod(env, ns, &address)?;
    deletion_leaves_nothing_running(env, ns)
}

/// A provider id change rolls out through one new ReplicaSet while every probe is answered.
fn a_change_rolls_once_without_a_failed_request(
    env: &Env,
    ns: &str,
    address: &str,
) -> Result<(), Failed> {
    let prober = Prober::start(address.to_owned());

    env.patch_llsd(
        ns,
        "roll",
        &json!({"spec": {"providers": {"inference": {"id": "vllm-second"}}}}),
    )?;
    eventually("the new provider id through the Service", || {
        Ok(provider_ids(address)?.contains(&"vllm-second".to_owned()))
    })?;
    env.wait_ready(ns, "roll")?;
    let replica_sets = |env: &Env| -> Result<Vec<Value>, Failed> {
        let list = env.json(&[
            "get",
            "rs",
            "-n",
            ns,
            "-l",
            "app.kubernetes.io/instance=roll",
        ])?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    };
    let sets = replica_sets(env)?;
    assert_eq!(sets.len(), 2, "one new ReplicaSet for one change");
    let (ok, failed, errors) = prober.finish();
    assert_eq!(
        failed, 0,
        "the Service answered during the rollout ({ok} ok): {errors:?}"
    );

    Ok(())
}

/// A config the server rejects crash-loops in the new Pod; the old one keeps serving, and the
/// status and a Warning Event name the crash.
fn a_rejected_config_crash_loops_behind_the_old_pod(
    env: &Env,
    ns: &str,
    address: &str,
) -> Result<(), Failed> {
    env.create_rejected_config(ns, "broken")?;
    let prober = Prober::start(address.to_owned());
    env.patch_llsd(
        ns,
        "roll",
        &json!({"spec": {"providers": null, "disabled": null,
            "overrideConfig": {"configMapName": "broken"}}}),
    )?;
    let seen = wait_for_reason(env, ns, "roll", "DeploymentReady", "ServerCrashLooping")?;
    assert_eq!(seen["phase"], "Failed", "{seen}");
    let available = condition(&seen, "Available");
    assert_eq!(
        available["status"], "True",
        "the old Pod still serves: {available}"
    );
    assert_eq!(
        provider_ids(address)?,
        ["vllm-second"],
        "the Service still reaches the previous config"
    );
    let (ok, failed, errors) = prober.finish();
    assert_eq!(
        failed, 0,
        "the Service answered while the new Pod crashed ({ok} ok): {errors:?}"
    );
    let events = env.events(ns, "ServerCrashLooping")?;
    assert!(
        events.contains("Warning"),
        "a Warning Event names the crash: {events}"
    );

    Ok(())
}

/// Deleting the resource removes every object and stops every container of the stack.
fn deletion_leaves_nothing_running(env: &Env, ns: &str) -> Result<(), Failed> {
    assert!(
        !env.node.running_containers(ns)?.is_empty(),
        "the stack's containers run"
    );
    env.kubectl(&["delete", "llsd", "roll", "-n", ns, "--wait=true"], None)?;
    eventually(
        "nothing of the stack left in the cluster or on the node",
        || {
            let left = env.kubectl(
                &[
                    "get",
                    "deploy,rs,pods,svc,cm,sa",
                    "-n",
                    ns,
                    "-l",
                    "app.kubernetes.io/instance=roll",
                    "-o",
                    "name",
                ],
                None,
            )?;
            Ok(left.trim().is_empty() && env.node.running_containers(ns)?.is_empty())
        },
    )?;
    Ok(())
}

/// A v1alpha1 resource, as users of the upstream operator write it, goes through the operator's
/// conversion webhook and runs the image's own config on the node.
fn a_v1alpha1_resource_runs_through_the_conversion_webhook(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-v1alpha1";
    env.namespace(ns, registry_host(&env.images.base64))?;
    let cr = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
        "metadata": {"name": "upstream", "namespace": ns},
        "spec": {"replicas": 1, "server": {"distribution": {"image": env.images.base64},
            "containerSpec": {"port": 8321, "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}}}});
    env.kubectl(&["create", "-f", "-"], Some(&cr.to_string()))?;
    env.wait_ready(ns, "upstream")?;
    let v1 = env.json(&[
        "get",
        "llamastackdistributions.v1alpha1.llamastack.io",
        "upstream",
        "-n",
        ns,
    ])?;
    assert_eq!(v1["apiVersion"], "llamastack.io/v1alpha1");
    assert_eq!(
        v1["status"]["phase"], "Ready",
        "the status reads back in v1alpha1: {}",
        v1["status"]
    );
    let ids = provider_ids(&service_address(env, ns, "upstream")?)?;
    assert_eq!(
        ids,
        [BAKED_PROVIDER],
        "no spec providers: the image's base config runs"
    );
    Ok(())
}

/// The two most common shapes of real v1alpha1 manifests, as the upstream operator ran them: an
/// image without config labels and no `userConfig` runs its own entrypoint and config; a
/// `userConfig` ConfigMap that keeps the config under `run.yaml`, run by the manifest's own
/// command, is mounted whole at /etc/llama-stack.
fn unlabelled_image_and_run_yaml_config_map_serve_as_upstream_ran_them(
    env: &Env,
) -> Result<(), Failed> {
    let ns = "e2e-dropin";
    env.namespace(ns, registry_host(&env.images.plain))?;
    let resources = json!({"requests": {"cpu": "100m", "memory": "256Mi"}});
    let own = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
        "metadata": {"name": "in-house", "namespace": ns},
        "spec": {"server": {"distribution": {"image": env.images.plain},
            "containerSpec": {"port": 8321, "resources": resources}}}});
    // The image's config with another provider id, so the server proves which config it runs.
    let baked = std::fs::read_to_string(env.work.path().join("distribution-config.yaml"))?;
    assert!(
        baked.contains(BAKED_PROVIDER),
        "the image's config names {BAKED_PROVIDER}"
    );
    let run_yaml = baked.replace(BAKED_PROVIDER, "vllm-run-yaml");
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "llama-stack-config", "namespace": ns},
        "data": {"run.yaml": run_yaml}});
    let chart = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
        "metadata": {"name": "chart", "namespace": ns},
        "spec": {"server": {"distribution": {"image": env.images.plain},
            "userConfig": {"configMapName": "llama-stack-config"},
            "containerSpec": {"port": 8321, "resources": resources,
                "command": ["llama", "stack", "run", "/etc/llama-stack/run.yaml"]}}}});
    for object in [&own, &config_map, &chart] {
        env.kubectl(&["create", "-f", "-"], Some(&object.to_string()))?;
    }
    for (name, provider, reason) in [
        ("in-house", BAKED_PROVIDER, "ImageOwnConfig"),
        ("chart", "vllm-run-yaml", "ConfigGenerationSucceeded"),
    ] {
        let llsd = env.wait_ready(ns, name)?;
        let config = condition(&llsd["status"], "ConfigGenerated");
        assert_eq!(config["reason"], reason, "{name}: {config}");
        let address = service_address(env, ns, name)?;
        assert_eq!(
            provider_ids(&address)?,
            [provider],
            "{name} runs its config"
        );
        assert_eq!(served_version(&address)?, "0.7.3", "{name}");
    }
    Ok(())
}

/// Checks that stack `name` runs OGX 1.3.0 as the image's labels say: the status names the line,
/// its version and the label that told, and the server answers with that version.
fn runs_ogx(env: &Env, ns: &str, name: &str, llsd: &Value) -> Result<(), Failed> {
    let resolved = &llsd["status"]["resolvedDistribution"];
    assert_eq!(
        (
            resolved["serverLine"].as_str(),
            resolved["serverVersion"].as_str(),
            resolved["serverLineSource"].as_str(),
            resolved["configSource"].as_str(),
        ),
        (
            Some("ogx"),
            Some("1.3.0"),
            Some("label com.ogx.distribution.version"),
            Some("oci-label"),
        ),
        "{name}: {resolved}"
    );
    assert_eq!(
        served_version(&service_address(env, ns, name)?)?,
        "1.3.0",
        "{name}"
    );
    // The image's entrypoint starts the server (OGX has no `llama` command), told where the
    // config is and on which port.
    let deployment = env.json(&["get", "deployment", name, "-n", ns])?;
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert!(container["command"].is_null(), "{name}: {container}");
    let env_names: Vec<&str> = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str())
        .collect();
    for wanted in ["RUN_CONFIG_PATH", "OGX_CONFIG", "OGX_PORT"] {
        assert!(
            env_names.contains(&wanted),
            "{name}: {wanted} in {env_names:?}"
        );
    }
    Ok(())
}

/// On OGX 1.3.0, as real users name it: `distribution: {name: starter}` (which image-overrides
/// maps to the mirror) and a v1alpha1 resource naming the image by digest both run the config
/// the image's `com.ogx.config.config.yaml` label carries, and a v1alpha2 stack with providers
/// runs the config the operator generated for OGX from it.
fn ogx_stacks_run_named_direct_and_generated(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-ogx";
    env.namespace(ns, registry_host(&env.images.ogx))?;
    let requests = json!({"requests": {"cpu": "100m", "memory": "256Mi"}});
    env.create_v1alpha2(
        ns,
        "named",
        json!({"distribution": {"name": "starter"}, "workload": {"resources": requests}}),
    )?;
    let upstream = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
        "metadata": {"name": "upstream", "namespace": ns},
        "spec": {"server": {"distribution": {"image": env.images.ogx},
            "containerSpec": {"port": 8321, "resources": requests}}}});
    env.kubectl(&["create", "-f", "-"], Some(&upstream.to_string()))?;
    env.create_v1alpha2(ns, "generated", ogx_slim_spec(&env.images.ogx, "vllm-e2e"))?;
    for (name, providers) in [
        ("named", [BAKED_PROVIDER]),
        ("upstream", [BAKED_PROVIDER]),
        ("generated", ["vllm-e2e"]),
    ] {
        let llsd = env.wait_ready(ns, name)?;
        runs_ogx(env, ns, name, &llsd)?;
        // Through the Service; a connection the node's network refuses for a moment (a Pod IP
        // reused while other tests roll Pods) is asked again rather than taken for the answer.
        let address = service_address(env, ns, name)?;
        let mut inference: Vec<String> = Vec::new();
        eventually("the server's providers through its Service", || {
            Ok(match inference_provider_ids(&address) {
                Ok(ids) => {
                    inference = ids;
                    true
                }
                Err(_) => false,
            })
        })?;
        assert_eq!(inference, providers, "{name}: the config it runs");
    }
    let named = env.json(&["get", "llsd", "named", "-n", ns])?;
    let image = named["status"]["resolvedDistribution"]["image"]
        .as_str()
        .unwrap_or_default();
    assert!(
        image.contains("/mirror/ogxai/distribution-starter@sha256:"),
        "the name resolved through image-overrides to the mirror, pinned: {image}"
    );
    a_rejected_ogx_config_crash_loops_behind_the_ready_pod(env, ns)
}

/// Waits until the `kind` object `ns/name` is in phase Ready; on time-out, says what the
/// cluster shows.
fn wait_phase_ready(env: &Env, kind: &str, ns: &str, name: &str) -> Result<Value, Failed> {
    let deadline = Instant::now() + READY;
    loop {
        let object = env.json(&["get", kind, name, "-n", ns])?;
        if object["status"]["phase"] == "Ready" {
            return Ok(object);
        }
        if Instant::now() > deadline {
            let pods = env
                .kubectl(&["get", "pods", "-n", ns, "-o", "wide"], None)
                .unwrap_or_default();
            return Err(format!(
                "{kind} {ns}/{name} not Ready after {READY:?}; status: {}\nPods:\n{pods}",
                object["status"]
            )
            .into());
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// An `OGXServer` as the OGX operator's users write it runs the OGX 1.3.0 image with the names
/// they rely on; then a running LlamaStackDistribution moves to the OGXServer `convert` writes
/// for it, in place, while its Service answers every request.
fn an_ogx_server_runs_and_a_stack_moves_to_one_in_place(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-ogx-server";
    env.namespace(ns, registry_host(&env.images.ogx))?;
    let requests = json!({"requests": {"cpu": "100m", "memory": "256Mi"}});
    // The OGX operator's sample `ogxserver-monitoring-defaults`
    // (tests/fixtures/ogx-operator/example-with-monitoring.yaml), without its Ollama variables
    // (nothing answers at that address here) and with small requests (one node).
    let sample = std::fs::read_to_string(
        support::workspace_root().join("tests/fixtures/ogx-operator/example-with-monitoring.yaml"),
    )?;
    let mut server: Value = serde_saphyr::from_multiple::<Value>(&sample)?.remove(0);
    let name = server["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    server["metadata"]["namespace"] = json!(ns);
    server["spec"]["workload"] = json!({"resources": requests});
    env.kubectl(&["create", "-f", "-"], Some(&server.to_string()))?;
    let ready = wait_phase_ready(env, "ogxserver", ns, &name)?;
    let image = ready["status"]["resolvedDistribution"]["image"]
        .as_str()
        .unwrap_or_default();
    assert!(
        image.contains("/mirror/ogxai/distribution-starter@sha256:"),
        "pinned through the mirror: {image}"
    );
    let deployment = env.json(&["get", "deployment", &name, "-n", ns])?;
    let template = &deployment["spec"]["template"];
    assert_eq!(template["metadata"]["labels"]["app"], "ogx");
    assert_eq!(
        deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "ogx-operator"
    );
    let container = &template["spec"]["containers"][0];
    assert_eq!(container["name"], "ogx");
    let env_vars = container["env"].as_array().cloned().unwrap_or_default();
    for (var, value) in [
        ("OGX_METRICS_PORT", "9464"),
        ("OGX_METRICS_ENDPOINT_ENABLED", "1"),
        ("OGX_CONFIG", "/etc/ogx/config.yaml"),
    ] {
        assert!(
            env_vars
                .iter()
                .any(|e| e["name"] == var && e["value"] == value),
            "{var}={value}: {env_vars:?}"
        );
    }
    let address = service_address(env, ns, &name)?;
    assert_eq!(served_version(&address)?, "1.3.0");
    eventually("the server's version in the OGXServer's status", || {
        let status = env.json(&["get", "ogxserver", &name, "-n", ns])?;
        Ok(status["status"]["version"]["serverVersion"] == "1.3.0")
    })?;

    // A LlamaStackDistribution on the same image, serving...
    env.create_v1alpha2(
        ns,
        "moving",
        json!({"distribution": {"name": "starter"}, "workload": {"resources": requests}}),
    )?;
    let llsd = env.wait_ready(ns, "moving")?;
    let address = service_address(env, ns, "moving")?;
    let prober = Prober::start(address.clone());
    let started = Instant::now();
    // ...moves: `convert --to ogx.io/v1beta1` on the stored object, applied as it is printed.
    let stored = env.work.path().join("moving.yaml");
    std::fs::write(&stored, serde_json::to_string(&llsd)?)?;
    let converted = std::process::Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .args([
            "convert",
            "-f",
            &stored.to_string_lossy(),
            "--to",
            "ogx.io/v1beta1",
        ])
        .output()?;
    if !converted.status.success() {
        return Err(String::from_utf8_lossy(&converted.stderr)
            .into_owned()
            .into());
    }
    let mut manifest: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&converted.stdout))?;
    // What the API server set on the old object is not the user's to copy.
    manifest["metadata"] = json!({"name": "moving", "namespace": ns});
    env.kubectl(
        &["apply", "--server-side", "-f", "-"],
        Some(&manifest.to_string()),
    )?;
    eventually("the LlamaStackDistribution standing down", || {
        let llsd = env.json(&["get", "llsd", "moving", "-n", ns])?;
        Ok(llsd["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["reason"] == "MovedToOGXServer")))
    })?;
    wait_phase_ready(env, "ogxserver", ns, "moving")?;
    eventually("every Pod of the stack running the container ogx", || {
        let items = env.stack_pods(ns, "moving")?;
        Ok(!items.is_empty()
            && items.iter().all(|p| {
                p["spec"]["containers"][0]["name"] == "ogx"
                    && p["metadata"]["deletionTimestamp"].is_null()
            }))
    })?;
    let (ok, failed, errors) = prober.finish();
    eprintln!(
        "request log across the move ({:?}): {ok} requests to {address}/v1/health answered, {failed} failed {errors:?}",
        started.elapsed()
    );
    assert_eq!(
        failed, 0,
        "the Service answered across the move: {errors:?}"
    );
    assert!(ok > 0);
    assert_eq!(
        service_address(env, ns, "moving")?,
        address,
        "the same Service address"
    );
    let moved = env.json(&["get", "deployment", "moving", "-n", ns])?;
    // The OGXServer controls it; the LLSD stays a plain owner until it is deleted (the undo).
    let controller = moved["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["controller"] == true)
        .map(|o| o["kind"].clone());
    assert_eq!(
        controller,
        Some(json!("OGXServer")),
        "{}",
        moved["metadata"]
    );
    // The old resource goes; nothing goes with it.
    env.kubectl(&["delete", "llsd", "moving", "-n", ns, "--wait=true"], None)?;
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        served_version(&address)?,
        "1.3.0",
        "still serving after the LLSD is gone"
    );
    Ok(())
}

/// OGX 1.3.0 refusing its config at start-up (it exits 0 when start-up fails) is a crash loop
/// all the same: kubelet restarts it, and the Ready revision keeps serving behind the Service.
fn a_rejected_ogx_config_crash_loops_behind_the_ready_pod(
    env: &Env,
    ns: &str,
) -> Result<(), Failed> {
    env.create_rejected_config(ns, "broken")?;
    env.patch_llsd(
        ns,
        "generated",
        &json!({"spec": {"providers": null, "disabled": null,
            "overrideConfig": {"configMapName": "broken"}}}),
    )?;
    let seen = wait_for_reason(
        env,
        ns,
        "generated",
        "DeploymentReady",
        "ServerCrashLooping",
    )?;
    assert_eq!(seen["phase"], "Failed", "{seen}");
    assert_eq!(
        condition(&seen, "Available")["status"],
        "True",
        "the Ready Pod still serves: {seen}"
    );
    let address = service_address(env, ns, "generated")?;
    assert_eq!(
        inference_provider_ids(&address)?,
        ["vllm-e2e"],
        "the Service still reaches the Ready revision"
    );
    assert_eq!(served_version(&address)?, "1.3.0");
    Ok(())
}

/// An image the operator resolves but the node cannot pull: the status names the pull failure
/// and the phase fails.
fn an_image_the_node_cannot_pull_is_named_in_the_status(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-pull";
    env.namespace(ns, registry_host(&env.images.untrusted))?;
    env.create_stack(ns, "unpullable", &env.images.untrusted)?;
    let status = wait_for_reason(env, ns, "unpullable", "DeploymentReady", "ImagePullFailed")?;
    assert_eq!(status["phase"], "Failed", "{status}");
    let message = condition(&status, "DeploymentReady")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let pinned = status["resolvedDistribution"]["image"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains(pinned) && message.contains("pull secret"),
        "names the image and the fix: {message}"
    );
    Ok(())
}

/// A CA and a serving certificate for the Service names of `service` in `ns`; returns (CA PEM,
/// certificate PEM, key PEM).
fn serving_certificate(service: &str, ns: &str) -> Result<(String, String, String), Failed> {
    let ca = TestCa::new("llso-e2e-serving-ca")?;
    let names = [
        service.to_owned(),
        format!("{service}.{ns}.svc"),
        format!("{service}.{ns}.svc.cluster.local"),
    ];
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let server = ca.server(&names, &[], None)?;
    Ok((ca.pem, server.cert, server.key))
}

/// `GET url` over HTTPS, trusting only `ca_pem`, with the URL's host name resolved to `address`
/// (the Service's `clusterIP:port`): the certificate is verified for the Service's name.
fn verified_get(
    url: &str,
    host: &str,
    address: &str,
    ca_pem: &str,
) -> Result<(u16, String), Failed> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes())?;
    let client = reqwest::Client::builder()
        .tls_certs_only(certs)
        .resolve(host, address.parse()?)
        .timeout(Duration::from_secs(10))
        .build()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // A server that just became Ready on a loaded two-core node may take a while for its first
    // TLS handshakes: retry for a minute, then say every cause of the last failure.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let attempt = rt.block_on(async {
            let response = client.get(url).send().await?;
            let code = response.status().as_u16();
            Ok::<_, reqwest::Error>((code, response.text().await?))
        });
        match attempt {
            Ok(answer) => return Ok(answer),
            Err(e) if Instant::now() > deadline => {
                let mut causes = vec![e.to_string()];
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    causes.push(cause.to_string());
                    source = cause.source();
                }
                return Err(format!("GET {url}: {}", causes.join(": ")).into());
            }
            Err(_) => std::thread::sleep(Duration::from_secs(2)),
        }
    }
}

/// `networking.tls`: the server serves HTTPS with the Secret's certificate, kubelet's probes
/// pass on HTTPS, a client that trusts only the CA verifies the server through the Service by
/// its name, plain HTTP is refused, and the operator reads the server over HTTPS.
fn tls_serving_through_the_service(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-tls";
    env.namespace(ns, registry_host(&env.images.base64))?;
    let (ca, cert, key) = serving_certificate("tls-service", ns)?;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "tls-serving", "namespace": ns},
        "stringData": {"tls.crt": cert, "tls.key": key, "ca.crt": ca}});
    env.kubectl(&["create", "-f", "-"], Some(&secret.to_string()))?;
    let mut spec = slim_spec(&env.images.base64, "vllm-e2e");
    spec["networking"] = json!({"tls": {"enabled": true, "secretName": "tls-serving"}});
    env.create_v1alpha2(ns, "tls", spec)?;
    env.wait_ready(ns, "tls")?;

    let address = service_address(env, ns, "tls")?;
    let port = address.rsplit(':').next().unwrap_or_default();
    let host = format!("tls-service.{ns}.svc");
    let (code, body) = verified_get(
        &format!("https://{host}:{port}/v1/version"),
        &host,
        &address,
        &ca,
    )?;
    assert_eq!(code, 200, "verified HTTPS through the Service: {body}");
    assert_eq!(serde_json::from_str::<Value>(&body)?["version"], "0.7.3");
    assert!(
        !matches!(
            http_get(&format!("http://{address}/v1/version")),
            Ok((200, _))
        ),
        "plain HTTP must not be served"
    );
    the_status_tells_what_the_server_says(env, ns, "tls")
}

/// The init containers of stack `name`'s Pod, in order, checked: each exited 0, and
/// `expected` (name, image by digest) ran the image it names, as kubelet pulled it.
fn init_containers_ran(
    env: &Env,
    ns: &str,
    name: &str,
    expected: &[(&str, Option<&str>)],
) -> Result<(), Failed> {
    let selector = format!("app.kubernetes.io/instance={name}");
    let pods = env.json(&["get", "pods", "-n", ns, "-l", &selector])?;
    let pod = &pods["items"][0];
    let statuses = pod["status"]["initContainerStatuses"]
        .as_array()
        .ok_or_else(|| format!("no init containers in {}", pod["status"]))?;
    let names: Vec<&str> = statuses.iter().filter_map(|c| c["name"].as_str()).collect();
    let wanted: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, wanted, "init containers in CRD order");
    for ((step, image), status) in expected.iter().zip(statuses) {
        let done = &status["state"]["terminated"];
        assert_eq!(done["exitCode"], 0, "{step}: {status}");
        let Some(image) = image else { continue };
        let digest = image.rsplit_once('@').ok_or("not pinned")?.1;
        assert!(
            status["imageID"]
                .as_str()
                .unwrap_or_default()
                .ends_with(digest),
            "{step}: kubelet ran {} (wanted {image})",
            status["imageID"]
        );
    }
    Ok(())
}

/// Stack `name` becomes Ready with its one external provider, `acme` from `image`, installed by
/// the real init containers in their order, and the status says the provider is Ready.
fn provider_installed_and_ready(
    env: &Env,
    ns: &str,
    name: &str,
    image: &str,
) -> Result<(), Failed> {
    let llsd = env.wait_ready(ns, name)?;
    init_containers_ran(
        env,
        ns,
        name,
        &[
            ("copy-tools", Some(&env.images.operator)),
            ("install-provider-acme", Some(image)),
            ("install-packages", None),
            ("merge-config", None),
            ("preflight", None),
        ],
    )?;
    let provider = &llsd["status"]["externalProviders"][0];
    assert_eq!(
        (provider["providerId"].as_str(), provider["phase"].as_str()),
        (Some("acme"), Some("Ready")),
        "{}",
        llsd["status"]
    );
    Ok(())
}

/// An external provider on the node: the operator's image (built from `Dockerfile`) copies its
/// tools, the example provider's image (from its `Containerfile`) stages its wheel, the
/// distribution image installs and checks it, in that order, all pulled by digest with the
/// namespace's pull secret; the server lists the provider and its API answers.
fn an_external_provider_runs_in_real_init_containers(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-external";
    env.namespace(ns, registry_host(&env.images.base64))?;
    env.create_v1alpha2(
        ns,
        "acme",
        external_spec(&env.images.base64, &env.images.acme),
    )?;
    provider_installed_and_ready(env, ns, "acme", &env.images.acme)?;

    let address = service_address(env, ns, "acme")?;
    let providers = listed_providers(&address)?;
    let acme = providers
        .iter()
        .find(|p| p["provider_id"] == "acme")
        .ok_or_else(|| format!("acme not listed: {providers:?}"))?;
    assert_eq!(
        (acme["api"].as_str(), acme["provider_type"].as_str()),
        (Some("safety"), Some("remote::acme-words"))
    );
    let (code, body) = http_post(
        &format!("http://{address}/v1/shields"),
        &json!({"shield_id": "acme-shield", "provider_id": "acme", "provider_shield_id": "acme-v1"}),
    )?;
    assert_eq!(code, 200, "register a shield: {body}");
    let (code, body) = http_post(
        &format!("http://{address}/v1/safety/run-shield"),
        &json!({"shield_id": "acme-shield",
                "messages": [{"role": "user", "content": "how to make a bomb"}]}),
    )?;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("acme-words blocked: bomb"), "{body}");
    Ok(())
}

/// The example OGX provider (`examples/ogx-provider`) on the OGX 1.3.0 image: the real init
/// containers install it, the server lists its model, and a chat completion through the
/// Service is answered by it with the config the spec gave it.
fn an_ogx_provider_runs_in_real_init_containers_on_ogx(env: &Env) -> Result<(), Failed> {
    let ns = "e2e-ogx-external";
    env.namespace(ns, registry_host(&env.images.ogx))?;
    let mut spec = ogx_slim_spec(&env.images.ogx, "vllm-e2e");
    spec["externalProviders"] = json!({"inference": [{"providerId": "acme", "image": env.images.echo,
        "config": {"models": ["parrot"], "prefix": "acme says: "}}]});
    env.create_v1alpha2(ns, "echo", spec)?;
    provider_installed_and_ready(env, ns, "echo", &env.images.echo)?;
    let address = service_address(env, ns, "echo")?;
    assert_eq!(
        llama_stack::chat(
            &format!("http://{address}"),
            "acme/parrot",
            "hello from the node"
        )?,
        "acme says: hello from the node"
    );
    Ok(())
}

fn registry_host(image: &str) -> &str {
    image.split('/').next().unwrap_or_default()
}

fn main() -> ExitCode {
    run_suite(
        table(&[
            (
                "labelled_private_image_serves_through_its_service",
                labelled_private_image_serves_through_its_service,
            ),
            ("config_in_a_layer_serves_too", config_in_a_layer_serves_too),
            (
                "changes_roll_once_and_a_rejected_config_never_takes_the_stack_down",
                changes_roll_once_and_a_rejected_config_never_takes_the_stack_down,
            ),
            (
                "a_v1alpha1_resource_runs_through_the_conversion_webhook",
                a_v1alpha1_resource_runs_through_the_conversion_webhook,
            ),
            (
                "unlabelled_image_and_run_yaml_config_map_serve_as_upstream_ran_them",
                unlabelled_image_and_run_yaml_config_map_serve_as_upstream_ran_them,
            ),
            (
                "an_image_the_node_cannot_pull_is_named_in_the_status",
                an_image_the_node_cannot_pull_is_named_in_the_status,
            ),
            (
                "a_rejected_config_on_storage_rolls_back_then_forward_and_never_means_never",
                rollback::a_rejected_config_on_storage_rolls_back_then_forward_and_never_means_never,
            ),
            (
                "tls_serving_through_the_service",
                tls_serving_through_the_service,
            ),
            (
                "an_external_provider_runs_in_real_init_containers",
                an_external_provider_runs_in_real_init_containers,
            ),
            (
                "an_ogx_provider_runs_in_real_init_containers_on_ogx",
                an_ogx_provider_runs_in_real_init_containers_on_ogx,
            ),
            (
                "ogx_stacks_run_named_direct_and_generated",
                ogx_stacks_run_named_direct_and_generated,
            ),
            (
                "an_ogx_server_runs_and_a_stack_moves_to_one_in_place",
                an_ogx_server_runs_and_a_stack_moves_to_one_in_place,
            ),
            (
                "an_ogx_server_adopts_the_volume_and_service_of_a_stack_of_another_name",
                adoption::an_ogx_server_adopts_the_volume_and_service_of_a_stack_of_another_name,
            ),
            (
                "a_stack_gains_storage_then_moves_in_place_by_the_guide_and_keeps_its_volume",
                adoption::a_stack_gains_storage_then_moves_in_place_by_the_guide_and_keeps_its_volume,
            ),
            (
                "storage_added_to_a_running_ogx_server_is_mounted_and_a_refused_write_is_not_ready",
                storage::storage_added_to_a_running_ogx_server_is_mounted_and_a_refused_write_is_not_ready,
            ),
            (
                "a_praxis_migration_job_moves_real_data_between_two_real_postgres_servers",
                praxis::a_praxis_migration_job_moves_real_data_between_two_real_postgres_servers,
            ),
        ]),
        "the real node",
        prepare,
        Some((
            "an_operator_restarted_mid_crash_loop_still_rolls_back",
            rollback::an_operator_restarted_mid_crash_loop_still_rolls_back,
        )),
    )
}
