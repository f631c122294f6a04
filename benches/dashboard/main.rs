//! The Grafana dashboard drawn from real data (`cargo bench --bench dashboard -- --bench`, with
//! `--write-docs` into `docs/dashboard.svg`): a test cluster (kwok nodes), a real registry, the
//! operator binary, and a real Prometheus scraping its `/metrics` every 2 s while the operator
//! lives through a day in miniature: stacks are created (one of them names an image the registry
//! does not have), some change their models, the API server restarts, and the operator's
//! ConfigMap changes. Then every query of every panel of
//! `deploy/components/monitoring/llama-stack-operator-dashboard.json` runs against Prometheus as
//! Grafana would run it, and the answers are drawn where the panel sits.
//!
//! It checks that Prometheus accepts every query, that every panel has data (but the one for
//! stuck rollouts, which a healthy run leaves empty), and that the panels say what happened: the
//! failed stack, the registry's errors, the watches' relists after the restart. Without `--bench`
//! (under `cargo test --all-targets`) the day lasts about a minute and the picture goes to
//! `target/dashboard-bench/`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

mod prometheus;
mod render;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use prometheus::{Prometheus, Series};
use render::{Line, Mark, Panel};
use serde_json::{Value, json};
use support::control_plane::{ControlPlane, start_cluster_with_crd};
use support::kube_objects::create_stack;
use support::oci::{Comp, Entry, ImageSpec, Layer, skopeo_copy, write_layout};
use support::operator::{OPERATOR_NAMESPACE, spawn_operator};
use support::registries::Registries;

const NAMESPACE: &str = "team-a";
const DASHBOARD: &str = "deploy/components/monitoring/llama-stack-operator-dashboard.json";
/// The panel a healthy run leaves without series: no rollout needs a person.
const MAY_BE_EMPTY: &str = "Rollouts that need a person";

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Pushes a one-layer image labelled with `config` to the plain registry as `<repo>:v1`.
fn push_labelled(plain: &str, work: &Path, repo: &str, config: &str) {
    let image = ImageSpec {
        arch: "amd64",
        labels: vec![(
            "io.llamastack.config.base64",
            base64::engine::general_purpose::STANDARD.encode(config),
        )],
        layers: vec![Layer {
            entries: vec![Entry::File("/etc/os-release", b"ID=dashboard\n".to_vec())],
            comp: Comp::Gzip,
        }],
    };
    let layout = work.join(repo.replace('/', "-"));
    write_layout(&layout, "v1", &[image], false).expect("image layout");
    skopeo_copy(
        &format!("oci:{}:v1", layout.display()),
        &format!("docker://{plain}/{repo}:v1"),
        &["--preserve-digests", "--dest-tls-verify=false"],
    )
    .expect("push to the plain registry");
}

async fn create(client: &kube::Client, namespace: &str) {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("ns");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
}

/// The operator's ConfigMap: `starter` from the local registry (plain HTTP), re-pinned every 30 s.
async fn operator_config(client: &kube::Client, plain: &str, resync: u32) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "llama-stack-operator-config"},
        "data": {"image-overrides": format!("starter: {plain}/dashboard/starter:v1\n"),
                 "insecure-registries": format!("[\"{plain}\"]"),
                 "repin-interval": "30s", "resync": resync.to_string()}});
    Api::<ConfigMap>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .patch(
            "llama-stack-operator-config",
            &PatchParams::apply("dashboard-bench").force(),
            &Patch::Apply(&cm),
        )
        .await
        .expect("operator ConfigMap");
}

/// A policy of the cluster (a ValidatingAdmissionPolicy, as a policy engine would) refusing
/// Deployments named `frozen`: the operator's writes for that stack fail.
const POLICY: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-frozen-deployments}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
    - expression: \"object.metadata.name != 'frozen'\"
      message: Deployments named frozen are refused by the cluster's policy
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-frozen-deployments}
spec:
  policyName: no-frozen-deployments
  validationActions: [Deny]
";

fn apply_policy(plane: &ControlPlane) {
    use std::io::Write as _;
    let mut kubectl = plane
        .kubectl()
        .args(["apply", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl");
    kubectl
        .stdin
        .take()
        .expect("stdin")
        .write_all(POLICY.as_bytes())
        .expect("policy to kubectl");
    assert!(
        kubectl.wait().expect("kubectl").success(),
        "the admission policy applies"
    );
}

/// Seven healthy stacks (five of `starter`, two of a custom image), one whose image the
/// registry does not have, and one whose Deployment the cluster's policy refuses.
async fn create_stacks(client: &kube::Client, plain: &str, port: u16) {
    let mut specs: Vec<(String, Value)> = (0..5)
        .map(|i| (format!("chat-{i}"), json!({"name": "starter"})))
        .collect();
    for i in 0..2 {
        specs.push((
            format!("custom-{i}"),
            json!({"image": format!("{plain}/dashboard/custom:v1")}),
        ));
    }
    specs.push((
        "typo".into(),
        json!({"image": format!("{plain}/dashboard/custm:v1")}),
    ));
    specs.push(("frozen".into(), json!({"name": "starter"})));
    for (name, distribution) in specs {
        let spec = json!({"distribution": distribution, "networking": {"port": port}});
        create_stack(client, NAMESPACE, &name, spec)
            .await
            .expect("create");
    }
}

/// New models for the first `n` starter stacks: each rolls once.
async fn change_models(client: &kube::Client, n: usize) {
    let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), NAMESPACE);
    for i in 0..n {
        let patch = json!({"spec": {"resources": {"models": [format!("model-{i}")]}}});
        llsds
            .patch(
                &format!("chat-{i}"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .expect("change models");
    }
}

/// The day in miniature, `span` long: (start, end) in unix seconds, and what happened when.
fn live_a_day(
    plane: &ControlPlane,
    rt: &tokio::runtime::Runtime,
    client: &kube::Client,
    plain: &str,
    port: u16,
    span: Duration,
) -> (f64, f64, Vec<Mark>) {
    let start = now();
    let since = std::time::Instant::now();
    let mut marks = Vec::new();
    let mut mark = |label: &str| {
        marks.push(Mark {
            at: since.elapsed().as_secs_f64(),
            label: label.to_owned(),
        })
    };
    let until = |fraction: f64| {
        if let Some(wait) = span.mul_f64(fraction).checked_sub(since.elapsed()) {
            std::thread::sleep(wait);
        }
    };
    mark("9 stacks created");
    rt.block_on(create_stacks(client, plain, port));
    until(0.3);
    mark("3 stacks change models");
    rt.block_on(change_models(client, 3));
    until(0.5);
    mark("kube-apiserver restarts (15 s)");
    plane.stop("kube-apiserver").expect("stop kube-apiserver");
    std::thread::sleep(Duration::from_secs(15));
    plane
        .start_again("kube-apiserver")
        .expect("start kube-apiserver");
    until(0.75);
    mark("operator ConfigMap changed");
    rt.block_on(operator_config(client, plain, 1));
    until(1.0);
    (start, now(), marks)
}

/// Every panel of the dashboard with what its queries returned from `start` to `end`.
async fn panels(
    prometheus: &Prometheus,
    dashboard: &Value,
    start: f64,
    end: f64,
) -> Result<Vec<Panel>, String> {
    let mut out = Vec::new();
    for panel in dashboard["panels"]
        .as_array()
        .ok_or("the dashboard has no panels")?
    {
        let title = panel["title"].as_str().unwrap_or_default().to_owned();
        let grid = &panel["gridPos"];
        let coordinate = |key: &str| grid[key].as_f64().unwrap_or_default();
        let mut lines = Vec::new();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            let series: Vec<Series> = prometheus
                .range(expr, start, end)
                .await
                .map_err(|e| format!("{title}: {expr}: {e}"))?;
            let format = target["legendFormat"].as_str().unwrap_or_default();
            lines.extend(series.into_iter().map(|s| Line {
                legend: render::legend(format, &s.labels),
                points: s.samples.iter().map(|(t, v)| (t - start, *v)).collect(),
            }));
        }
        out.push(Panel {
            title,
            unit: panel["fieldConfig"]["defaults"]["unit"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            grid: (
                coordinate("x"),
                coordinate("y"),
                coordinate("w"),
                coordinate("h"),
            ),
            lines,
        });
    }
    Ok(out)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let docs = args.iter().any(|a| a == "--write-docs");
    let span = Duration::from_secs(if full { 240 } else { 75 });
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(DASHBOARD)).expect("dashboard"))
            .expect("dashboard JSON");

    let shared =
        support::shared_server::start().expect("the llama-stack server every stack reaches");
    let registries = Registries::start().expect("registries");
    let plain = registries.plain.host.clone();
    let work = tempfile::Builder::new()
        .prefix("llso-dashboard-")
        .tempdir()
        .expect("work dir");
    let starter = support::llama_stack::STARTER_CONFIG;
    push_labelled(&plain, work.path(), "dashboard/starter", starter);
    push_labelled(&plain, work.path(), "dashboard/custom", starter);

    let (plane, rt, client) = start_cluster_with_crd().expect("the test cluster");
    rt.block_on(async {
        create(&client, OPERATOR_NAMESPACE).await;
        create(&client, NAMESPACE).await;
        operator_config(&client, &plain, 0).await;
    });
    apply_policy(&plane);
    let kubeconfig = plane.operator_kubeconfig().expect("operator kubeconfig");
    let operator = spawn_operator(
        &plane,
        Path::new(env!("CARGO_BIN_EXE_llama-stack-operator")),
        "dashboard",
        &kubeconfig,
        &["--log-level=warn"],
    )
    .expect("operator process");
    let target = operator.metrics.trim_start_matches("http://").to_owned();
    let prometheus = Prometheus::start(work.path(), &target).expect("Prometheus");
    rt.block_on(prometheus.wait_scraping(Duration::from_secs(60)))
        .expect("Prometheus scrapes the operator");

    let (start, end, marks) = live_a_day(&plane, &rt, &client, &plain, shared.port, span);
    // One more scrape, so the last moment is in the data.
    std::thread::sleep(Duration::from_secs(2 * prometheus::SCRAPE_SECONDS));
    let panels = rt
        .block_on(panels(&prometheus, &dashboard, start, end))
        .unwrap_or_else(|e| panic!("{e}"));
    let title = format!(
        "{} — {} s of a kwok cluster, scraped every {} s by Prometheus",
        dashboard["title"].as_str().unwrap_or_default(),
        span.as_secs(),
        prometheus::SCRAPE_SECONDS
    );
    let dir = if docs {
        root.join("docs")
    } else {
        root.join("target/dashboard-bench")
    };
    std::fs::create_dir_all(&dir).expect("output directory");
    std::fs::write(
        dir.join("dashboard.svg"),
        render::svg(&title, &panels, &marks, span.as_secs_f64()),
    )
    .expect("svg");
    println!("wrote {}/dashboard.svg", dir.display());
    let problems = problems(&panels);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What the panels fail to show of the run.
fn problems(panels: &[Panel]) -> Vec<String> {
    let mut problems = Vec::new();
    let last = |title: &str, legend: &str| -> Option<f64> {
        let panel = panels.iter().find(|p| p.title == title)?;
        let line = panel.lines.iter().find(|l| l.legend == legend)?;
        line.points.iter().rev().find_map(|(_, v)| *v)
    };
    let peak = |title: &str, legend_prefix: &str| -> f64 {
        panels
            .iter()
            .filter(|p| p.title == title)
            .flat_map(|p| {
                p.lines
                    .iter()
                    .filter(|l| l.legend.starts_with(legend_prefix))
            })
            .flat_map(|l| l.points.iter().filter_map(|(_, v)| *v))
            .fold(0.0, f64::max)
    };
    for panel in panels {
        let has_data = panel
            .lines
            .iter()
            .any(|l| l.points.iter().any(|(_, v)| v.is_some()));
        if !has_data && panel.title != MAY_BE_EMPTY {
            problems.push(format!("panel {:?} shows no data", panel.title));
        }
    }
    let ready = last("Stacks by phase", "Ready");
    if ready != Some(7.0) {
        problems.push(format!("Stacks by phase: Ready ends at {ready:?}, not 7"));
    }
    for (title, legend, what) in [
        (
            "Registry requests and errors",
            "errors",
            "the missing image's registry errors",
        ),
        (
            "Stacks by phase",
            "Failed",
            "the stack whose image is missing",
        ),
        (
            "Reconcile errors by reason",
            "ApplyError",
            "the refused Deployment's reconcile errors",
        ),
        (
            "Writes that restart servers",
            "rollouts",
            "the model changes' rollouts",
        ),
        (
            "Watch errors and relists",
            "relists",
            "the watches' relists after the API server restart",
        ),
    ] {
        if peak(title, legend) <= 0.0 {
            problems.push(format!("{title}: {what} are not shown"));
        }
    }
    problems
}
