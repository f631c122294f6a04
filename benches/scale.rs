//! Scale benchmark (`cargo bench --bench scale`): the operator binary as a separate process on
//! the test cluster (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok) with
//! 100 and then 1000 LlamaStackDistributions. Reports the time until every one is Ready, the
//! operator's API writes during a full resync of an unchanged cluster (goal: 0, counted in the API
//! server's audit log), the reconciles that resync made, and the operator's resident memory.
//! Without `--bench` (under `cargo test --all-targets`) it runs 3 objects as a smoke test.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use llama_stack_operator::api::common::DistributionPhase;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use serde_json::json;
use support::control_plane::{ControlPlane, OPERATOR_USER, start_cluster_with_crd};
use support::operator::spawn_operator;

const OPERATOR_NAMESPACE: &str = "llama-stack-operator-system";

fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

async fn metric(url: &str, name: &str) -> f64 {
    let Ok(response) = reqwest::get(format!("{url}/metrics")).await else {
        return 0.0;
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn ready_count(client: &kube::Client, ns: &str) -> usize {
    let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), ns);
    llsds
        .list(&ListParams::default())
        .await
        .map(|l| {
            l.items
                .iter()
                .filter(|cr| {
                    cr.status.as_ref().is_some_and(|s| {
                        s.phase == Some(DistributionPhase::Ready)
                            && s.observed_generation == cr.metadata.generation
                    })
                })
                .count()
        })
        .unwrap_or(0)
}

fn writes(plane: &ControlPlane, ns: &str) -> usize {
    plane
        .audit_writes(OPERATOR_USER)
        .expect("audit log")
        .iter()
        .filter(|w| w["objectRef"]["namespace"] == ns)
        .count()
}

fn scale(
    plane: &ControlPlane,
    rt: &tokio::runtime::Runtime,
    client: &kube::Client,
    metrics: &str,
    pid: u32,
    n: usize,
) {
    let ns = format!("scale-{n}");
    rt.block_on(async {
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create namespace");
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), &ns);
        let started = Instant::now();
        for i in 0..n {
            let cr: LlamaStackDistribution = serde_json::from_value(json!({
                "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                "metadata": {"name": format!("stack-{i:04}")},
                "spec": {"distribution": {"name": "starter"}, "resources": {"models": [format!("model-{i}")]}}}))
            .expect("resource");
            llsds
                .create(&PostParams::default(), &cr)
                .await
                .expect("create");
        }
        let created = started.elapsed();
        let deadline = Duration::from_secs(60 + 3 * n as u64);
        loop {
            if ready_count(client, &ns).await == n {
                break;
            }
            assert!(
                started.elapsed() < deadline,
                "{n}: only {} Ready after {deadline:?}",
                ready_count(client, &ns).await
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let converged = started.elapsed();
        // Steady state: let the last status writes land, then force a full resync (an operator
        // ConfigMap change re-reconciles every object) and count writes and reconciles.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let before = writes(plane, &ns);
        let reconciles_before = metric(metrics, "llso_reconciles_total").await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
        let patch = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "llama-stack-operator-config"}, "data": {"resync": format!("{n}")}});
        cms.patch(
            "llama-stack-operator-config",
            &PatchParams::apply("bench").force(),
            &Patch::Apply(&patch),
        )
        .await
        .expect("operator ConfigMap");
        let resync_started = Instant::now();
        let mut reconciles = 0.0;
        while resync_started.elapsed() < Duration::from_secs(30 + n as u64 / 10) {
            reconciles = metric(metrics, "llso_reconciles_total").await - reconciles_before;
            if reconciles >= n as f64 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let resync = resync_started.elapsed();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let steady_writes = writes(plane, &ns) - before;
        let (rss, peak) = rss_kib(pid);
        println!(
            "{n:>5} LLSDs: created in {created:>8.2?}, all Ready after {converged:>8.2?}; full resync: {reconciles:.0} reconciles in {resync:>7.2?}, {steady_writes} API writes; operator RSS {} MiB (peak {} MiB)",
            rss / 1024,
            peak / 1024
        );
        assert!(
            reconciles >= n as f64,
            "the resync reconciled only {reconciles} of {n}"
        );
        assert_eq!(steady_writes, 0, "an unchanged cluster must cost no writes");
    });
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (plane, rt, client) = start_cluster_with_crd().expect("the test cluster");
    rt.block_on(async {
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": OPERATOR_NAMESPACE}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    });
    let kubeconfig = plane.operator_kubeconfig().expect("operator kubeconfig");
    let operator = spawn_operator(
        &plane,
        std::path::Path::new(env!("CARGO_BIN_EXE_llama-stack-operator")),
        "bench",
        &kubeconfig,
        &["--log-level=warn"],
    )
    .expect("operator process");
    let metrics = operator.metrics.clone();
    let sizes: &[usize] = if full { &[100, 1000] } else { &[3] };
    for &n in sizes {
        scale(&plane, &rt, &client, &metrics, operator.child.id(), n);
    }
}
