//! The OGX operator beside this one (issue 62, item 5). With `LLSO_SCALE_KIND=ogx` and
//! `LLSO_SCALE_PEER=<manager binary>`, each size also runs that manager on a fresh cluster of the
//! same kind, with the same `OGXServer`s, as the same user (so the audit log counts its requests
//! as it counts this operator's), and measures it as the bench measures this operator: the time
//! to every Deployment, its writes an object until it is quiet (or until the same limit: it may
//! never be), its writes and reads in a minute at rest, its resident memory and CPU time.
//!
//! The bench builds nothing of the peer: whoever runs it builds the manager from the OGX
//! operator's source and names the commit in `LLSO_SCALE_PEER_COMMIT`, which the report prints.
//! The manager is started as its own Deployment would start it, outside a cluster: its namespace
//! in `OPERATOR_NAMESPACE`, leader election off, metrics and probes on loopback, and serving
//! certificates for the webhook server it always starts (no webhook configuration points at it).

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

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
            .env_remove("KUBERNETES_SERVICE_HOST"),
        &plane.dir().join("peer.log"),
    )
    .expect("the peer's manager");
    Peer { child, _tmp: tmp }
}

/// The peer at `n` OGXServers, on a cluster of its own.
pub fn run(
    binary: &std::path::Path,
    n: usize,
    port: u16,
    windows: Windows,
    kwok: bool,
) -> PeerSample {
    let (plane, rt, client) = bench_cluster(kwok);
    rt.block_on(create_operator_namespace(&client));
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
        println!("{n}: the peer: {}", row(&sample));
        sample
    })
}

/// One size's figures of the peer, as a sentence.
fn row(s: &PeerSample) -> String {
    let per_minute = AT_REST.as_secs_f64() / 60.0;
    format!(
        "every Deployment after {:.1} s; {} writes ({:.1} an object) {}; at rest {:.0} writes and {:.0} reads a minute; {} Ready; RSS {:.1} MiB; CPU {:.1} s",
        s.deployments.as_secs_f64(),
        s.writes,
        s.writes as f64 / s.stacks as f64,
        if s.quiet {
            "until quiet"
        } else {
            "in 300 s, never quiet"
        },
        s.rest_writes as f64 / per_minute,
        s.rest_reads as f64 / per_minute,
        s.ready,
        mib(s.rss_kib),
        s.cpu_seconds
    )
}

/// The side-by-side table: this operator's figures and the peer's, one pair of rows a size.
pub fn table(ours: &[super::Sample], peers: &[PeerSample]) -> String {
    use std::fmt::Write as _;
    let commit =
        std::env::var("LLSO_SCALE_PEER_COMMIT").unwrap_or_else(|_| "(commit not named)".to_owned());
    let per_minute = AT_REST.as_secs_f64() / 60.0;
    let mut out = format!(
        "\nSide by side with the peer (LLSO_SCALE_PEER, built from {commit}):\n\n\
         | OGXServers | operator | every Deployment | writes an object | writes a minute at rest | reads a minute at rest | RSS | CPU |\n\
         |---|---|---|---|---|---|---|---|\n"
    );
    for (s, p) in ours.iter().zip(peers) {
        let n = s.stacks as f64;
        let _ = writeln!(
            out,
            "| {} | this one | {:.1} s | {:.1} | {:.0} | {:.0} | {:.1} MiB (after a resync) | {:.1} s (with the resync) |",
            s.stacks,
            s.deployments.as_secs_f64(),
            s.writes as f64 / n,
            s.rest_writes.unwrap_or(0) as f64 / per_minute,
            s.rest_reads.unwrap_or(0) as f64 / per_minute,
            mib(s.rss_resync_kib),
            s.cpu_seconds
        );
        let _ = writeln!(
            out,
            "| {} | the peer | {:.1} s | {:.1}{} | {:.0} | {:.0} | {:.1} MiB | {:.1} s |",
            p.stacks,
            p.deployments.as_secs_f64(),
            p.writes as f64 / n,
            if p.quiet { "" } else { " (never quiet)" },
            p.rest_writes as f64 / per_minute,
            p.rest_reads as f64 / per_minute,
            mib(p.rss_kib),
            p.cpu_seconds
        );
    }
    out
}
