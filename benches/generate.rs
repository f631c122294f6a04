//! Config generation benchmark (`cargo bench --bench generate`): a typical CR on each server line
//! (OGX 1.3.0's embedded starter config; llama-stack 0.7.3's starter, with the safety API OGX
//! removed) and a large one (50 providers, 500 models) on OGX, p50 and p99.
//! Without `--bench` (under `cargo test --all-targets`) it runs a few iterations as a smoke test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::time::{Duration, Instant};

use llama_stack_operator::api::v1alpha2::LlamaStackDistributionSpec;
use llama_stack_operator::stack_config::{ProviderTable, generate};
use llama_stack_resolver::base_config::{BaseConfig, ConfigSource, parse_base_config};
use llama_stack_test_support as support;
use serde_json::{Value, json};

fn measure(name: &str, spec: &LlamaStackDistributionSpec, base: &BaseConfig, iterations: usize) {
    // `cargo bench --bench generate -- --bench typical` measures only the cases named so.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    if filter.is_some_and(|f| !name.contains(&f)) {
        return;
    }
    // As the controller does: the base config parsed once (per digest), generation per reconcile.
    let table = ProviderTable::for_server(base.server.as_ref());
    let mut times: Vec<Duration> = Vec::with_capacity(iterations);
    let mut size = 0;
    for _ in 0..iterations {
        let start = Instant::now();
        let generated = generate(spec, base, table).expect("generates");
        times.push(start.elapsed());
        size = generated.yaml.len();
    }
    times.sort();
    let p = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<58} p50 {:>9.2?}  p99 {:>9.2?}  ({iterations} runs, {size} bytes of config)",
        p(0.5),
        p(0.99)
    );
}

/// A typical CR: two inference providers, a tool runtime, models, SQL storage, and on
/// llama-stack a safety provider with its shield (OGX removed that API).
fn typical(with_safety: bool) -> LlamaStackDistributionSpec {
    let mut spec = json!({
        "distribution": {"name": "starter"},
        "providers": {
            "inference": [{"id": "vllm-primary", "provider": "vllm", "endpoint": "http://vllm:8000/v1", "apiKey": {"secretKeyRef": {"name": "v", "key": "t"}}},
                          {"id": "openai-fallback", "provider": "openai", "apiKey": {"secretKeyRef": {"name": "o", "key": "k"}}}],
            "toolRuntime": {"provider": "brave-search", "apiKey": {"secretKeyRef": {"name": "b", "key": "k"}}}},
        "resources": {"models": ["meta-llama/Llama-3.2-3B-Instruct", {"name": "meta-llama/Llama-3.3-70B-Instruct", "provider": "vllm-primary"}],
                      "tools": ["websearch"]},
        "storage": {"sql": {"type": "postgres", "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}},
    });
    if with_safety {
        spec["providers"]["safety"] = json!({"provider": "llama-guard"});
        spec["resources"]["shields"] = json!(["llama-guard"]);
        spec["disabled"] = json!(["eval"]);
    }
    serde_json::from_value(spec).expect("typical spec")
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let ogx = llama_stack_resolver::embedded_base_config("starter")
        .expect("starter config")
        .expect("valid starter config");
    let llama_stack = parse_base_config(
        support::llama_stack::STARTER_CONFIG.as_bytes(),
        None,
        ConfigSource::Embedded,
    )
    .expect("llama-stack 0.7.3 starter config");
    let providers: Vec<Value> = (0..50)
        .map(|i| json!({"id": format!("vllm-{i}"), "provider": "vllm", "endpoint": format!("http://vllm-{i}:8000/v1"),
                        "apiKey": {"secretKeyRef": {"name": format!("s{i}"), "key": "token"}}, "settings": {"max_tokens": 4096}}))
        .collect();
    let models: Vec<Value> = (0..500).map(|i| json!({"name": format!("model-{i}"), "provider": format!("vllm-{}", i % 50), "contextLength": 8192})).collect();
    let large: LlamaStackDistributionSpec = serde_json::from_value(json!({
        "distribution": {"name": "starter"},
        "providers": {"inference": providers},
        "resources": {"models": models},
    }))
    .expect("large spec");
    let (typical_runs, large_runs) = if full { (2000, 200) } else { (3, 1) };
    measure(
        "typical CR, OGX 1.3.0 (2 APIs, 2 models, storage)",
        &typical(false),
        &ogx,
        typical_runs,
    );
    measure(
        "typical CR, llama-stack 0.7.3 (3 APIs, 2 models, storage)",
        &typical(true),
        &llama_stack,
        typical_runs,
    );
    measure(
        "large CR, OGX 1.3.0 (50 providers, 500 models)",
        &large,
        &ogx,
        large_runs,
    );
}
