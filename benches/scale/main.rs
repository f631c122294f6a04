//! Scale benchmark (`cargo bench --bench scale -- --bench`): for each size (100, 300 and 1000
//! LlamaStackDistributions, or `LLSO_SCALE_SIZES=…`; `OGXServer`s with `LLSO_SCALE_KIND=ogx`), a
//! fresh test cluster (etcd, kube-apiserver with an audit log; up to `LLSO_SCALE_KWOK_MAX` stacks,
//! 3000, also kube-controller-manager, kube-scheduler and kwok with node Leases) and the operator
//! binary as a separate process (`LLSO_SCALE_OPERATOR` names another binary). It reports the time
//! until every stack's Deployment exists and until every stack is Ready (with kwok), the
//! operator's API writes (and Events) from the first create until it is quiet, its resident memory
//! idle, quiet and after a full resync (an operator ConfigMap change reconciles every stack), split
//! into anonymous and file-backed pages, the writes that resync made (goal: 0), its CPU time, and
//! the API server's and etcd's memory. It writes a Markdown table and an SVG plot to
//! `target/scale-bench/`, or into `docs/` with `--write-docs`. Then, on a second cluster of the
//! same kind, the floor (`floor.rs`): the fastest client that makes the same objects with no
//! reads; the operator's time to every Deployment is reported as a multiple of the floor's.
//!
//! Without `--bench` (under `cargo test --all-targets`) it runs 3 stacks as a smoke test. Both
//! modes check the write budget: at most 3 Events, and 4 API writes a stack beyond its objects (8
//! for a LlamaStackDistribution's four), until quiet, and no write at all during a resync of an
//! unchanged cluster; and the read budget of that resync (at most 4 reads per stack). It reports
//! the operator's reads (from the audit log, by verb and resource) until quiet and during the
//! resync.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

mod debug;
mod floor;
#[cfg(feature = "heap-profile")]
mod heap;
mod made;
mod peer;
mod plot;
mod starter_image;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use made::Made;
use serde_json::json;
use support::control_plane::{ControlPlane, OPERATOR_USER, start_cluster_with_crd, start_with_crd};
use support::kube_objects::create_namespace;
use support::operator::{OPERATOR_NAMESPACE, OperatorProcess, spawn_operator_with_env};

/// How long the full bench watches the operator at rest after quiet, counting its reads.
const AT_REST: Duration = Duration::from_secs(60);

/// How long the bench waits for quiet (no write for this long), and then watches it at rest.
#[derive(Clone, Copy)]
struct Windows {
    quiet: Duration,
    rest: Option<Duration>,
}

/// Budget per stack from the first create until the operator is quiet (issue 20): its objects
/// (as many as `render` prints for it: four for a LlamaStackDistribution, and an OGXServer's
/// NetworkPolicy), two status patches and two Events, and at most one Event more.
const MAX_EVENTS_PER_STACK: f64 = 3.0;
const MAX_WRITES_BEYOND_THE_OBJECTS: usize = 4;
/// Reads of a full resync of Ready stacks: the Deployment and the Service the server is read
/// through (2.0 measured; issue 62). The owned objects the watches know, and the pull secrets of
/// the namespace's `default` ServiceAccount, are not read; one more read a stack is over budget.
const MAX_RESYNC_READS_PER_STACK: f64 = 2.5;
const NAMESPACE: &str = "scale";

/// What one size measured.
struct Sample {
    stacks: usize,
    created: Duration,
    converged: Duration,
    writes: usize,
    events: usize,
    status_writes: usize,
    rss_idle_kib: u64,
    rss_quiet_kib: u64,
    resync: Duration,
    resync_reconciles: f64,
    resync_writes: usize,
    /// The operator's reads (get, list, its watches' lists among them) until quiet, and during the
    /// resync.
    reads: usize,
    resync_reads: usize,
    /// The operator's reads in a minute at rest after quiet (`None`: not measured, the smoke
    /// test): a Ready stack's server is read once a minute, and each read is a reconcile.
    rest_reads: Option<usize>,
    /// Its writes in that minute (0 expected: quiet means no write for the quiet window).
    rest_writes: Option<usize>,
    rss_resync_kib: u64,
    peak_kib: u64,
    node_ready: bool,
    /// Stacks whose status says Ready (with kwok), and of those, whose status shows their
    /// server's version.
    ready: usize,
    answered: usize,
    /// Whether kwok ran Pods (above `LLSO_SCALE_KWOK_MAX` stacks only the API server and etcd
    /// run: Deployments are made, no Pod starts, so no stack becomes Ready).
    kwok: bool,
    /// Time from the first create until every stack's Deployment exists.
    deployments: Duration,
    /// The operator's CPU time (user + system) from its start to the end of the resync.
    cpu_seconds: f64,
    /// After the resync: the operator's anonymous and file-backed pages, and the API server's
    /// and etcd's resident memory.
    anon_kib: u64,
    file_kib: u64,
    apiserver_kib: u64,
    etcd_kib: u64,
    /// The floor's run at this size (issue 62), on a cluster of its own.
    floor: Option<floor::Floor>,
}

/// One reading of `/proc/<pid>/status`, in KiB.
struct Rss {
    resident: u64,
    peak: u64,
    /// Anonymous pages: the heap, stacks and other private memory.
    anonymous: u64,
    /// File-backed pages: the binary's code and data as far as they were touched.
    file: u64,
}

fn rss_kib(pid: u32) -> Rss {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Rss {
        resident: field("VmRSS:"),
        peak: field("VmHWM:"),
        anonymous: field("RssAnon:"),
        file: field("RssFile:"),
    }
}

/// User + system CPU seconds a process has used (`/proc/<pid>/stat`, clock ticks of 1/100 s).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name's closing parenthesis start at field 3; utime and stime
    // are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    ticks.iter().sum::<u64>() as f64 / 100.0
}

/// The operator binary measured: the one this bench was built with, or `LLSO_SCALE_OPERATOR`'s
/// (for example the static musl binary the image ships, from `scripts/build-static.sh`, whose
/// allocator is musl's).
fn operator_binary() -> std::path::PathBuf {
    std::env::var_os("LLSO_SCALE_OPERATOR").map_or_else(
        || env!("CARGO_BIN_EXE_llama-stack-operator").into(),
        std::path::PathBuf::from,
    )
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

/// Where the bytes of a stored stack go, per stack, as JSON (the form the operator's cache
/// decodes): the whole object, its `managedFields`, kubectl's last-applied copy, the providers
/// the server reported (`status.providers`) and the rest of the status.
async fn object_bytes(client: &kube::Client) -> String {
    let all = Made::from_env()
        .api(client)
        .list(&ListParams::default())
        .await
        .expect("list the stacks");
    let n = all.items.len().max(1);
    save_first_stack(&all.items);
    let size = |v: &serde_json::Value| serde_json::to_vec(v).map_or(0, |b| b.len());
    let (mut whole, mut managed, mut applied, mut providers, mut status) = (0, 0, 0, 0, 0);
    for item in &all.items {
        let value = serde_json::to_value(item).expect("JSON");
        whole += size(&value);
        managed += size(&value["metadata"]["managedFields"]);
        applied += size(
            &value["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        );
        providers += size(&value["status"]["distributionConfig"]["providers"]);
        // The operator's cache keeps providers' configs as digests: one must never be written.
        let text = value.to_string();
        assert!(
            !text.contains("$llsoConfigDigest"),
            "a config digest reached the API server: {text}"
        );
        status += size(&value["status"]);
    }
    format!(
        "bytes per stored stack (JSON): {} in all; managedFields {}, last-applied {}, status {} (of which providers {})",
        whole / n,
        managed / n,
        applied / n,
        status / n,
        providers / n
    )
}

/// Keeps the first stack as the API server served it at quiet (`target/scale-bench/stack-<n>.json`,
/// or `ogxserver-<n>.json`, n the run's size): what the operator's cache holds a copy of, for
/// measuring that copy.
fn save_first_stack(items: &[kube::api::DynamicObject]) {
    let Some(first) = items
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some(&stack_name(0)))
    else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/scale-bench");
    let prefix = match Made::from_env() {
        Made::Stacks => "stack",
        Made::OgxServers => "ogxserver",
    };
    let path = dir.join(format!("{prefix}-{}.json", items.len()));
    let saved = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, serde_json::to_vec_pretty(first).unwrap_or_default()));
    if let Err(e) = saved {
        println!("could not keep {}: {e}", path.display());
    }
}

/// Stacks Ready at their current generation, and of those, the ones whose status shows the
/// version their server reported.
async fn ready_count(client: &kube::Client) -> (usize, usize) {
    let made = Made::from_env();
    let Ok(list) = made.api(client).list(&ListParams::default()).await else {
        return (0, 0);
    };
    let ready: Vec<&serde_json::Value> = list
        .items
        .iter()
        .filter_map(|cr| {
            let status = cr.data.get("status")?;
            let observed = status["observedGeneration"].as_i64();
            (status["phase"] == "Ready" && observed == cr.metadata.generation).then_some(status)
        })
        .collect();
    let answered = ready
        .iter()
        .filter(|s| made.server_version(s).is_some())
        .count();
    (ready.len(), answered)
}

/// Polls `count` every `poll` until it reaches `n`; fails the run at `deadline`, saying how many
/// `what` there were.
async fn wait_for_all<F, Fut>(n: usize, what: &str, deadline: Instant, poll: Duration, count: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    loop {
        let now = count().await;
        if now >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{n}: only {now} {what} by the deadline"
        );
        tokio::time::sleep(poll).await;
    }
}

/// How often to list the stacks for readiness: every half second up to 250 stacks, then about
/// one listed stack per 2 ms of waiting.
fn ready_poll(n: usize) -> Duration {
    Duration::from_millis(500).max(Duration::from_millis(2 * n as u64))
}

/// The operator's writes in the stacks' namespace so far, as audit events.
fn namespace_writes(plane: &ControlPlane) -> Vec<serde_json::Value> {
    let mut all = plane.audit_writes(OPERATOR_USER).expect("audit log");
    all.retain(|w| w["objectRef"]["namespace"] == NAMESPACE);
    all
}

/// The operator's reads (get and list, its watches' lists among them; not the watches) so far, in
/// every namespace.
fn reads(plane: &ControlPlane) -> Vec<serde_json::Value> {
    plane.audit_reads().expect("audit log")
}

/// `reads` by verb and resource, most first: `get deployments 6000, ...`; a read of no resource
/// (discovery: `/api`, `/apis/ogx.io/v1beta1`) by its path.
fn reads_by_resource(reads: &[serde_json::Value]) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for read in reads {
        let verb = read["verb"].as_str().unwrap_or_default();
        let resource = read["objectRef"]["resource"]
            .as_str()
            .or_else(|| read["requestURI"].as_str())
            .unwrap_or_default();
        *counts.entry(format!("{verb} {resource}")).or_default() += 1;
    }
    most_first(counts, " ")
}

/// Counts as `what<between>n, ...`, the largest first (ties by name).
fn most_first(counts: std::collections::BTreeMap<String, usize>, between: &str) -> String {
    let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
        .iter()
        .map(|(what, n)| format!("{what}{between}{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The operator's writes in the stacks' namespace so far: (all, Events, status patches).
fn writes(plane: &ControlPlane) -> (usize, usize, usize) {
    let mine = namespace_writes(plane);
    let events = mine
        .iter()
        .filter(|w| w["objectRef"]["resource"] == "events")
        .count();
    let status = mine
        .iter()
        .filter(|w| w["objectRef"]["subresource"] == "status")
        .count();
    (mine.len(), events, status)
}

/// How many of the stacks' Deployments exist: a list of one item and the count of the rest, so
/// that polling costs the API server nothing like listing thousands of objects every second.
async fn deployment_count(client: &kube::Client) -> usize {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let Ok(first) = deployments
        .list_metadata(&ListParams::default().limit(1))
        .await
    else {
        return 0;
    };
    let more = first
        .metadata
        .continue_
        .as_deref()
        .is_some_and(|c| !c.is_empty());
    match first.metadata.remaining_item_count {
        Some(rest) => first.items.len() + usize::try_from(rest).unwrap_or(0),
        None if more => deployments
            .list_metadata(&ListParams::default())
            .await
            .map_or(0, |l| l.items.len()),
        None => first.items.len(),
    }
}

async fn node_ready(client: &kube::Client) -> bool {
    let nodes: Api<Node> = Api::all(client.clone());
    nodes.list(&ListParams::default()).await.is_ok_and(|l| {
        !l.items.is_empty()
            && l.items.iter().all(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
    })
}

/// The bench's stack `i`'s name (its spec: [`Made::manifest`]).
fn stack_name(i: usize) -> String {
    format!("stack-{i:04}")
}

async fn create_stacks(client: &kube::Client, n: usize, port: u16) {
    create_namespace(client, NAMESPACE)
        .await
        .expect("create namespace");
    let made = Made::from_env();
    for i in 0..n {
        made.create(client, i, port).await;
    }
}

/// Waits until the operator has written nothing for `window` (at most `limit`).
async fn wait_quiet(plane: &ControlPlane, window: Duration, limit: Duration) {
    let started = Instant::now();
    let mut last = writes(plane).0;
    let mut since = Instant::now();
    while since.elapsed() < window && started.elapsed() < limit {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = writes(plane).0;
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
}

/// Changes the operator's ConfigMap (every stack is reconciled again) and waits until the
/// reconciles counter shows all `n`; returns (time, reconciles).
async fn full_resync(client: &kube::Client, metrics: &str, n: usize) -> (Duration, f64) {
    let before = metric(metrics, "llso_reconciles_total").await;
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
    let started = Instant::now();
    let mut reconciles = 0.0;
    while started.elapsed() < Duration::from_secs(30 + n as u64 / 10) {
        reconciles = metric(metrics, "llso_reconciles_total").await - before;
        if reconciles >= n as f64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (started.elapsed(), reconciles)
}

async fn measure(
    plane: &ControlPlane,
    client: &kube::Client,
    operator: &OperatorProcess,
    n: usize,
    port: u16,
    windows: Windows,
    kwok: bool,
) -> Sample {
    let Windows {
        quiet: quiet_window,
        rest,
    } = windows;
    let pid = operator.child.id();
    // Let the operator finish starting (watches listed, caches filled) before the idle reading.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_idle_kib = rss_kib(pid).resident;
    let started = Instant::now();
    create_stacks(client, n, port).await;
    let created = started.elapsed();
    let deadline = deadline(started, n);
    wait_for_all(
        n,
        "Deployments",
        deadline,
        Duration::from_millis(500),
        || deployment_count(client),
    )
    .await;
    let deployments = started.elapsed();
    if kwok {
        // Reading readiness lists every stack whole (about 8 KiB each): at 3000 stacks every
        // half second that was 50 MB/s of JSON for the API server, which slowed what it measured.
        wait_for_all(n, "Ready", deadline, ready_poll(n), || async {
            ready_count(client).await.0
        })
        .await;
    }
    let converged = started.elapsed();
    wait_quiet(plane, quiet_window, Duration::from_secs(300)).await;
    let (writes_total, events, status_writes) = writes(plane);
    let reads_until_quiet = reads(plane);
    println!(
        "{n}: reads until quiet: {} ({:.1}/stack): {}",
        reads_until_quiet.len(),
        reads_until_quiet.len() as f64 / n as f64,
        reads_by_resource(&reads_until_quiet)
    );
    let writes_until_quiet = namespace_writes(plane);
    println!(
        "{n}: writes until quiet: {}",
        debug::writes_by_kind(&writes_until_quiet)
    );
    for line in debug::unusual_writes(&writes_until_quiet) {
        println!("{n}: {line}");
    }
    if debug::enabled() {
        debug::print_writes(plane, 0);
    }
    let (rest_reads, rest_writes) = match rest {
        Some(rest) => {
            tokio::time::sleep(rest).await;
            let at_rest = &reads(plane)[reads_until_quiet.len()..];
            println!(
                "{n}: reads in {} s at rest: {} ({:.2}/stack): {}",
                rest.as_secs(),
                at_rest.len(),
                at_rest.len() as f64 / n as f64,
                reads_by_resource(at_rest)
            );
            (Some(at_rest.len()), Some(writes(plane).0 - writes_total))
        }
        None => (None, None),
    };
    let reads_before_resync = reads(plane).len();
    let rss_quiet_kib = rss_kib(pid).resident;
    println!("{n}: {}", object_bytes(client).await);
    #[cfg(feature = "heap-profile")]
    {
        heap::dump(pid, &heap::path(n));
        println!("{}", heap::summary(&heap::path(n), n));
    }
    let (ready, answered) = if kwok {
        ready_count(client).await
    } else {
        (0, 0)
    };
    if answered < n && debug::enabled() {
        debug::print_unanswered(client).await;
    }
    let (resync, resync_reconciles) = full_resync(client, &operator.metrics, n).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let resync_writes = writes(plane).0.saturating_sub(writes_total);
    let all_reads = reads(plane);
    let resync_reads = &all_reads[reads_before_resync.min(all_reads.len())..];
    println!(
        "{n}: reads during the resync: {} ({:.1}/stack): {}",
        resync_reads.len(),
        resync_reads.len() as f64 / n as f64,
        reads_by_resource(resync_reads)
    );
    if resync_writes > 0 && debug::enabled() {
        debug::print_writes(plane, writes_total);
    }
    let after = rss_kib(pid);
    let component_kib = |name: &str| plane.pid(name).map_or(0, |p| rss_kib(p).resident);
    println!(
        "{n}: RSS after the resync {:.1} MiB: anonymous (heap, stacks) {:.1} MiB, file-backed (the binary's pages) {:.1} MiB",
        mib(after.resident),
        mib(after.anonymous),
        mib(after.file)
    );
    Sample {
        stacks: n,
        created,
        converged,
        writes: writes_total,
        events,
        status_writes,
        rss_idle_kib,
        rss_quiet_kib,
        resync,
        resync_reconciles,
        resync_writes,
        reads: reads_until_quiet.len(),
        resync_reads: resync_reads.len(),
        rest_reads,
        rest_writes,
        rss_resync_kib: after.resident,
        peak_kib: after.peak,
        node_ready: !kwok || node_ready(client).await,
        ready,
        answered,
        kwok,
        deployments,
        cpu_seconds: cpu_seconds(pid),
        anon_kib: after.anonymous,
        file_kib: after.file,
        apiserver_kib: component_kib("kube-apiserver"),
        etcd_kib: component_kib("etcd"),
        floor: None,
    }
}

/// Serves the stacks' v1alpha2 only, without conversion. With v1alpha1 served too, kube-apiserver
/// keeps a v1alpha1 watch cache whose every object goes through the operator's conversion
/// webhook, which this bench does not run (the operator is a process outside the cluster): the
/// API server then retried converting every stack every second, which took most of its CPU.
async fn serve_v1alpha2_only(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = "llamastackdistributions.llamastack.io";
    let mut crd = crds.get(name).await.expect("the CRD");
    crd.spec.conversion = serde_json::from_value(json!({"strategy": "None"})).ok();
    for version in &mut crd.spec.versions {
        version.served = version.name == "v1alpha2";
    }
    crds.replace(name, &PostParams::default(), &crd)
        .await
        .expect("serve v1alpha2 only");
}

/// A fresh test cluster serving the stacks' v1alpha2 only: with kwok (a node, its controllers)
/// or without.
fn bench_cluster(kwok: bool) -> (ControlPlane, tokio::runtime::Runtime, kube::Client) {
    let (plane, rt, client) = if kwok {
        start_cluster_with_crd()
    } else {
        start_with_crd()
    }
    .expect("the test cluster");
    rt.block_on(serve_v1alpha2_only(&client));
    (plane, rt, client)
}

/// How long `n` stacks' Deployments may take from `started` before the run fails.
fn deadline(started: Instant, n: usize) -> Instant {
    started + Duration::from_secs(60 + 3 * n as u64)
}

/// The namespace the operator runs in (its settings' ConfigMap is there).
async fn create_operator_namespace(client: &kube::Client) {
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": OPERATOR_NAMESPACE}}))
            .expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("operator namespace");
}

/// One size on a cluster and operator of its own, so that each figure is that size's alone.
fn run_size(
    n: usize,
    port: u16,
    windows: Windows,
    kwok: bool,
    starter: Option<&starter_image::StarterImage>,
) -> Sample {
    let (plane, rt, client) = bench_cluster(kwok);
    rt.block_on(create_operator_namespace(&client));
    if let Some(starter) = starter {
        rt.block_on(starter.name_for_this_operator(&client));
    }
    let kubeconfig = plane.operator_kubeconfig().expect("operator kubeconfig");
    #[cfg(feature = "heap-profile")]
    let profile = heap::path(n).display().to_string();
    #[cfg(feature = "heap-profile")]
    let env = [("LLSO_HEAP_PROFILE", profile.as_str())];
    #[cfg(not(feature = "heap-profile"))]
    let env = [];
    let operator = spawn_operator_with_env(
        &plane,
        &operator_binary(),
        "bench",
        &kubeconfig,
        &["--log-level=warn"],
        &env,
    )
    .expect("operator process");
    let sample = rt.block_on(measure(&plane, &client, &operator, n, port, windows, kwok));
    println!("{}", row(&sample));
    sample
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn row(s: &Sample) -> String {
    let n = s.stacks as f64;
    let ready = if s.kwok {
        format!("{:.1} s", s.converged.as_secs_f64())
    } else {
        "(no Pods)".to_owned()
    };
    let kwok = match (s.kwok, s.node_ready) {
        (false, _) => "off",
        (true, true) => "Ready",
        (true, false) => "NOT Ready",
    };
    let floor = s.floor.as_ref().map_or_else(String::new, |f| {
        format!(
            "{:.1} s ({:.2}×; its last write at {:.1} s)",
            f.deployments.as_secs_f64(),
            s.deployments.as_secs_f64() / f.deployments.as_secs_f64().max(0.001),
            f.done.as_secs_f64()
        )
    });
    let per_minute = AT_REST.as_secs_f64() / 60.0;
    let rest = s
        .rest_reads
        .map(|r| format!("{:.2}/stack/min", r as f64 / n / per_minute))
        .unwrap_or_default();
    format!(
        "| {} | {kwok} | {:.1} s | {:.1} s | {floor} | {ready} | {} ({:.1}/stack) | {} ({:.1}/stack) | {:.1}/stack | {} ({:.1}/stack) | {rest} | {:.1} MiB | {:.1} MiB | {} in {:.1} s | {} | {:.1}/stack | {:.1} MiB ({:.1} + {:.1}; peak {:.1}) | {:.1} s | {:.0} MiB | {:.0} MiB |",
        s.stacks,
        s.created.as_secs_f64(),
        s.deployments.as_secs_f64(),
        s.writes,
        s.writes as f64 / n,
        s.events,
        s.events as f64 / n,
        s.status_writes as f64 / n,
        s.reads,
        s.reads as f64 / n,
        mib(s.rss_idle_kib),
        mib(s.rss_quiet_kib),
        s.resync_reconciles,
        s.resync.as_secs_f64(),
        s.resync_writes,
        s.resync_reads as f64 / n,
        mib(s.rss_resync_kib),
        mib(s.anon_kib),
        mib(s.file_kib),
        mib(s.peak_kib),
        s.cpu_seconds,
        mib(s.apiserver_kib),
        mib(s.etcd_kib),
    )
}

fn table(samples: &[Sample]) -> String {
    let mut out = String::from(
        "| stacks | kwok node | created in | every Deployment after | the floor's (the operator's time as a multiple of it) | all Ready after | operator writes until quiet | of which Events | status patches | operator reads until quiet | reads at rest | RSS idle | RSS quiet | full resync: reconciles | resync writes | resync reads | RSS after resync (anonymous + file-backed) | operator CPU | kube-apiserver RSS | etcd RSS |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in samples {
        let _ = writeln!(out, "{}", row(s));
    }
    if let [first, .., last] = samples {
        let per_stack = (last.rss_resync_kib as f64 - first.rss_resync_kib as f64)
            / (last.stacks - first.stacks) as f64;
        let _ = writeln!(
            out,
            "\nRSS after a resync grows {per_stack:.1} KiB per additional stack from {} to {} stacks.",
            first.stacks, last.stacks
        );
    }
    out
}

fn write_outputs(samples: &[Sample], docs: bool) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = if docs {
        root.join("docs")
    } else {
        root.join("target/scale-bench")
    };
    std::fs::create_dir_all(&dir).expect("output directory");
    let mut points = vec![plot::Point {
        stacks: 0.0,
        rss_quiet: samples.first().map_or(0.0, |s| mib(s.rss_idle_kib)),
        rss_resync: samples.first().map_or(0.0, |s| mib(s.rss_idle_kib)),
        converged: 0.0,
    }];
    points.extend(samples.iter().map(|s| plot::Point {
        stacks: s.stacks as f64,
        rss_quiet: mib(s.rss_quiet_kib),
        rss_resync: mib(s.rss_resync_kib),
        converged: s.converged.as_secs_f64(),
    }));
    let svg = plot::svg("llama-stack-operator on a kwok cluster (2 cores)", &points);
    std::fs::write(dir.join("performance-scale.svg"), svg).expect("svg");
    std::fs::write(dir.join("performance-scale.md"), table(samples)).expect("table");
    println!("wrote {}/performance-scale.{{svg,md}}", dir.display());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let docs = args.iter().any(|a| a == "--write-docs");
    let sizes: Vec<usize> = match std::env::var("LLSO_SCALE_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|s| s.trim().parse().expect("LLSO_SCALE_SIZES: numbers"))
            .collect(),
        Err(_) if full => vec![100, 300, 1000],
        Err(_) => vec![3],
    };
    let windows = Windows {
        // Longer than the server-info probe's period (60 s): its re-reads must not write either.
        quiet: Duration::from_secs(if full { 70 } else { 20 }),
        // A minute at rest after quiet, whose reads are reported per stack (a full run only).
        rest: full.then_some(AT_REST),
    };
    println!(
        "operator binary: {}; making {}",
        operator_binary().display(),
        Made::from_env().plural()
    );
    let shared =
        support::shared_server::start().expect("the llama-stack server every stack reaches");
    let mut samples = Vec::new();
    let mut peers = Vec::new();
    let peer_binary = peer::binary();
    assert!(
        peer_binary.is_none() || Made::from_env() == Made::OgxServers,
        "LLSO_SCALE_PEER runs the OGX operator's manager: it needs LLSO_SCALE_KIND=ogx"
    );
    // OGXServers run the starter image a registry of the bench serves, for both operators.
    let starter = (Made::from_env() == Made::OgxServers).then(starter_image::StarterImage::serve);
    let mut broken = Vec::new();
    // Above this many stacks kwok stays off: one fake kubelet and kube-controller-manager on two
    // cores would measure themselves, not the operator.
    let kwok_max: usize = std::env::var("LLSO_SCALE_KWOK_MAX").map_or(3000, |v| {
        v.trim().parse().expect("LLSO_SCALE_KWOK_MAX: a number")
    });
    for &n in &sizes {
        let kwok = n <= kwok_max;
        let mut sample = run_size(n, shared.port, windows, kwok, starter.as_ref());
        let floor = floor::run(&operator_binary(), n, shared.port, kwok);
        println!(
            "{n}: the floor: every Deployment after {:.1} s, its last write at {:.1} s, {} writes",
            floor.deployments.as_secs_f64(),
            floor.done.as_secs_f64(),
            floor.writes
        );
        sample.floor = Some(floor);
        broken.extend(budget_violations(&sample));
        samples.push(sample);
        if let (Some(binary), Some(starter)) = (&peer_binary, &starter) {
            peers.push(peer::run(binary, starter, n, shared.port, windows, kwok));
        }
    }
    print!("{}", table(&samples));
    write_outputs(&samples, docs);
    if !peers.is_empty() {
        let side_by_side = peer::table(&samples, &peers);
        print!("{side_by_side}");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/scale-bench/side-by-side.md");
        if let Err(e) = std::fs::write(&path, side_by_side) {
            eprintln!("{}: {e}", path.display());
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// What a sample breaks of the promises: a healthy node, a complete resync without writes, and
/// the Event and write budgets.
fn budget_violations(s: &Sample) -> Vec<String> {
    let n = s.stacks;
    let per_stack = |count: usize| count as f64 / n as f64;
    let mut broken = Vec::new();
    let floor = s.floor.as_ref().expect("every size runs its floor");
    let objects = floor.objects;
    if floor.writes != floor::writes_per_stack(objects) * n {
        broken.push(format!(
            "{n}: the floor made {} writes, not {} a stack",
            floor.writes,
            floor::writes_per_stack(objects)
        ));
    }
    if !s.node_ready {
        broken.push(format!("{n}: the kwok node went NotReady"));
    }
    if s.kwok && s.answered < n {
        broken.push(format!(
            "{n}: only {} stacks show their server's version",
            s.answered
        ));
    }
    if s.resync_reconciles < n as f64 {
        broken.push(format!(
            "{n}: the resync reconciled only {} stacks",
            s.resync_reconciles
        ));
    }
    if s.resync_writes != 0 {
        broken.push(format!(
            "{n}: a resync of an unchanged cluster made {} writes",
            s.resync_writes
        ));
    }
    if per_stack(s.resync_reads) > MAX_RESYNC_READS_PER_STACK {
        broken.push(format!(
            "{n}: a resync read {:.2} objects per stack, budget {MAX_RESYNC_READS_PER_STACK}",
            per_stack(s.resync_reads)
        ));
    }
    if per_stack(s.events) > MAX_EVENTS_PER_STACK {
        broken.push(format!(
            "{n}: {:.2} Events per stack, budget {MAX_EVENTS_PER_STACK}",
            per_stack(s.events)
        ));
    }
    let max_writes = (objects + MAX_WRITES_BEYOND_THE_OBJECTS) as f64;
    if per_stack(s.writes) > max_writes {
        broken.push(format!(
            "{n}: {:.2} writes per stack, budget {max_writes} ({objects} objects)",
            per_stack(s.writes)
        ));
    }
    broken
}
