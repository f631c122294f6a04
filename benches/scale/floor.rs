//! The floor (issue 62): the fastest client that makes what the operator makes, timed on a test
//! cluster of the same kind. For each stack, as soon as it is created, it creates the objects the
//! operator's own `render` prints for the bench's stack (ConfigMap, ServiceAccount, Deployment,
//! Service, and an `OGXServer`'s NetworkPolicy), writes one status (server-side apply, as the
//! operator does) and creates one Event: no read, no watch, as the operator's user, as many stacks
//! at once as the operator reconciles (its default of 4) and with the same client (kube-rs, no
//! rate limit). The operator's time to every Deployment is then reported as a ratio to this one's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};

use super::made::Made;
use super::support::kube_objects::create_namespace;
use super::{
    NAMESPACE, bench_cluster, deadline, deployment_count, namespace_writes, stack_name,
    wait_for_all,
};

/// The stacks made at once, as the operator's default concurrency.
const AT_ONCE: usize = llama_stack_operator::controller::DEFAULT_CONCURRENCY as usize;
/// The writes the floor makes a stack of `objects` objects: those, a status, an Event.
pub fn writes_per_stack(objects: usize) -> usize {
    objects + 2
}

/// What the floor measured for one size.
pub struct Floor {
    /// From the first stack's create until every stack's Deployment exists (polled as the
    /// operator's run polls it).
    pub deployments: Duration,
    /// From the first stack's create until the floor's last write answered.
    pub done: Duration,
    /// Its writes in the stacks' namespace, from the audit log.
    pub writes: usize,
    /// The objects it made a stack (what the operator's `render` prints for it).
    pub objects: usize,
}

/// The objects the operator applies for the bench's first stack, as its `render` prints them.
fn template(binary: &std::path::Path, port: u16) -> Vec<Value> {
    let made = Made::from_env();
    let manifest = made.manifest(0, port);
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("stack.json");
    std::fs::write(&file, manifest.to_string()).expect("the stack's manifest");
    let out = std::process::Command::new(binary)
        .arg("render")
        .arg("-f")
        .arg(&file)
        .output()
        .expect("run render");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "render failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let objects: Vec<Value> = stdout
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str(doc).expect("render prints YAML"))
        .collect();
    let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    let mut expected = vec!["ConfigMap", "ServiceAccount", "Deployment", "Service"];
    if made == Made::OgxServers {
        // The OGX operator's NetworkPolicy, on by default.
        expected.push("NetworkPolicy");
    }
    assert_eq!(
        kinds, expected,
        "the floor makes what the operator makes for the bench's stack"
    );
    objects
}

/// `template`'s objects for stack `i` (uid `uid`): its names, and owned by it.
fn objects_for(template: &[Value], i: usize, uid: &str) -> Vec<Value> {
    let text = serde_json::to_string(template).expect("JSON");
    let mut objects: Vec<Value> =
        serde_json::from_str(&text.replace(&stack_name(0), &stack_name(i))).expect("JSON");
    let (api_version, kind) = Made::from_env().type_meta();
    for object in &mut objects {
        object["metadata"]["ownerReferences"] = json!([{
            "apiVersion": api_version, "kind": kind,
            "name": stack_name(i), "uid": uid, "controller": true}]);
    }
    objects
}

async fn create<K>(client: &kube::Client, object: Value)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Clone
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let typed: K = serde_json::from_value(object).expect("a rendered object");
    Api::<K>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &typed)
        .await
        .expect("the floor's create");
}

/// Everything the floor writes for stack `i`.
async fn make(client: &kube::Client, template: &[Value], i: usize, uid: &str) {
    for object in objects_for(template, i, uid) {
        match object["kind"].as_str() {
            Some("ConfigMap") => create::<ConfigMap>(client, object).await,
            Some("ServiceAccount") => create::<ServiceAccount>(client, object).await,
            Some("Deployment") => create::<Deployment>(client, object).await,
            Some("Service") => create::<Service>(client, object).await,
            Some("NetworkPolicy") => create::<NetworkPolicy>(client, object).await,
            other => panic!("the floor makes no {other:?}"),
        }
    }
    let name = stack_name(i);
    let made = Made::from_env();
    let (api_version, kind) = made.type_meta();
    let status = json!({"apiVersion": api_version, "kind": kind,
        "status": {"phase": "Initializing", "observedGeneration": 1, "conditions": [{
            "type": "Ready", "status": "False", "reason": "Initializing",
            "message": "the Deployment is rolling out", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    made.api(client)
        .patch_status(
            &name,
            &PatchParams::apply("floor").force(),
            &Patch::Apply(&status),
        )
        .await
        .expect("the floor's status");
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}.floor"), "namespace": NAMESPACE},
        "eventTime": "2026-01-01T00:00:00.000000Z", "action": "Create", "reason": "Created",
        "type": "Normal", "note": "the floor made the stack's objects",
        "reportingController": "floor", "reportingInstance": "floor",
        "regarding": {"apiVersion": api_version, "kind": kind,
            "name": name, "namespace": NAMESPACE, "uid": uid}}))
    .expect("an Event");
    Api::<Event>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &event)
        .await
        .expect("the floor's Event");
}

/// The floor for `n` stacks, on a fresh cluster like the operator's run (`kwok` as there).
pub fn run(binary: &std::path::Path, n: usize, port: u16, kwok: bool) -> Floor {
    let template = Arc::new(template(binary, port));
    let objects = template.len();
    let (plane, rt, client) = bench_cluster(kwok);
    rt.block_on(async {
        create_namespace(&client, NAMESPACE)
            .await
            .expect("namespace");
        let floor_client = plane.operator_client().await.expect("the operator's user");
        let (send, receive) = mpsc::unbounded_channel::<(usize, String)>();
        let receive = Arc::new(Mutex::new(receive));
        let started = Instant::now();
        let workers: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                let (client, template, receive) =
                    (floor_client.clone(), template.clone(), receive.clone());
                tokio::spawn(async move {
                    let mut last = Instant::now();
                    loop {
                        let next = receive.lock().await.recv().await;
                        let Some((i, uid)) = next else { break last };
                        make(&client, &template, i, &uid).await;
                        last = Instant::now();
                    }
                })
            })
            .collect();
        let creating = async {
            let made = Made::from_env();
            for i in 0..n {
                let uid = made.create(&client, i, port).await;
                send.send((i, uid)).expect("the floor's workers");
            }
            drop(send);
        };
        let counting = wait_for_all(
            n,
            "Deployments (the floor)",
            deadline(started, n),
            Duration::from_millis(500),
            || deployment_count(&client),
        );
        let ((), ()) = tokio::join!(creating, counting);
        let deployments = started.elapsed();
        let mut done = Duration::ZERO;
        for worker in workers {
            let last = worker.await.expect("a floor worker");
            done = done.max(last.duration_since(started));
        }
        Floor {
            deployments,
            done,
            writes: namespace_writes(&plane).len(),
            objects,
        }
    })
}
