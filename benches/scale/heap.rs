//! The operator's live heap at the quiet reading, by what holds it. Only in a build with the
//! `heap-profile` feature (`cargo bench --features heap-profile --bench scale -- --bench`): the
//! operator tracks every allocation (src/heap_profile.rs) and writes the live ones as DHAT JSON
//! when it gets SIGUSR2. Each live allocation site is put in the first category whose pattern
//! one of its frames contains, searching the categories in order, so the most specific holder
//! wins (a Deployment decoded inside the reflector is the LLSD cache's, not serde's).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// What holds the bytes, and the frames that show it, most specific first.
const CATEGORIES: &[(&str, &[&str])] = &[
    (
        "the server probe's last answers",
        &["controller::server_info", "ServerProbe"],
    ),
    ("the resolver's caches", &["llama_stack_resolver::"]),
    (
        "the LLSD watch cache (reflector store)",
        &["reflector::store", "reflector::reflector", "slim_cache"],
    ),
    (
        "per-stack controller state (scheduler, runner, the owned index, recent writes, Event series, prune marks)",
        &[
            "kube_runtime::controller",
            "kube_runtime::scheduler",
            "controller::memory::",
            "core::rollback",
        ],
    ),
    (
        "watch streams in flight (metadata watches, decode buffers)",
        &[
            "kube_runtime::watcher",
            "kube_client::client::Client::request_events",
        ],
    ),
    (
        "HTTP connections and TLS (hyper, h2, rustls)",
        &["hyper", "h2::", "rustls", "tower"],
    ),
    (
        "metrics registry",
        &["prometheus_client", "llama_stack_operator::metrics"],
    ),
    // Not `tracing` alone: every reconcile runs inside its `Instrumented` future, so that
    // would take every allocation a reconcile makes.
    ("logging", &["tracing_subscriber", "tracing_core"]),
    ("the async runtime (tokio)", &["tokio::"]),
];

/// Where the profile of the run with `stacks` stacks is written.
pub fn path(stacks: usize) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/scale-bench/heap-{stacks}.json"))
}

/// Sends SIGUSR2 to the operator and waits for the profile it writes to `path`.
pub fn dump(pid: u32, path: &Path) {
    let _ = std::fs::remove_file(path);
    let status = std::process::Command::new("kill")
        .args(["-USR2", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -USR2 {pid}: {status}");
    let started = Instant::now();
    let mut last = 0;
    // Written in one go at the end; a size that stops growing is a finished file.
    loop {
        std::thread::sleep(Duration::from_secs(2));
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        if size > 0 && size == last {
            break;
        }
        last = size;
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "no heap profile at {} after 10 minutes",
            path.display()
        );
    }
}

/// One category's live bytes and blocks.
#[derive(Default)]
struct Held {
    bytes: u64,
    blocks: u64,
}

/// The live heap of the profile at `path` by category, as a Markdown table, with the largest
/// uncategorised sites' frames after it (what a new category would need to name).
pub fn summary(path: &Path, stacks: usize) -> String {
    let text = std::fs::read_to_string(path).expect("the heap profile");
    let profile: serde_json::Value = serde_json::from_str(&text).expect("DHAT JSON");
    let frames: Vec<&str> = profile["ftbl"]
        .as_array()
        .expect("ftbl")
        .iter()
        .map(|f| f.as_str().unwrap_or(""))
        .collect();
    let mut held: BTreeMap<&str, Held> = BTreeMap::new();
    let mut unplaced: Vec<(u64, Vec<&str>)> = Vec::new();
    let mut total = Held::default();
    for site in profile["pps"].as_array().expect("pps") {
        let bytes = site["eb"].as_u64().unwrap_or(0);
        let blocks = site["ebk"].as_u64().unwrap_or(0);
        if bytes == 0 {
            continue;
        }
        let stack: Vec<&str> = site["fs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| frames.get(usize::try_from(i.as_u64()?).ok()?).copied())
            .collect();
        let category = CATEGORIES
            .iter()
            .find(|(_, patterns)| {
                stack
                    .iter()
                    .any(|frame| patterns.iter().any(|p| frame.contains(p)))
            })
            .map_or("other", |(name, _)| name);
        if category == "other" {
            unplaced.push((bytes, stack));
        }
        let entry = held.entry(category).or_default();
        entry.bytes += bytes;
        entry.blocks += blocks;
        total.bytes += bytes;
        total.blocks += blocks;
    }
    let mut rows: Vec<_> = held.into_iter().collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.1.bytes));
    let mut out = format!(
        "Live heap at the quiet reading, {stacks} stacks: {:.1} MiB in {} blocks\n\n| held by | MiB | KiB per stack | blocks | share |\n|---|---|---|---|---|\n",
        total.bytes as f64 / 1048576.0,
        total.blocks
    );
    for (name, h) in &rows {
        let _ = writeln!(
            out,
            "| {name} | {:.2} | {:.1} | {} | {:.0}% |",
            h.bytes as f64 / 1048576.0,
            h.bytes as f64 / 1024.0 / stacks.max(1) as f64,
            h.blocks,
            100.0 * h.bytes as f64 / total.bytes.max(1) as f64
        );
    }
    unplaced.sort_by_key(|site| std::cmp::Reverse(site.0));
    out.push_str("\nLargest uncategorised sites:\n");
    for (bytes, stack) in unplaced.iter().take(15) {
        let _ = writeln!(out, "- {} KiB:", bytes / 1024);
        for frame in stack.iter().filter(|f| !f.contains("alloc::")).take(14) {
            let _ = writeln!(out, "    {frame}");
        }
    }
    out
}
