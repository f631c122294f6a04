//! A newcomer's path, end to end on a real node, as `docs/install.md` tells it: the operator
//! installed with Helm from a private mirror (its image pinned by digest, pulled with a pull
//! secret, the mirror's CA given to the chart), running as a Pod; a user who holds only the
//! built-in `edit` role in their namespace creates a stack, which passes the chart's webhooks;
//! `kubectl wait --for=condition=Ready` returns; kstatus (what Flux and Argo CD judge with) says
//! `Current`; and the server answers through its Service.
//!
//! Unlike `tests/node/`, where the operator is a process beside the cluster, here everything
//! runs in the cluster: the API server is reachable from Pods (`ApiAccess::Pods`) and the mirror
//! at the node's address, so the operator's Pod uses its in-cluster credentials, and the API
//! server calls the webhooks through their Service. All of it stays in the test's sealed network
//! namespace (`support::sealed`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::{Value, json};
use support::control_plane::{ApiAccess, ControlPlane, pod_reachable_addr};
use support::harness::{run_suite, table};
use support::helm::{CHART, helm, helm_bin};
use support::kstatus::{kstatus_bin, verdict};
use support::llama_stack::http_get;
use support::node::{RealNode, TrustedRegistry, operator_image};
use support::node_stack::{
    distribution_image, pull_secret_namespace, push, push_pinned, slim_spec,
};
use support::operator::{kubectl, kubectl_status};
use support::registries::Registries;

/// Where the operator is installed, as the chart's documentation suggests.
const OPERATOR_NS: &str = "llama-stack-operator-system";
/// The namespace user: bound to the built-in `edit` ClusterRole in [`TEAM_NS`] only.
const EDITOR: &str = "eve";
const TEAM_NS: &str = "team-a";
/// From creation to Ready: an image pull and a Python server start on two cores.
const READY: Duration = Duration::from_secs(300);

struct Env {
    plane: ControlPlane,
    _registries: Registries,
    _node: RealNode,
    /// `<mirror>/e2e/distribution:base64`, as the node and the operator's Pod name it.
    distribution: String,
    /// The mirror's `host:port` at the node's address.
    mirror: String,
    _work: tempfile::TempDir,
}

/// `reference` (pushed through loopback) as Pods name it: at the node's address.
fn at_node(reference: &str, registries: &Registries) -> String {
    reference.replacen(
        &registries.basic.host,
        &registries.basic.host_at(pod_reachable_addr()),
        1,
    )
}

fn prepare() -> Result<Env, String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let distribution_layout = distribution_image(work.path())?;
    let operator_layout = operator_image().map_err(|e| e.to_string())?;
    let registries =
        Registries::start_also_at(Some(pod_reachable_addr())).map_err(|e| e.to_string())?;
    let distribution = at_node(
        &push(&distribution_layout, "base64", &registries)?,
        &registries,
    );
    let operator = at_node(
        &push_pinned(&operator_layout, "llama-stack-operator", &registries)?,
        &registries,
    );
    let mirror = registries.basic.host_at(pod_reachable_addr());
    let plane =
        ControlPlane::start_with_controllers_for(ApiAccess::Pods).map_err(|e| e.to_string())?;
    let ca_file = registries.dir.path().join("ca.pem");
    let node = RealNode::start(
        &plane,
        &[TrustedRegistry {
            host: mirror.clone(),
            ca_file: ca_file.clone(),
        }],
    )
    .map_err(|e| e.to_string())?;
    let started = Instant::now();
    helm_install(&plane, work.path(), &operator, &mirror, &ca_file)?;
    eprintln!(
        "the chart's operator Pod was Ready {:.0?} after helm install began",
        started.elapsed()
    );
    // A Ready Pod is not yet a routed Service: the API server's first calls to the webhooks
    // can be refused for a moment, which is no finding of the trials.
    let ready = Instant::now();
    let probe = stack(
        "webhook-probe",
        json!({"distribution": {"name": "starter"}}),
    );
    support::wait::poll_until(
        Duration::from_secs(60),
        Duration::from_millis(500),
        "the chart's webhooks answering the API server",
        || {
            let args = ["create", "--dry-run=server", "-n", OPERATOR_NS, "-f", "-"];
            let (_, _, err) = kubectl_status(&plane, &args, Some(&probe));
            Ok::<bool, String>(!err.contains("failed calling webhook"))
        },
    )?;
    eprintln!(
        "the webhooks answered {:.0?} after the Pod was Ready",
        ready.elapsed()
    );
    Ok(Env {
        plane,
        _registries: registries,
        _node: node,
        distribution,
        mirror,
        _work: work,
    })
}

/// What an air-gapped install does: the namespace with the mirror's pull secret and CA, then
/// `helm install` with the operator's image by digest from the mirror, waiting for its Pod.
fn helm_install(
    plane: &ControlPlane,
    work: &Path,
    operator: &str,
    mirror: &str,
    ca_file: &Path,
) -> Result<(), String> {
    let e = |e: support::control_plane::Error| e.to_string();
    pull_secret_namespace(plane, OPERATOR_NS, mirror).map_err(e)?;
    kubectl(
        plane,
        &[
            "create",
            "configmap",
            "mirror-ca",
            "-n",
            OPERATOR_NS,
            &format!("--from-file=ca.crt={}", ca_file.display()),
        ],
        None,
    )
    .map_err(e)?;
    let (repository, digest) = operator
        .split_once('@')
        .ok_or_else(|| format!("{operator} is not pinned"))?;
    let bin = helm_bin().map_err(e)?;
    let (ok, out, err) = helm(
        &bin,
        work,
        Some(plane),
        &[
            "install",
            "llso",
            CHART,
            "--namespace",
            OPERATOR_NS,
            "--set",
            &format!("image.repository={repository}"),
            "--set",
            &format!("image.digest={digest}"),
            "--set",
            "imagePullSecrets={regcred}",
            "--set",
            "registryCA.configMap=mirror-ca",
            "--wait",
            "--timeout=5m",
        ],
    );
    if !ok {
        let pods = kubectl(plane, &["get", "pods", "-A", "-o", "wide"], None).unwrap_or_default();
        let logs = kubectl(
            plane,
            &[
                "logs",
                "-n",
                OPERATOR_NS,
                "deployment/llama-stack-operator",
                "--tail=30",
            ],
            None,
        )
        .unwrap_or_default();
        return Err(format!(
            "helm install: {out}{err}\npods:\n{pods}\noperator:\n{logs}"
        ));
    }
    Ok(())
}

impl Env {
    /// kubectl as the namespace editor (the admin impersonating them, as `kubectl --as` does).
    fn as_editor(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        let mut all = vec!["--as", EDITOR, "-n", TEAM_NS];
        all.extend_from_slice(args);
        kubectl_status(&self.plane, &all, stdin)
    }

    /// The team's namespace with the mirror's pull secret, and [`EDITOR`] bound to `edit` there;
    /// returns once the built-in role has aggregated the operator's editor role.
    fn team_namespace(&self) -> Result<(), Failed> {
        pull_secret_namespace(&self.plane, TEAM_NS, &self.mirror).map_err(|e| e.to_string())?;
        kubectl(
            &self.plane,
            &[
                "create",
                "rolebinding",
                "eve-edits",
                "--clusterrole=edit",
                &format!("--user={EDITOR}"),
                "-n",
                TEAM_NS,
            ],
            None,
        )
        .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, answer, _) = self.as_editor(
                &[
                    "auth",
                    "can-i",
                    "create",
                    "llamastackdistributions.llamastack.io",
                ],
                None,
            );
            if answer.trim() == "yes" {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("{EDITOR} still may not create stacks: {answer}").into());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The status of the stack `ns/name`, for a failure's message.
    fn status(&self, ns: &str, name: &str) -> String {
        kubectl(
            &self.plane,
            &["get", "llsd", name, "-n", ns, "-o", "jsonpath={.status}"],
            None,
        )
        .unwrap_or_default()
    }

    fn pods(&self) -> String {
        kubectl(&self.plane, &["get", "pods", "-A", "-o", "wide"], None).unwrap_or_default()
    }
}

fn stack(name: &str, spec: Value) -> String {
    json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
           "metadata": {"name": name}, "spec": spec})
    .to_string()
}

/// The namespace editor creates a stack from the mirror; `kubectl wait` returns once it is
/// Ready, kstatus agrees, the operator's Pod pinned the image by digest through the mirror, and
/// the server answers `/v1/version` through the Service the operator made.
fn an_editor_creates_a_stack_that_kubectl_wait_sees_ready(env: &Env) -> Result<(), Failed> {
    env.team_namespace()?;
    let (ok, out, err) = env.as_editor(
        &["create", "-f", "-"],
        Some(&stack("first", slim_spec(&env.distribution, "vllm-team"))),
    );
    assert!(ok, "the editor's stack was refused: {out}{err}");
    let (ok, out, err) = env.as_editor(
        &[
            "wait",
            "--for=condition=Ready",
            "llsd/first",
            &format!("--timeout={}s", READY.as_secs()),
        ],
        None,
    );
    if !ok {
        let status = env.status(TEAM_NS, "first");
        return Err(format!(
            "kubectl wait: {out}{err}\nstatus: {status}\npods:\n{}",
            env.pods()
        )
        .into());
    }
    let kstatus = kstatus_bin().map_err(|e| e.to_string())?;
    assert_eq!(
        verdict(&env.plane, &kstatus, TEAM_NS, "first").map_err(|e| e.to_string())?,
        "Current"
    );
    let deployment: Value = serde_json::from_str(
        &kubectl(
            &env.plane,
            &["get", "deployment", "first", "-n", TEAM_NS, "-o", "json"],
            None,
        )
        .map_err(|e| e.to_string())?,
    )?;
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    let repository = env.distribution.trim_end_matches(":base64");
    assert!(
        image.starts_with(&format!("{repository}@sha256:")),
        "the operator's Pod resolved the tag through the mirror and pinned it: {image}"
    );
    let service: Value = serde_json::from_str(
        &kubectl(
            &env.plane,
            &[
                "get",
                "service",
                "first-service",
                "-n",
                TEAM_NS,
                "-o",
                "json",
            ],
            None,
        )
        .map_err(|e| e.to_string())?,
    )?;
    let address = format!(
        "{}:{}",
        service["spec"]["clusterIP"].as_str().unwrap_or_default(),
        service["spec"]["ports"][0]["port"]
    );
    let (code, body) = http_get(&format!("http://{address}/v1/version"))?;
    assert_eq!(code, 200, "GET /v1/version through the Service: {body}");
    assert!(body.contains("0.7.3"), "{body}");
    Ok(())
}

/// The API server calls the chart's webhooks in the operator's Pod, through their Service: a
/// stack whose Service name would be too long is refused by the validating webhook (a check no
/// schema rule makes), and a v1alpha1 resource is converted both ways by the conversion webhook.
fn the_charts_webhooks_answer_from_the_operators_pod(env: &Env) -> Result<(), Failed> {
    let ns = "webhooks";
    // The mirror's pull secret: the operator resolves with the credentials kubelet would use.
    pull_secret_namespace(&env.plane, ns, &env.mirror).map_err(|e| e.to_string())?;
    let long = "a".repeat(56);
    let (ok, out, err) = kubectl_status(
        &env.plane,
        &["create", "-n", ns, "-f", "-"],
        Some(&stack(&long, json!({"distribution": {"name": "starter"}}))),
    );
    assert!(!ok, "a 56-character name was admitted: {out}");
    // Only the webhook makes this check (no schema rule can see the derived Service's name);
    // kubectl prints its denial as it prints the schema's, by field.
    assert!(
        err.contains("metadata.name") && err.contains("use a name of at most 55 characters"),
        "refused by the webhook, with the limit: {err}"
    );
    let upstream = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
        "metadata": {"name": "upstream"},
        "spec": {"replicas": 0, "server": {"distribution": {"image": env.distribution}}}});
    kubectl(
        &env.plane,
        &["create", "-n", ns, "-f", "-"],
        Some(&upstream.to_string()),
    )
    .map_err(|e| e.to_string())?;
    let stored: Value = serde_json::from_str(
        &kubectl(
            &env.plane,
            &[
                "get",
                "llamastackdistributions.v1alpha2.llamastack.io",
                "upstream",
                "-n",
                ns,
                "-o",
                "json",
            ],
            None,
        )
        .map_err(|e| e.to_string())?,
    )?;
    assert_eq!(
        stored["spec"]["distribution"]["image"],
        env.distribution.as_str()
    );
    assert_eq!(stored["spec"]["workload"]["replicas"], 0);
    let (ok, out, err) = kubectl_status(
        &env.plane,
        &[
            "wait",
            "-n",
            ns,
            "--for=condition=Ready",
            "llamastackdistributions.v1alpha1.llamastack.io/upstream",
            "--timeout=120s",
        ],
        None,
    );
    if !ok {
        let status = env.status(ns, "upstream");
        return Err(
            format!("a stack scaled to zero is Ready: {out}{err}\nstatus: {status}").into(),
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    run_suite(
        table(&[
            (
                "an_editor_creates_a_stack_that_kubectl_wait_sees_ready",
                an_editor_creates_a_stack_that_kubectl_wait_sees_ready,
            ),
            (
                "the_charts_webhooks_answer_from_the_operators_pod",
                the_charts_webhooks_answer_from_the_operators_pod,
            ),
        ]),
        "a Helm-installed operator on the real node",
        prepare,
        None,
    )
}
