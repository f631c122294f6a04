//! The OGX operator beside this one (issue 62, item 5). With `LLSO_SCALE_KIND=ogx` and
//! `LLSO_SCALE_PEER=<manager binary>`, each size also runs that manager on a fresh cluster of the
//! same kind, with the same `OGXServer`s, as the same user (so the audit log counts its requests
//! as it counts this operator's), and measures it as the bench measures this operator: the time
//! to every Deployment, its writes an object until it is quiet (or until the same limit: it may
//! never be), its writes and reads in a minute at rest, its resident memory and CPU time.
//!
//! The bench builds nothing of the peer: whoever runs it builds the manager from the OGX
//! operator's source, names the commit in `LLSO_SCALE_PEER_COMMIT` (the report prints it) and
//! the source's `controllers/manifests` in `LLSO_SCALE_PEER_MANIFESTS`.
//! The manager is started as its own Deployment would start it, outside a cluster: its namespace
//! in `OPERATOR_NAMESPACE`, leader election off, metrics and probes on loopback, and serving
//! certificates for the webhook server it always starts (no webhook configuration points at it).
//! Its `ogx-operator-config` names the starter image the bench's registry serves
//! (`starter_image.rs`), as this operator's settings do.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::starter_image::StarterImage;
use super::support::control_plane::ControlPlane;
use super::support::operator::{OPERATOR_NAMESPACE, webhook_certificates};
use super::support::process::{free_port, spawn_tied};
use super::{
    AT_REST, Windows, bench_cluster, cpu_seconds, create_operator_namespace, create_stacks,
    deadline, deployment_count, mib, reads, reads_by_resource, ready_count, rss_kib, wait_quiet,
    writes,
};

/// The peer's manager binary, if the run names one.
pub fn binary() -> Option<PathBuf> {
    std::env::var_os("LLSO_SCALE_PEER").map(PathBuf::from)
}

/// The manifests the manager renders each server from (`controllers/manifests` of its source,
/// `/manifests` in its image, read relative to its working directory): `LLSO_SCALE_PEER_MANIFESTS`.
fn manifests() -> PathBuf {
    let dir = std::env::var_os("LLSO_SCALE_PEER_MANIFESTS")
        .map(PathBuf::from)
        .expect(
            "LLSO_SCALE_PEER_MANIFESTS: the controllers/manifests directory of the peer's source",
        );
    assert!(
        dir.join("base/kustomization.yaml").is_file(),
        "LLSO_SCALE_PEER_MANIFESTS={}: no base/kustomization.yaml there",
        dir.display()
    );
    dir
}

/// What the peer measured at one size.
pub struct PeerSample {
    pub stacks: usize,
    pub deployments: Duration,
    /// Its writes in the stacks' namespace until quiet or the limit, and whether it was quiet.
    pub writes: usize,
    pub quiet: bool,
    /// Its writes and reads in [`AT_REST`] after that.
    pub rest_writes: usize,
    pub rest_reads: usize,
    /// OGXServers whose status says Ready at the end.
    pub ready: usize,
    pub rss_kib: u64,
    pub cpu_seconds: f64,
}

/// The manager process; killed on drop.
struct Peer {
    child: Child,
    _tmp: tempfile::TempDir,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(plane: &ControlPlane, binary: &std::path::Path) -> Peer {
    let kubeconfig = plane.operator_kubeconfig().expect("operator kubeconfig");
    // controller-runtime's webhook server reads its certificates from
    // $TMPDIR/k8s-webhook-server/serving-certs.
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let certs = tmp.path().join("k8s-webhook-server/serving-certs");
    std::fs::create_dir_all(&certs).expect("the certificates' directory");
    webhook_certificates(&certs).expect("serving certificates");
    // Its working directory holds `manifests/`, as its image's `/` does.
    std::os::unix::fs::symlink(manifests(), tmp.path().join("manifests"))
        .expect("the manifests' link");
    let metrics = free_port().expect("a port");
    let probes = free_port().expect("a port");
    let child = spawn_tied(
        Command::new(binary)
            .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
            .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
            .arg("--leader-elect=false")
            .env("KUBECONFIG", &kubeconfig)
            .env("OPERATOR_NAMESPACE", OPERATOR_NAMESPACE)
            .env("TMPDIR", tmp.path())
            .current_dir(tmp.path())
            .env_remove("KUBERNETES_SERVICE_HOST"),
        &plane.dir().join("peer.log"),
    )
    .expect("the peer's manager");
    Peer { child, _tmp: tmp }
}

/// The peer at `n` OGXServers, on a cluster of its own.
pub fn run(
    binary: &std::path::Path,
    starter: &StarterImage,
    n: usize,
    port: u16,
    windows: Windows,
    kwok: bool,
) -> PeerSample {
    let (plane, rt, client) = bench_cluster(kwok);
    rt.block_on(create_operator_namespace(&client));
    rt.block_on(starter.name_for_the_peer(&client));
    let mut peer = spawn(&plane, binary);
    let pid = peer.child.id();
    rt.block_on(async {
        // As for this operator: let it start (caches filled) before the first create.
        tokio::time::sleep(Duration::from_secs(3)).await;
        if let Ok(Some(status)) = peer.child.try_wait() {
            panic!(
                "the peer exited at start ({status}): {}",
                plane.dir().join("peer.log").display()
            );
        }
        let started = Instant::now();
        create_stacks(&client, n, port).await;
        let deadline = deadline(started, n);
        while deployment_count(&client).await < n {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(plane.dir().join("peer.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(40).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                panic!(
                    "{n}: only {} Deployments (the peer) by the deadline; its log ends:\n{}",
                    deployment_count(&client).await,
                    tail.join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let deployments = started.elapsed();
        let limit = Duration::from_secs(300);
        let quiet_from = Instant::now();
        wait_quiet(&plane, windows.quiet, limit).await;
        let quiet = quiet_from.elapsed() < limit;
        let until_quiet = writes(&plane).0;
        let reads_before = reads(&plane).len();
        let rest = windows.rest.unwrap_or(AT_REST);
        tokio::time::sleep(rest).await;
        let rest_writes = writes(&plane).0 - until_quiet;
        let all_reads = reads(&plane);
        let at_rest = &all_reads[reads_before.min(all_reads.len())..];
        println!(
            "{n}: the peer's reads in {} s at rest: {}: {}",
            rest.as_secs(),
            at_rest.len(),
            reads_by_resource(at_rest)
        );
        let sample = PeerSample {
            stacks: n,
            deployments,
            writes: until_quiet,
            quiet,
            rest_writes,
            rest_reads: at_rest.len(),
            ready: ready_count(&client).await.0,
            rss_kib: rss_kib(pid).resident,
            cpu_seconds: cpu_seconds(pid),
        };
        println!("{n}: the peer:\n{HEADER}{}", Figures::peer(&sample).row());
        sample
    })
}

/// One operator's figures at one size, as the side-by-side table prints them.
struct Figures {
    operator: &'static str,
    stacks: usize,
    deployments: Duration,
    writes: usize,
    /// Whether its writes were counted until quiet (or only until the limit).
    quiet: bool,
    /// Writes and reads in the window at rest (`None`: not measured).
    rest_writes: Option<usize>,
    rest_reads: Option<usize>,
    ready: Option<usize>,
    rss_kib: u64,
    rss_when: &'static str,
    cpu_seconds: f64,
    cpu_when: &'static str,
}

impl Figures {
    fn ours(s: &super::Sample) -> Self {
        Figures {
            operator: "this one",
            stacks: s.stacks,
            deployments: s.deployments,
            writes: s.writes,
            quiet: true,
            rest_writes: s.rest_writes,
            rest_reads: s.rest_reads,
            ready: s.kwok.then_some(s.ready),
            rss_kib: s.rss_resync_kib,
            rss_when: " (after a resync)",
            cpu_seconds: s.cpu_seconds,
            cpu_when: " (with the resync)",
        }
    }

    fn peer(p: &PeerSample) -> Self {
        Figures {
            operator: "the peer",
            stacks: p.stacks,
            deployments: p.deployments,
            writes: p.writes,
            quiet: p.quiet,
            rest_writes: Some(p.rest_writes),
            rest_reads: Some(p.rest_reads),
            ready: Some(p.ready),
            rss_kib: p.rss_kib,
            rss_when: "",
            cpu_seconds: p.cpu_seconds,
            cpu_when: "",
        }
    }

    fn row(&self) -> String {
        let per_minute = |count: Option<usize>| {
            count.map_or_else(
                || "not measured".to_owned(),
                |c| format!("{:.0}", c as f64 / (AT_REST.as_secs_f64() / 60.0)),
            )
        };
        format!(
            "| {} | {} | {:.1} s | {:.1}{} | {} | {} | {} | {:.1} MiB{} | {:.1} s{} |",
            self.stacks,
            self.operator,
            self.deployments.as_secs_f64(),
            self.writes as f64 / self.stacks as f64,
            if self.quiet { "" } else { " (never quiet)" },
            per_minute(self.rest_writes),
            per_minute(self.rest_reads),
            self.ready
                .map_or_else(|| "not counted".to_owned(), |r| r.to_string()),
            mib(self.rss_kib),
            self.rss_when,
            self.cpu_seconds,
            self.cpu_when,
        )
    }
}

const HEADER: &str = "| OGXServers | operator | every Deployment | writes an object | writes a minute at rest | reads a minute at rest | Ready | RSS | CPU |\n\
                      |---|---|---|---|---|---|---|---|---|\n";

/// The side-by-side table: this operator's figures and the peer's, one pair of rows a size.
pub fn table(ours: &[super::Sample], peers: &[PeerSample]) -> String {
    let commit =
        std::env::var("LLSO_SCALE_PEER_COMMIT").unwrap_or_else(|_| "(commit not named)".to_owned());
    let mut out =
        format!("\nSide by side with the peer (LLSO_SCALE_PEER, built from {commit}):\n\n{HEADER}");
    for (s, p) in ours.iter().zip(peers) {
        out.push_str(&Figures::ours(s).row());
        out.push('\n');
        out.push_str(&Figures::peer(p).row());
        out.push('\n');
    }
    out
}
