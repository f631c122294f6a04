//! `scripts/demo.sh`: the operator's main job on the embedded defaults, on a local cluster.
//!
//! 1. Starts a cluster on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
//!    and kwok (the kubelet of a fake node: Pods get scheduled and become Ready, no containers run).
//! 2. Installs the operator from `deploy/`: the CRD, its Namespace, ServiceAccount and RBAC. The
//!    manager Deployment needs a container runtime, so the same binary runs here as a local process
//!    with a token of that ServiceAccount: it has exactly the rights `deploy/` grants.
//! 3. Applies the v1alpha2 samples of `deploy/samples/` (and demo Secrets they reference), and
//!    shows `kubectl get llsd`, the objects the operator made, a generated config, an invalid
//!    object refused with its fixes, and the operator's metrics.
//! 4. Where the machine can run one (root, containerd, runc; `scripts/install-test-deps.sh`), a
//!    second cluster with a real node (`demo/real_node.rs`): a distribution image built offline,
//!    a stack from it Ready on kubelet, and the real server answering `/v1/version` through the
//!    Service the operator made. Otherwise one line says why the demo stops at kwok.
//!
//! `--keep` leaves everything running until Ctrl-C and prints a KUBECONFIG to use;
//! `--kwok-only` skips the real node.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

mod real_node;
use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use support::control_plane::{ControlPlane, Error};
use support::operator::{apply_crd, install_operator_rbac, kubectl, spawn_operator};

fn show(plane: &ControlPlane, title: &str, args: &[&str]) -> Result<(), Error> {
    println!("==> {title}");
    let out = kubectl(plane, args, None)?;
    for line in out.lines() {
        println!("    {line}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let keep = std::env::args().any(|a| a == "--keep");
    let real_node = !std::env::args().any(|a| a == "--kwok-only");
    match demo(keep, real_node) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The operator binary built next to this example (`target/<profile>/llama-stack-operator`).
fn operator_binary() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("llama-stack-operator"))
        .ok_or("cannot locate the target directory")?;
    if !bin.is_file() {
        return Err(format!(
            "{} is missing: run `cargo build --bin llama-stack-operator` (scripts/demo.sh does)",
            bin.display()
        )
        .into());
    }
    Ok(bin)
}

/// Demo values for what the samples reference (in a real cluster these hold real credentials).
fn prerequisites(plane: &ControlPlane) -> Result<(), Error> {
    let ca = {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.self_signed(&key)?.pem()
    };
    let starter = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/starter/config.yaml"),
    )?;
    let mut objects = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "corporate-ca"}, "data": {"ca-bundle.crt": ca}}),
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "my-llama-stack-config"}, "data": {"config.yaml": starter}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": "llama-stack-tls"},
            "stringData": {"tls.crt": "demo", "tls.key": "demo"}}),
    ];
    for (name, key, value) in [
        ("vllm-credentials", "token", "demo-token"),
        ("openai-credentials", "api-key", "demo-key"),
        ("brave-credentials", "api-key", "demo-key"),
        ("pgvector-credentials", "host", "pgvector.demo.svc"),
        (
            "postgres-credentials",
            "url",
            "postgres://llama:demo@postgres.demo.svc:5432/llamastack",
        ),
    ] {
        objects.push(serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {key: value}}));
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    kubectl(
        plane,
        &["apply", "-n", "demo", "-f", "-"],
        Some(&list.to_string()),
    )?;
    Ok(())
}

fn demo(keep: bool, real_node: bool) -> Result<(), Error> {
    let bin = operator_binary()?;
    println!(
        "==> starting a cluster on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok"
    );
    let plane = ControlPlane::start_cluster()?;
    println!(
        "    API server ready at {} in {:.1?}",
        plane.url, plane.start_time
    );
    let root = env!("CARGO_MANIFEST_DIR");
    println!(
        "==> installing the operator from deploy/: crds/, then deploy/base's Namespace, ServiceAccount and RBAC"
    );
    apply_crd(&plane)?;
    let kubeconfig = install_operator_rbac(&plane)?;
    println!(
        "==> running `llama-stack-operator run --leader-elect` as system:serviceaccount:llama-stack-operator-system:llama-stack-operator"
    );
    println!(
        "    (no registry is reachable here: distribution names resolve to their embedded configs)"
    );
    println!(
        "    (it runs without OPERATOR_IMAGE: the ext-* samples' external providers are installed by the operator's image in the Pod, which needs a container runtime; their status says so)"
    );
    let operator = spawn_operator(&plane, &bin, "demo", &kubeconfig, &["--leader-elect"])?;

    kubectl(&plane, &["create", "namespace", "demo"], None)?;
    prerequisites(&plane)?;
    let samples = Path::new(root).join("deploy/samples");
    let mut names: Vec<_> = std::fs::read_dir(&samples)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("v1alpha2_"))
        })
        .collect();
    names.sort();
    println!(
        "==> applying {} v1alpha2 samples from deploy/samples (server-side apply, strict field validation)",
        names.len()
    );
    println!(
        "    (the v1alpha1 samples go through the conversion webhook, which the operator's Deployment serves in a cluster)"
    );
    for path in &names {
        kubectl(
            &plane,
            &[
                "apply",
                "--server-side",
                "-n",
                "demo",
                "-f",
                &path.display().to_string(),
            ],
            None,
        )?;
    }
    println!("==> waiting for the stacks to settle (up to 60 s)");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let phases = kubectl(
            &plane,
            &[
                "get",
                "llsd",
                "-n",
                "demo",
                "-o",
                "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}",
            ],
            None,
        )?;
        let ready = phases.lines().filter(|p| *p == "Ready").count();
        // us8 waits for a PersistentVolume (no provisioner here); ext-us1/2 need issue 7.
        if ready + 3 >= names.len() {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    println!("    settled after {:.1?}", started.elapsed());
    show(
        &plane,
        "kubectl get llsd -n demo",
        &["get", "llsd", "-n", "demo"],
    )?;
    show(
        &plane,
        "what the operator made (kubectl get deploy,svc,sa,cm,pvc,hpa,pdb,netpol,ingress -l app.kubernetes.io/managed-by=llama-stack-operator)",
        &[
            "get",
            "deploy,svc,sa,cm,pvc,hpa,pdb,netpol,ingress",
            "-n",
            "demo",
            "-l",
            "app.kubernetes.io/managed-by=llama-stack-operator",
        ],
    )?;
    show(
        &plane,
        "why the others are not Ready (their conditions)",
        &[
            "get",
            "llsd",
            "-n",
            "demo",
            "-o",
            "jsonpath={range .items[?(@.status.phase!=\"Ready\")]}{.metadata.name}:{\"\\n\"}{range .status.conditions[?(@.status==\"False\")]}  {.type} {.reason}: {.message}{\"\\n\"}{end}{end}",
        ],
    )?;
    let cm = kubectl(
        &plane,
        &[
            "get",
            "llsd",
            "us3-resources",
            "-n",
            "demo",
            "-o",
            "jsonpath={.status.configGeneration.configMapName}",
        ],
        None,
    )?;
    if !cm.is_empty() {
        println!("==> the config generated for us3-resources ({cm}), first 30 lines:");
        let config = kubectl(
            &plane,
            &[
                "get",
                "configmap",
                &cm,
                "-n",
                "demo",
                "-o",
                "jsonpath={.data.config\\.yaml}",
            ],
            None,
        )?;
        for line in config.lines().take(30) {
            println!("    {line}");
        }
    }
    println!("==> an invalid object is refused by the API server with the field and the fix");
    let bad = "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: broken}\nspec:\n  distribution: {name: starter}\n  overrideConfig: {configMapName: cm}\n  providers: {inference: {provider: vllm}}\n  storage: {kv: {type: redis}}\n";
    match kubectl(
        &plane,
        &["apply", "--server-side", "-n", "demo", "-f", "-"],
        Some(bad),
    ) {
        Ok(_) => println!("    (unexpectedly accepted)"),
        Err(e) => {
            for line in e.to_string().lines() {
                println!("    {line}");
            }
        }
    }
    println!(
        "==> the operator's metrics ({}/metrics), reconciles:",
        operator.metrics
    );
    let out = Command::new("curl")
        .args(["-s", &format!("{}/metrics", operator.metrics)])
        .output();
    match out {
        Ok(out) => {
            for line in String::from_utf8_lossy(&out.stdout).lines().filter(|l| {
                l.starts_with("llso_reconciles_total") || l.starts_with("llso_rollouts_total")
            }) {
                println!("    {line}");
            }
        }
        Err(_) => println!("    (curl is not installed)"),
    }
    let node_demo = if !real_node {
        println!("==> the real node is skipped (--kwok-only)");
        None
    } else if let Some(why) = real_node::unavailable() {
        println!("==> no real node on this machine, so the demo stops at kwok: {why}");
        None
    } else {
        real_node::run(&bin)?
    };
    if keep {
        if let Some(node) = &node_demo {
            println!(
                "==> the real node's cluster: export KUBECONFIG={}",
                node.plane.kubeconfig.display()
            );
        }
        println!(
            "==> left running in this process's own network namespace (nothing reaches the real network); in another shell, as root:\n    export KUBECONFIG={}\n    nsenter --net=/proc/{}/ns/net {}/kubectl get llsd -A\n    operator log: {}\n    Ctrl-C here stops everything.",
            plane.kubeconfig.display(),
            std::process::id(),
            support::control_plane::control_plane_bin()?.display(),
            plane.dir().join("operator-demo.log").display()
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(tokio::signal::ctrl_c())?;
    }
    println!("==> stopping the operators, the clusters and the node");
    drop(node_demo);
    drop(operator);
    drop(plane);
    Ok(())
}
