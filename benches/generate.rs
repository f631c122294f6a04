//! Config generation benchmark (`cargo bench --bench generate`): a typical CR and a large one
//! (50 providers, 500 models) on the embedded starter config, p50 and p99.
//! Without `--bench` (under `cargo test --all-targets`) it runs a few iterations as a smoke test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::time::{Duration, Instant};

use llama_stack_operator::api::v1alpha2::LlamaStackDistributionSpec;
use llama_stack_operator::stack_config::{ProviderTable, generate};
use serde_json::json;

fn measure(name: &str, spec: &LlamaStackDistributionSpec, iterations: usize) {
    // `cargo bench --bench generate -- --bench typical` measures only the cases named so.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    if filter.is_some_and(|f| !name.contains(&f)) {
        return;
    }
    // As the controller does: the base config parsed once (per digest), generation per reconcile.
    let base = llama_stack_resolver::embedded::embedded_base_config("starter")
        .expect("starter config")
        .expect("valid starter config");
    let table = ProviderTable::for_server(base.server.as_ref());
    let mut times: Vec<Duration> = Vec::with_capacity(iterations);
    let mut size = 0;
    for _ in 0..iterations {
        let start = Instant::now();
        let generated = generate(spec, &base, table).expect("generates");
        times.push(start.elapsed());
        size = generated.yaml.len();
    }
    times.sort();
    let p = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<40} p50 {:>9.2?}  p99 {:>9.2?}  ({iterations} runs, {size} bytes of config)",
        p(0.5),
        p(0.99)
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let typical: LlamaStackDistributionSpec = serde_json::from_value(json!({
        "distribution": {"name": "starter"},
        "providers": {
            "inference": [{"id": "vllm-primary", "provider": "vllm", "endpoint": "http://vllm:8000/v1", "apiKey": {"secretKeyRef": {"name": "v", "key": "t"}}},
                          {"id": "openai-fallback", "provider": "openai", "apiKey": {"secretKeyRef": {"name": "o", "key": "k"}}}],
            "safety": {"provider": "llama-guard"},
            "toolRuntime": {"provider": "brave-search", "apiKey": {"secretKeyRef": {"name": "b", "key": "k"}}}},
        "resources": {"models": ["meta-llama/Llama-3.2-3B-Instruct", {"name": "meta-llama/Llama-3.3-70B-Instruct", "provider": "vllm-primary"}],
                      "shields": ["llama-guard"], "tools": ["websearch"]},
        "storage": {"sql": {"type": "postgres", "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}},
        "disabled": ["eval"],
    }))
    .expect("typical spec");
    let providers: Vec<_> = (0..50)
        .map(|i| json!({"id": format!("vllm-{i}"), "provider": "vllm", "endpoint": format!("http://vllm-{i}:8000/v1"),
                        "apiKey": {"secretKeyRef": {"name": format!("s{i}"), "key": "token"}}, "settings": {"max_tokens": 4096}}))
        .collect();
    let models: Vec<_> = (0..500).map(|i| json!({"name": format!("model-{i}"), "provider": format!("vllm-{}", i % 50), "contextLength": 8192})).collect();
    let large: LlamaStackDistributionSpec = serde_json::from_value(json!({
        "distribution": {"name": "starter"},
        "providers": {"inference": providers},
        "resources": {"models": models},
    }))
    .expect("large spec");
    let (typical_runs, large_runs) = if full { (2000, 200) } else { (3, 1) };
    measure(
        "typical CR (3 APIs, 2 models, storage)",
        &typical,
        typical_runs,
    );
    measure("large CR (50 providers, 500 models)", &large, large_runs);
}
