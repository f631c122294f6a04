//! The demo's second part: a real OGX server (the line llama-stack became) on a real node.
//! kubelet, containerd, runc, the CNI bridge and kube-proxy run in this process's sealed network
//! namespace; the distribution image (Debian trixie with OGX 1.3.0, built offline and cached,
//! labelled `com.ogx.*` as OGX's build labels real images) is pulled by digest from a local
//! registry with a private CA and a pull secret, as in a cluster.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::control_plane::{ControlPlane, Error, start_controllers_with_crd};
use crate::support::llama_stack::http_get;
use crate::support::node::{RealNode, TrustedRegistry, which};
use crate::support::node_stack::{
    ogx_distribution_image, ogx_slim_spec, pull_secret_namespace, push_pinned,
};
use crate::support::operator::{OperatorProcess, install_operator_rbac, kubectl, spawn_operator};
use crate::support::registries::Registries;

/// How long a first image pull and a Python server start may take on two cores.
const READY: Duration = Duration::from_secs(300);

/// Everything the part started; dropping it stops the node, the operator, the cluster and the
/// registries.
pub struct RealNodeDemo {
    pub plane: ControlPlane,
    _operator: OperatorProcess,
    _node: RealNode,
    _registries: Registries,
    _work: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
}

/// Why this machine cannot run a real node, if it cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not running as root (containerd and kubelet need root)".to_owned());
    }
    let tools = [
        "containerd",
        "runc",
        "ctr",
        "iptables",
        "ip",
        "mmdebstrap",
        "umoci",
        "skopeo",
        "docker-registry",
        "htpasswd",
    ];
    tools
        .iter()
        .find_map(|tool| which(tool).err().map(|e| e.to_string()))
}

/// Runs the part: Ok(None) when the node could not start on this machine (the reason printed),
/// an error when something of ours failed.
pub fn run(bin: &Path) -> Result<Option<RealNodeDemo>, Error> {
    let started = Instant::now();
    let work = tempfile::Builder::new()
        .prefix("llso-demo-node-")
        .tempdir()?;
    println!(
        "==> building the distribution image: Debian trixie + OGX 1.3.0, offline from Debian's archive and PyPI (cached after the first run)"
    );
    let (layout, _) = ogx_distribution_image(work.path())?;
    let registries = Registries::start()?;
    let image = push_pinned(&layout, "ogx-distribution", &registries)?;
    println!(
        "    pushed {image} (htpasswd auth, private CA), labelled com.ogx.* with its base config"
    );
    println!(
        "==> a second cluster with a real node: kubelet, containerd, runc, CNI bridge, kube-proxy"
    );
    let (plane, runtime, _client) = start_controllers_with_crd()?;
    let ca_file = registries.dir.path().join("ca.pem");
    let trusted = TrustedRegistry {
        host: registries.basic.host.clone(),
        ca_file: ca_file.clone(),
    };
    let node = match RealNode::start(&plane, &[trusted]) {
        Ok(node) => node,
        Err(e) => {
            println!(
                "    the real node did not start on this machine, so the kwok part above is the demo: {e}"
            );
            return Ok(None);
        }
    };
    let kubeconfig = install_operator_rbac(&plane)?;
    let ca_flag = format!("--registry-ca-file={}", ca_file.display());
    let operator = spawn_operator(&plane, bin, "demo-node", &kubeconfig, &[&ca_flag])?;
    pull_secret_namespace(&plane, "demo", &registries.basic.host)?;
    let cr = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "hello", "namespace": "demo"}, "spec": ogx_slim_spec(&image, "vllm")});
    println!("==> creating demo/hello: vLLM inference only, from that image");
    kubectl(&plane, &["create", "-f", "-"], Some(&cr.to_string()))?;
    wait_ready(&plane)?;
    show_server(&plane)?;
    println!("    real-node part took {:.1?}", started.elapsed());
    Ok(Some(RealNodeDemo {
        plane,
        _operator: operator,
        _node: node,
        _registries: registries,
        _work: work,
        _runtime: runtime,
    }))
}

/// `kubectl get <kind> <name> -n demo -o <output>`.
fn get(plane: &ControlPlane, kind: &str, name: &str, output: &str) -> Result<String, Error> {
    kubectl(
        plane,
        &["get", kind, name, "-n", "demo", "-o", output],
        None,
    )
}

fn wait_ready(plane: &ControlPlane) -> Result<(), Error> {
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < READY {
        let phase = get(plane, "llsd", "hello", "jsonpath={.status.phase}")?;
        if phase != last {
            println!(
                "    {:>5.1}s phase {phase}",
                started.elapsed().as_secs_f64()
            );
            last = phase;
        }
        if last == "Ready" {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let status = get(plane, "llsd", "hello", "yaml")?;
    Err(format!("demo/hello not Ready after {READY:?}:\n{status}").into())
}

/// The stack, its Pod on the node, and the server answering through the operator's Service.
fn show_server(plane: &ControlPlane) -> Result<(), Error> {
    crate::show(
        plane,
        "kubectl get llsd,pods -n demo -o wide",
        &["get", "llsd,pods", "-n", "demo", "-o", "wide"],
    )?;
    let service = get(
        plane,
        "service",
        "hello-service",
        "jsonpath={.spec.clusterIP}:{.spec.ports[0].port}",
    )?;
    let (code, body) = http_get(&format!("http://{service}/v1/version"))?;
    println!(
        "==> GET http://{service}/v1/version through the Service the operator made: {code} {body}"
    );
    if code != 200 {
        return Err(format!("the server answered {code}: {body}").into());
    }
    let line = get(
        plane,
        "llsd",
        "hello",
        "jsonpath={.status.resolvedDistribution.serverLine} {.status.resolvedDistribution.serverVersion} (told by the {.status.resolvedDistribution.serverLineSource})",
    )?;
    println!("    the server line the operator read from the image: {line}");
    // The operator reads the server once its revision is Ready; give that read a moment.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let version = get(
            plane,
            "llsd",
            "hello",
            "jsonpath={.status.version.llamaStackServerVersion}",
        )?;
        if !version.is_empty() || Instant::now() > deadline {
            println!(
                "    status.version.llamaStackServerVersion (what the operator read): {version:?}"
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
