//! The operator under control-plane faults, on a real etcd + kube-apiserver with the operator
//! as a process: kube-apiserver restarted (short and long outages), etcd restarted, kube-apiserver
//! frozen (it accepts connections and answers nothing), the operator killed in the middle of a
//! rollout; with and without leader election. After each fault, once the API server answers
//! again, a new stack must get its Deployment and an edit must reach an existing one within
//! [`RECOVERY`]; the measured times are printed (`docs/reliability.md` records them). The health
//! endpoints must fail while the watches are stuck and recover with them.
//!
//! The faults share one control plane, so the trials take turns (`Env::turn`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::process::ExitCode;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use libtest_mimic::Failed;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use serde_json::json;
use support::control_plane::{ControlPlane, start_with_crd};
use support::harness::{run_suite, table};
use support::kube_objects::{create_namespace, create_stack};
use support::operator::{OperatorProcess, spawn_operator};

/// The most a recovery may take once the API server answers again.
const RECOVERY: Duration = Duration::from_secs(30);
/// How long the first reconcile of a stack may take on a healthy cluster.
const CONVERGE: Duration = Duration::from_secs(60);

struct Env {
    plane: ControlPlane,
    rt: tokio::runtime::Runtime,
    client: kube::Client,
    operator: Mutex<Option<OperatorProcess>>,
    turns: Mutex<()>,
}

impl Env {
    /// One trial at a time: each one stops parts of the shared control plane.
    fn turn(&self) -> MutexGuard<'_, ()> {
        self.turns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// (Re)starts the operator with `extra` flags (the previous one is stopped first).
    fn start_operator(&self, name: &str, extra: &[&str]) -> Result<(), Failed> {
        let mut slot = self.operator.lock().unwrap_or_else(|p| p.into_inner());
        slot.take();
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
        let mut flags = vec!["--watch-stuck-after=5", "--log-format=json"];
        flags.extend_from_slice(extra);
        let process = spawn_operator(&self.plane, bin, name, &self.plane.kubeconfig, &flags)
            .map_err(|e| e.to_string())?;
        *slot = Some(process);
        Ok(())
    }

    /// Whether the operator process still runs (no restart was needed).
    fn operator_running(&self) -> bool {
        let mut slot = self.operator.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_mut()
            .is_some_and(|p| matches!(p.child.try_wait(), Ok(None)))
    }

    fn metrics_url(&self) -> String {
        let slot = self.operator.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_ref().map(|p| p.metrics.clone()).unwrap_or_default()
    }

    fn namespace(&self, name: &str) -> Result<(), Failed> {
        Ok(self.rt.block_on(create_namespace(&self.client, name))?)
    }

    fn create_stack(&self, ns: &str, name: &str) -> Result<(), Failed> {
        let spec = json!({"distribution": {"name": "starter"},
            "providers": {"inference": {"provider": "vllm", "endpoint": "http://127.0.0.1:9/v1"}}});
        self.rt
            .block_on(create_stack(&self.client, ns, name, spec))
            .map(drop)
            .map_err(|e| Failed::from(format!("create {ns}/{name}: {e}")))
    }

    fn set_replicas(&self, ns: &str, name: &str, replicas: i32) -> Result<(), Failed> {
        let patch = json!({"spec": {"workload": {"replicas": replicas}}});
        self.rt.block_on(async {
            Api::<LlamaStackDistribution>::namespaced(self.client.clone(), ns)
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
                .map_err(|e| Failed::from(format!("edit {ns}/{name}: {e}")))
        })
    }

    /// Waits until the Deployment `ns/name` exists with `replicas`; returns how long it took.
    fn deployment_with(
        &self,
        ns: &str,
        name: &str,
        replicas: i32,
        within: Duration,
    ) -> Result<Duration, Failed> {
        let started = Instant::now();
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), ns);
        let what = format!("Deployment {ns}/{name} with {replicas} replicas");
        self.rt
            .block_on(support::wait::eventually(within, &what, || {
                let api = api.clone();
                async move {
                    let d = api.get_opt(name).await.ok()??;
                    (d.spec?.replicas == Some(replicas)).then_some(())
                }
            }))
            .map_err(|e| Failed::from(format!("{e}\n{}", self.operator_log())))?;
        Ok(started.elapsed())
    }

    fn operator_log(&self) -> String {
        let mut tail = String::new();
        if let Ok(entries) = std::fs::read_dir(self.plane.dir()) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("operator-") {
                    let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().rev().take(20).collect();
                    tail.push_str(&format!("--- {name}:\n"));
                    for line in lines.into_iter().rev() {
                        tail.push_str(line);
                        tail.push('\n');
                    }
                }
            }
        }
        tail
    }

    /// `GET <metrics>/healthz`: the status code.
    fn healthz(&self) -> u16 {
        let url = format!("{}/healthz", self.metrics_url());
        support::llama_stack::http_get(&url)
            .map(|(code, _)| code)
            .unwrap_or(0)
    }

    /// The common check after a fault: a new stack and an edit of `existing` converge within
    /// [`RECOVERY`]; returns both times.
    fn recovers(
        &self,
        ns: &str,
        existing: &str,
        new: &str,
    ) -> Result<(Duration, Duration), Failed> {
        let started = Instant::now();
        self.create_stack(ns, new)?;
        self.deployment_with(ns, new, 1, RECOVERY)?;
        let created = started.elapsed();
        let started = Instant::now();
        self.set_replicas(ns, existing, 2)?;
        self.deployment_with(ns, existing, 2, RECOVERY)?;
        Ok((created, started.elapsed()))
    }

    /// A stack reconciled before the fault.
    fn before_the_fault(&self, ns: &str, name: &str) -> Result<(), Failed> {
        self.namespace(ns)?;
        self.create_stack(ns, name)?;
        self.deployment_with(ns, name, 1, CONVERGE).map(|_| ())
    }
}

fn report(fault: &str, (created, edited): (Duration, Duration)) {
    eprintln!(
        "recovery after {fault}: new stack's Deployment in {:.1} s, edit in {:.1} s",
        created.as_secs_f64(),
        edited.as_secs_f64()
    );
}

/// Stops kube-apiserver for `pause`, starts it again with the same flags and data.
fn restart_api_server(env: &Env, pause: Duration) -> Result<(), Failed> {
    env.plane
        .stop("kube-apiserver")
        .map_err(|e| e.to_string())?;
    std::thread::sleep(pause);
    env.plane
        .start_again("kube-apiserver")
        .map_err(|e| Failed::from(e.to_string()))
}

fn api_server_restarts_without_leader_election(env: &Env) -> Result<(), Failed> {
    let _turn = env.turn();
    env.start_operator("plain", &[])?;
    let ns = "fault-apiserver";
    env.before_the_fault(ns, "before")?;
    restart_api_server(env, Duration::from_secs(10))?;
    report(
        "a 10 s kube-apiserver restart",
        env.recovers(ns, "before", "after")?,
    );
    env.before_the_fault(ns, "before-long")?;
    restart_api_server(env, Duration::from_secs(40))?;
    report(
        "a 40 s kube-apiserver restart",
        env.recovers(ns, "before-long", "after-long")?,
    );
    if !env.operator_running() {
        return Err("the operator exited".into());
    }
    Ok(())
}

/// Stops etcd for 15 s; the operator runs with `flags`.
fn survives_an_etcd_restart(env: &Env, name: &str, flags: &[&str]) -> Result<(), Failed> {
    let _turn = env.turn();
    env.start_operator(name, flags)?;
    let ns = &format!("fault-{name}");
    env.before_the_fault(ns, "before")?;
    env.plane.stop("etcd").map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_secs(15));
    env.plane
        .start_again("etcd")
        .map_err(|e| Failed::from(e.to_string()))?;
    report(
        &format!("a 15 s etcd restart ({name})"),
        env.recovers(ns, "before", "after")?,
    );
    if !env.operator_running() {
        return Err("the operator exited".into());
    }
    Ok(())
}

fn etcd_restarts(env: &Env) -> Result<(), Failed> {
    survives_an_etcd_restart(env, "etcd", &[])
}

fn etcd_restarts_with_leader_election(env: &Env) -> Result<(), Failed> {
    survives_an_etcd_restart(
        env,
        "etcd-leader",
        &["--leader-elect", "--identity=etcd-leader"],
    )
}

fn a_leader_rejoins_the_election_instead_of_exiting(env: &Env) -> Result<(), Failed> {
    let _turn = env.turn();
    env.start_operator("leader", &["--leader-elect", "--identity=leader"])?;
    let ns = "fault-leader";
    env.before_the_fault(ns, "before")?;
    // Longer than the renew deadline: the lease is lost and the controller must stop.
    restart_api_server(env, Duration::from_secs(20))?;
    report(
        "a 20 s kube-apiserver restart, with leader election",
        env.recovers(ns, "before", "after")?,
    );
    if !env.operator_running() {
        return Err(format!(
            "the operator exited instead of rejoining the election\n{}",
            env.operator_log()
        )
        .into());
    }
    let log = std::fs::read_to_string(env.plane.dir().join("operator-leader.log"))?;
    if !log.contains("rejoining the election") {
        return Err(format!("the lease was never lost, so this proved nothing\n{log}").into());
    }
    Ok(())
}

fn a_frozen_api_server_is_survived(env: &Env) -> Result<(), Failed> {
    survives_a_frozen_api_server(env, "frozen", &[])
}

fn a_frozen_api_server_is_survived_with_leader_election(env: &Env) -> Result<(), Failed> {
    survives_a_frozen_api_server(
        env,
        "frozen-leader",
        &["--leader-elect", "--identity=frozen-leader"],
    )
}

/// Freezes kube-apiserver for 15 s (longer than the leader's renew deadline).
fn survives_a_frozen_api_server(env: &Env, name: &str, flags: &[&str]) -> Result<(), Failed> {
    let _turn = env.turn();
    env.start_operator(name, flags)?;
    let ns = &format!("fault-{name}");
    env.before_the_fault(ns, "before")?;
    env.plane
        .signal("kube-apiserver", libc::SIGSTOP)
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_secs(15));
    env.plane
        .signal("kube-apiserver", libc::SIGCONT)
        .map_err(|e| e.to_string())?;
    report(
        &format!("kube-apiserver frozen for 15 s ({name})"),
        env.recovers(ns, "before", "after")?,
    );
    if !env.operator_running() {
        return Err("the operator exited".into());
    }
    Ok(())
}

fn health_fails_while_the_watches_are_stuck_and_recovers(env: &Env) -> Result<(), Failed> {
    let _turn = env.turn();
    env.start_operator("health", &[])?;
    env.before_the_fault("fault-health", "before")?;
    if env.healthz() != 200 {
        return Err("healthz is not ok before the fault".into());
    }
    env.plane
        .stop("kube-apiserver")
        .map_err(|e| e.to_string())?;
    // --watch-stuck-after=5: unhealthy a few seconds later.
    let down = Instant::now();
    while env.healthz() == 200 {
        if down.elapsed() > Duration::from_secs(20) {
            let _ = env.plane.start_again("kube-apiserver");
            return Err("healthz still ok 20 s into an API server outage".into());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let unhealthy_after = down.elapsed();
    env.plane
        .start_again("kube-apiserver")
        .map_err(|e| Failed::from(e.to_string()))?;
    let up = Instant::now();
    while env.healthz() != 200 {
        if up.elapsed() > RECOVERY {
            return Err(
                format!("healthz not ok {RECOVERY:?} after the API server returned").into(),
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!(
        "healthz failed {:.1} s into the outage and was ok again {:.1} s after the API server returned",
        unhealthy_after.as_secs_f64(),
        up.elapsed().as_secs_f64()
    );
    Ok(())
}

fn an_operator_killed_mid_rollout_finishes_it_after_a_restart(env: &Env) -> Result<(), Failed> {
    let _turn = env.turn();
    env.start_operator("killed", &[])?;
    let ns = "fault-killed";
    env.before_the_fault(ns, "stack")?;
    // An edit that changes the config (a new ConfigMap and a new Deployment revision), and the
    // operator killed at once, in the middle of writing them.
    let patch = json!({"spec": {"resources": {"models": ["m-after-the-kill"]}}});
    env.rt.block_on(async {
        Api::<LlamaStackDistribution>::namespaced(env.client.clone(), ns)
            .patch("stack", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| Failed::from(e.to_string()))
    })?;
    std::thread::sleep(Duration::from_millis(300));
    {
        let mut slot = env.operator.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(process) = slot.as_mut() {
            let _ = process.child.kill();
            let _ = process.child.wait();
        }
        slot.take();
    }
    env.start_operator("killed-again", &[])?;
    let api: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), ns);
    let mounted = env
        .rt
        .block_on(support::wait::eventually(
            RECOVERY,
            "the Deployment mounts a config with the new model",
            || {
                let (api, cms) = (api.clone(), cms.clone());
                async move {
                    let d = api.get_opt("stack").await.ok()??;
                    let name = d
                        .spec?
                        .template
                        .spec?
                        .volumes?
                        .into_iter()
                        .find(|v| v.name == "config")?
                        .config_map?
                        .name;
                    let cm = cms.get_opt(&name).await.ok()??;
                    let yaml = cm.data?.get("config.yaml")?.clone();
                    yaml.contains("m-after-the-kill").then_some(name)
                }
            },
        ))
        .map_err(|e| Failed::from(format!("{e}\n{}", env.operator_log())))?;
    // Nothing duplicated: one generated ConfigMap per config, the old one and the new one.
    let generated = env.rt.block_on(async {
        cms.list(&ListParams::default())
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .filter_map(|c| c.metadata.name)
                    .filter(|n| n.starts_with("stack-config-"))
                    .collect::<Vec<_>>()
            })
            .map_err(|e| Failed::from(e.to_string()))
    })?;
    if generated.len() != 2 || !generated.contains(&mounted) {
        return Err(format!("expected the old and the new config, found {generated:?}").into());
    }
    Ok(())
}

fn start() -> Result<Env, String> {
    let (plane, rt, client) = start_with_crd().map_err(|e| e.to_string())?;
    let env = Env {
        plane,
        rt,
        client,
        operator: Mutex::new(None),
        turns: Mutex::new(()),
    };
    // The operator's own namespace holds its Lease.
    env.namespace(support::operator::OPERATOR_NAMESPACE)
        .map_err(|e| e.message().unwrap_or_default().to_owned())?;
    Ok(env)
}

fn main() -> ExitCode {
    run_suite(
        table(&[
            (
                "api_server_restarts_without_leader_election",
                api_server_restarts_without_leader_election,
            ),
            ("etcd_restarts", etcd_restarts),
            (
                "etcd_restarts_with_leader_election",
                etcd_restarts_with_leader_election,
            ),
            (
                "a_leader_rejoins_the_election_instead_of_exiting",
                a_leader_rejoins_the_election_instead_of_exiting,
            ),
            (
                "a_frozen_api_server_is_survived",
                a_frozen_api_server_is_survived,
            ),
            (
                "a_frozen_api_server_is_survived_with_leader_election",
                a_frozen_api_server_is_survived_with_leader_election,
            ),
            (
                "health_fails_while_the_watches_are_stuck_and_recovers",
                health_fails_while_the_watches_are_stuck_and_recovers,
            ),
            (
                "an_operator_killed_mid_rollout_finishes_it_after_a_restart",
                an_operator_killed_mid_rollout_finishes_it_after_a_restart,
            ),
        ]),
        "the control plane",
        start,
        None,
    )
}
