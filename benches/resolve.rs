//! Resolver benchmark against real local registries (`cargo bench -p llama-stack-resolver`).
//! Reports: warm-cache resolve latency (p50/p99), cold resolve round trips and time per label
//! form, and memory per cached config (RSS growth over many distinct configs).
//! Without `--bench` (as under `cargo test --all-targets`) it runs one quick pass as a smoke test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::time::{Duration, Instant};

use base64::Engine;
use llama_stack_resolver::Keyring;
use llama_stack_resolver::{Catalog, Distribution, Resolver, ResolverOptions};
use support::oci::{Comp, Entry, ImageSpec, Layer, skopeo_copy, write_layout};
use support::registries::Registries;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(0)
        * 4096
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> Result<(), Error> {
    let full = std::env::args().any(|a| a == "--bench");
    let (cold_runs, warm_runs, cached_configs) = if full { (20, 20_000, 200) } else { (1, 100, 3) };
    let regs = Registries::start()?;
    let work = tempfile::tempdir()?;
    let plain = regs.plain.host.clone();
    let starter = include_str!("../configs/starter/config.yaml");
    // Returns the pushed image's digest.
    let push = |repo: &str, spec: ImageSpec| -> Result<String, Error> {
        let dir = work.path().join(repo.replace('/', "_"));
        let digest = write_layout(&dir, "v1", &[spec], false)?;
        skopeo_copy(
            &format!("oci:{}:v1", dir.display()),
            &format!("docker://{plain}/{repo}:v1"),
            &["--preserve-digests", "--dest-tls-verify=false"],
        )?;
        Ok(digest)
    };
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let base_layer = || Layer {
        entries: vec![Entry::File("/etc/os-release", b"ID=bench\n".to_vec())],
        comp: Comp::Gzip,
    };
    push(
        "bench/base64",
        ImageSpec {
            arch: "amd64",
            labels: vec![("io.llamastack.config.base64", b64(starter))],
            layers: vec![base_layer()],
        },
    )?;
    push(
        "bench/layer",
        ImageSpec {
            arch: "amd64",
            labels: vec![
                ("io.llamastack.config.layer", "{layer1}".into()),
                ("io.llamastack.config.path", "/app/config.yaml".into()),
            ],
            layers: vec![
                base_layer(),
                Layer {
                    entries: vec![Entry::File("/app/config.yaml", starter.as_bytes().to_vec())],
                    comp: Comp::Gzip,
                },
            ],
        },
    )?;
    skopeo_copy(
        &format!("docker://{plain}/bench/layer:v1"),
        &format!("docker://{plain}/bench/layer-zstd:v1"),
        &[
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            "--dest-compress",
            "--dest-compress-format",
            "zstd",
        ],
    )?;
    push(
        "bench/nolabels",
        ImageSpec {
            arch: "amd64",
            labels: vec![],
            layers: vec![base_layer()],
        },
    )?;

    let options = || {
        let mut o = ResolverOptions::new(Catalog::embedded().expect("catalog"));
        o.insecure_registries = vec![plain.clone()];
        o
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let keyring = Keyring::default();

    println!("cold resolve (fresh resolver, local registry), median of {cold_runs}:");
    for (form, distribution) in [
        (
            "base64 label",
            Distribution::Image(format!("{plain}/bench/base64:v1")),
        ),
        (
            "layer label (gzip)",
            Distribution::Image(format!("{plain}/bench/layer:v1")),
        ),
        (
            "layer label, zstd mirror copy (layer scan)",
            Distribution::Image(format!("{plain}/bench/layer-zstd:v1")),
        ),
        (
            "no labels (embedded config by name)",
            Distribution::Name("starter".into()),
        ),
    ] {
        let mut times = Vec::new();
        let mut requests = 0;
        for _ in 0..cold_runs {
            let mut o = options();
            if let Distribution::Name(_) = distribution {
                o.catalog = o.catalog.with_overrides(
                    &[("starter".to_owned(), format!("{plain}/bench/nolabels:v1"))].into(),
                );
            }
            let resolver = Resolver::new(o)?;
            let start = Instant::now();
            rt.block_on(resolver.resolve(&distribution, &keyring))
                .map_err(|e| e.to_string())?;
            times.push(start.elapsed());
            requests = resolver.registry_requests();
        }
        times.sort();
        println!(
            "  {form:<45} {requests} round trips, {:>8.2?}",
            percentile(&times, 0.5)
        );
    }

    let resolver = Resolver::new(options())?;
    let target = Distribution::Image(format!("{plain}/bench/layer:v1"));
    rt.block_on(resolver.resolve(&target, &keyring))
        .map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(warm_runs);
    for _ in 0..warm_runs {
        let start = Instant::now();
        rt.block_on(resolver.resolve(&target, &keyring))
            .map_err(|e| e.to_string())?;
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "warm-cache resolve over {warm_runs}: p50 {:.2?}, p99 {:.2?} (registry requests during the loop: {})",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        resolver.registry_requests() - 3
    );

    // The same with a signature policy: the image signed by the real cosign (both forms).
    let cosign = support::cosign::Cosign::start(&plain, "bench", "bench", &regs.ca_pem())?;
    let mut keys = Vec::new();
    keys.extend(llama_stack_resolver::signature::PublicKey::from_pem(
        "trusted",
        &std::fs::read(cosign.public_key("trusted"))?,
    )?);
    let signed = |o: &mut ResolverOptions| {
        o.signatures = std::sync::Arc::new(
            llama_stack_resolver::signature::SignaturePolicy::require_everywhere(
                keys.clone(),
                None,
            ),
        );
    };
    for (form, bundle) in [("simple signing", false), ("sigstore bundle", true)] {
        let repo = if bundle {
            "bench/signed-v3"
        } else {
            "bench/signed-v2"
        };
        let digest = push(
            repo,
            ImageSpec {
                arch: "amd64",
                labels: vec![("io.llamastack.config.base64", b64(starter))],
                layers: vec![base_layer()],
            },
        )?;
        cosign.sign(
            bundle,
            "trusted",
            &format!("{plain}/{repo}@{digest}"),
            None,
            true,
        )?;
        let target = Distribution::Image(format!("{plain}/{repo}:v1"));
        let mut times = Vec::new();
        let mut requests = 0;
        for _ in 0..cold_runs {
            let mut o = options();
            signed(&mut o);
            let resolver = Resolver::new(o)?;
            let start = Instant::now();
            rt.block_on(resolver.resolve(&target, &keyring))
                .map_err(|e| e.to_string())?;
            times.push(start.elapsed());
            requests = resolver.registry_requests();
        }
        times.sort();
        let mut o = options();
        signed(&mut o);
        let resolver = Resolver::new(o)?;
        rt.block_on(resolver.resolve(&target, &keyring))
            .map_err(|e| e.to_string())?;
        let mut warm = Vec::with_capacity(warm_runs);
        for _ in 0..warm_runs {
            let start = Instant::now();
            rt.block_on(resolver.resolve(&target, &keyring))
                .map_err(|e| e.to_string())?;
            warm.push(start.elapsed());
        }
        warm.sort();
        println!(
            "signature-verified, {form:<27} cold: {requests} round trips, {:>8.2?}; warm p50 {:.2?}, p99 {:.2?}",
            percentile(&times, 0.5),
            percentile(&warm, 0.5),
            percentile(&warm, 0.99)
        );
    }

    // Memory: many distinct starter-sized configs held in one resolver's caches.
    let resolver = Resolver::new(options())?;
    for i in 0..cached_configs {
        let config = format!("{starter}# bench copy {i}\n");
        push(
            &format!("bench/many{i}"),
            ImageSpec {
                arch: "amd64",
                labels: vec![("io.llamastack.config.base64", b64(&config))],
                layers: vec![base_layer()],
            },
        )?;
    }
    rt.block_on(resolver.resolve(
        &Distribution::Image(format!("{plain}/bench/many0:v1")),
        &keyring,
    ))
    .map_err(|e| e.to_string())?;
    let before = rss_bytes();
    for i in 1..cached_configs {
        rt.block_on(resolver.resolve(
            &Distribution::Image(format!("{plain}/bench/many{i}:v1")),
            &keyring,
        ))
        .map_err(|e| e.to_string())?;
    }
    let grown = rss_bytes().saturating_sub(before);
    println!(
        "memory: {} distinct configs of {} bytes cached; RSS grew {} KiB, {:.1} KiB per cached config (config, pinned image, last-known-good entry)",
        cached_configs - 1,
        starter.len(),
        grown / 1024,
        grown as f64 / 1024.0 / (cached_configs - 1).max(1) as f64
    );
    Ok(())
}
