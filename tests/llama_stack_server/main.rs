//! Generated configs on the real servers of both lines, llama-stack 0.7.3 and OGX 1.3.0: each
//! case renders a spec over the line's starter config, starts the line's own `stack run` on it,
//! and checks `/v1/providers` and `/v1/models` against what the user
//! meant. A fake OpenAI-compatible upstream records the Authorization headers it receives, which
//! proves that each API key reaches its provider under the key the provider really reads.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use support::llama_stack::{self, ServerLine};

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use libtest_mimic::Failed;
use llama_stack_operator::api::v1alpha2::{LlamaStackDistribution, LlamaStackDistributionSpec};
use llama_stack_operator::stack_config::GeneratedConfig;
use llama_stack_operator::stack_config::env::EnvSource;
use serde_json::{Value, json};
use support::harness::{TestFn, run_suite};

mod releases;

/// An OpenAI-compatible upstream on loopback that records (path, Authorization) per request.
struct FakeUpstream {
    url: String,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl FakeUpstream {
    fn start() -> Result<Self, llama_stack::Error> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(match stream.try_clone() {
                    Ok(s) => s,
                    Err(_) => continue,
                });
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let mut auth = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("authorization")
                    {
                        auth = value.trim().to_owned();
                    }
                }
                if let Ok(mut seen) = log.lock() {
                    seen.push((path.clone(), auth));
                }
                let body = r#"{"object":"list","data":[{"id":"fake-model","object":"model","created":0,"owned_by":"test"}]}"#;
                let status = if path.ends_with("/models") {
                    "200 OK"
                } else {
                    "404 Not Found"
                };
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Ok(Self { url, seen })
    }

    fn auth_headers(&self) -> BTreeSet<String> {
        self.seen
            .lock()
            .map(|s| s.iter().map(|(_, a)| a.clone()).collect())
            .unwrap_or_default()
    }
}

struct Case {
    name: &'static str,
    /// The server line whose starter config the spec is generated over and whose server runs it.
    line: ServerLine,
    /// The spec; `{A}` and `{B}` in strings become the two fake upstream URLs.
    spec: Value,
    /// Providers the user configured, as the server must list them: (api, id, type).
    providers: &'static [(&'static str, &'static str, &'static str)],
    /// APIs that must not be served.
    absent_apis: &'static [&'static str],
    /// Model ids `/v1/models` must list.
    models: &'static [&'static str],
    /// Authorization headers upstream A and B must have seen.
    auth_a: Option<&'static str>,
    auth_b: Option<&'static str>,
}

fn sample(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/samples")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cr: Value =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    cr["spec"].clone()
}

/// What the us3 sample adds on a llama-stack 0.7 image, as its header says: the safety API
/// (removed in OGX, whose catalog image the sample names) and a shield.
fn with_safety(mut spec: Value) -> Value {
    spec["providers"]["safety"] = json!({"provider": "llama-guard"});
    spec["resources"]["shields"] = json!(["llama-guard"]);
    spec
}

fn with_endpoints(mut spec: Value, endpoints: &[(&str, usize, &str)]) -> Value {
    for (api, index, placeholder) in endpoints {
        let slot = &mut spec["providers"][*api];
        let target = if slot.is_array() {
            &mut slot[*index]
        } else {
            slot
        };
        target["endpoint"] = json!(placeholder);
    }
    spec
}

fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for line in [ServerLine::LlamaStack, ServerLine::Ogx] {
        let on = |name: &'static str, ogx_name: &'static str| match line {
            ServerLine::LlamaStack => name,
            ServerLine::Ogx => ogx_name,
        };
        all.push(Case {
            name: on("us1_minimal_inference", "ogx_us1_minimal_inference"),
            line,
            spec: with_endpoints(
                sample("v1alpha2_us1_minimal_inference.yaml"),
                &[("inference", 0, "{A}")],
            ),
            providers: &[("inference", "vllm", "remote::vllm")],
            absent_apis: &[],
            models: &["vllm/fake-model"],
            auth_a: Some("Bearer tok-vllm-credentials-token"),
            auth_b: None,
        });
        all.push(Case {
            name: on(
                "us2_multiple_providers_and_key_mapping",
                "ogx_us2_multiple_providers_and_key_mapping",
            ),
            line,
            spec: with_endpoints(
                json!({"providers": {"inference": [
                    {"id": "vllm-primary", "provider": "vllm", "apiKey": {"secretKeyRef": {"name": "vllm-creds", "key": "token"}}},
                    {"id": "openai-fallback", "provider": "openai", "apiKey": {"secretKeyRef": {"name": "openai-creds", "key": "key"}}}]}}),
                &[("inference", 0, "{A}"), ("inference", 1, "{B}")],
            ),
            providers: &[
                ("inference", "vllm-primary", "remote::vllm"),
                ("inference", "openai-fallback", "remote::openai"),
            ],
            absent_apis: &[],
            models: &["vllm-primary/fake-model", "openai-fallback/fake-model"],
            auth_a: Some("Bearer tok-vllm-creds-token"),
            auth_b: Some("Bearer tok-openai-creds-key"),
        });
        // The sample as written runs on OGX; on llama-stack 0.7 it adds what its header says.
        let us3 = sample("v1alpha2_us3_resources.yaml");
        let (us3, us3_providers): (Value, &'static [(&str, &str, &str)]) = match line {
            ServerLine::Ogx => (
                us3,
                &[
                    ("inference", "vllm-primary", "remote::vllm"),
                    ("inference", "vllm-large", "remote::vllm"),
                    ("tool_runtime", "brave-search", "remote::brave-search"),
                ],
            ),
            ServerLine::LlamaStack => (
                with_safety(us3),
                &[
                    ("inference", "vllm-primary", "remote::vllm"),
                    ("inference", "vllm-large", "remote::vllm"),
                    ("safety", "llama-guard", "inline::llama-guard"),
                    ("tool_runtime", "brave-search", "remote::brave-search"),
                ],
            ),
        };
        all.push(Case {
            name: on("us3_resources", "ogx_us3_resources"),
            line,
            spec: with_endpoints(us3, &[("inference", 0, "{A}"), ("inference", 1, "{B}")]),
            providers: us3_providers,
            absent_apis: &[],
            models: &[
                "vllm-primary/meta-llama/Llama-3.2-3B-Instruct",
                "vllm-large/meta-llama/Llama-3.3-70B-Instruct",
            ],
            auth_a: None,
            auth_b: None,
        });
        // Each line turns off APIs it has (OGX has no eval or scoring to turn off).
        let (disabled, absent): (Value, &'static [&str]) = match line {
            ServerLine::LlamaStack => (
                json!(["eval", "scoring", "postTraining"]),
                &["eval", "scoring"],
            ),
            ServerLine::Ogx => (
                json!(["batches", "toolRuntime"]),
                &["batches", "tool_runtime"],
            ),
        };
        all.push(Case {
            name: on(
                "disabled_apis_are_not_served",
                "ogx_disabled_apis_are_not_served",
            ),
            line,
            spec: with_endpoints(
                json!({"providers": {"inference": {"provider": "vllm"}}, "disabled": disabled}),
                &[("inference", 0, "{A}")],
            ),
            providers: &[("inference", "vllm", "remote::vllm")],
            absent_apis: absent,
            models: &[],
            auth_a: None,
            auth_b: None,
        });
    }
    all
}

fn render(case: &Case, a: &str, b: &str) -> Result<GeneratedConfig, Failed> {
    Ok(llama_stack::generate_over_starter(
        case.line,
        &case_spec(case, a, b)?,
    )?)
}

/// The case's spec with its upstreams' URLs, on the `starter` distribution.
fn case_spec(case: &Case, a: &str, b: &str) -> Result<LlamaStackDistributionSpec, Failed> {
    let text = case.spec.to_string().replace("{A}", a).replace("{B}", b);
    let mut spec: Value = serde_json::from_str(&text)?;
    spec["distribution"] = json!({"name": "starter"});
    let cr: LlamaStackDistribution = serde_json::from_value(json!({
        "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": case.name}, "spec": spec}))?;
    Ok(cr.spec)
}

/// Providers the config declares that the server must list: literal ids, and conditional
/// `${env.X:+id}` ones only when X is set.
fn expected_providers(
    config: &Value,
    env: &BTreeMap<String, String>,
) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for (api, list) in config["providers"].as_object().into_iter().flatten() {
        for p in list.as_array().into_iter().flatten() {
            let raw = p["provider_id"].as_str().unwrap_or_default();
            let id = match raw.strip_prefix("${env.").and_then(|r| r.split_once(":+")) {
                Some((var, id)) if env.contains_key(var) => id.trim_end_matches('}').to_owned(),
                Some(_) => continue,
                None => raw.to_owned(),
            };
            out.insert((
                api.clone(),
                id,
                p["provider_type"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    out
}

struct Env {
    /// The venv of each line, with what its cases' configs need.
    venvs: BTreeMap<ServerLine, PathBuf>,
    configs: Vec<(Case, GeneratedConfig, FakeUpstream, FakeUpstream)>,
    /// The other OGX releases, each with its venv.
    releases: Vec<releases::Release>,
}

fn run_case(env: &Env, index: usize) -> Result<(), Failed> {
    let (case, generated, a, b) = &env.configs[index];
    start_and_check(&env.venvs[&case.line], case, generated, a, b)
}

/// Starts the server of `venv` on `generated` and checks what it serves against `case`, and
/// what its upstreams saw.
fn start_and_check(
    venv: &std::path::Path,
    case: &Case,
    generated: &GeneratedConfig,
    a: &FakeUpstream,
    b: &FakeUpstream,
) -> Result<(), Failed> {
    let dir = tempfile::Builder::new().prefix("llso-lls-").tempdir()?;
    let config_path = dir.path().join("config.yaml");
    std::fs::write(&config_path, &generated.yaml)?;
    let vars: BTreeMap<String, String> = generated
        .env
        .iter()
        .map(|e| {
            let value = match &e.source {
                EnvSource::SecretKeyRef(r) => format!("tok-{}-{}", r.name, r.key),
                EnvSource::Value(v) => v.clone(),
                EnvSource::SecretUrlPart { .. } => String::new(),
            };
            (e.name.clone(), value)
        })
        .collect();
    let server = llama_stack::Server::start(
        venv,
        &config_path,
        &vars.clone().into_iter().collect::<Vec<_>>(),
        dir.path(),
    )?;
    let listed = server.get_json("/v1/providers")?;
    let actual: BTreeSet<(String, String, String)> = listed["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["api"].as_str().unwrap_or_default().to_owned(),
                p["provider_id"].as_str().unwrap_or_default().to_owned(),
                p["provider_type"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let config: Value = serde_saphyr::from_str(&generated.yaml)?;
    let expected = expected_providers(&config, &vars);
    if actual != expected {
        return Err(format!("the server lists other providers than the config declares:\nmissing {:?}\nextra {:?}\n{}",
            expected.difference(&actual).collect::<Vec<_>>(), actual.difference(&expected).collect::<Vec<_>>(), server.log_tail(20)).into());
    }
    for (api, id, ptype) in case.providers {
        let of_api: Vec<&(String, String, String)> =
            actual.iter().filter(|(a, _, _)| a == api).collect();
        if !of_api.iter().any(|(_, i, t)| i == id && t == ptype) {
            return Err(format!(
                "{api}: expected provider {id} ({ptype}), server lists {of_api:?}"
            )
            .into());
        }
        let user_count = case.providers.iter().filter(|(a, _, _)| a == api).count();
        if of_api.len() != user_count {
            return Err(format!("{api}: the user's providers must replace the distribution's; server lists {of_api:?}").into());
        }
    }
    for api in case.absent_apis {
        if actual.iter().any(|(a, _, _)| a == api) {
            return Err(format!("{api} is disabled but the server serves it").into());
        }
    }
    let models = server.get_json("/v1/models")?;
    let ids: BTreeSet<String> = models["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str().map(str::to_owned))
        .collect();
    for model in case.models {
        if !ids.contains(*model) {
            return Err(format!("/v1/models lacks {model}; it lists {ids:?}").into());
        }
    }
    for (upstream, expected) in [(a, case.auth_a), (b, case.auth_b)] {
        if let Some(expected) = expected {
            let seen = upstream.auth_headers();
            if !seen.contains(expected) {
                return Err(format!(
                    "upstream {} expected Authorization {expected:?}, saw {seen:?}",
                    upstream.url
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Every v1alpha2 sample that generates a config (all but `overrideConfig`), generated over each
/// line's starter config, passes that line's own reading of a config at start-up
/// (`test-support/src/validate_config.py`: the server's `StackConfig`, its API names, each
/// provider's config class), with its Secrets' variables set.
fn every_generating_sample_passes_each_lines_own_validation(env: &Env) -> Result<(), Failed> {
    let scratch = tempfile::tempdir()?;
    let mut checked = 0;
    let mut refused = Vec::new();
    for (name, cr) in generating_samples()? {
        for line in [ServerLine::LlamaStack, ServerLine::Ogx] {
            let generated = llama_stack::generate_over_starter(line, &cr.spec)
                .map_err(|e| format!("{name} on {line:?}: {e}"))?;
            let path = scratch
                .path()
                .join(format!("{name}-{}.yaml", line.as_str()));
            std::fs::write(&path, &generated.yaml)?;
            let variables = generated.env.iter().map(|e| e.name.clone());
            if let Some(said) = servers_verdict(env, line, &path, variables, scratch.path())? {
                refused.push(format!("{name} on {line:?}:\n{said}"));
            }
            checked += 1;
        }
    }
    if !refused.is_empty() {
        return Err(refused.join("\n").into());
    }
    // 9 samples generate today (us6 is overrideConfig); a sample set that shrank is a failure.
    if checked < 18 {
        return Err(format!("only {checked} configs checked").into());
    }
    Ok(())
}

/// The v1alpha2 samples (`deploy/samples`) that generate a config (all but `overrideConfig`),
/// by file stem.
fn generating_samples() -> Result<Vec<(String, LlamaStackDistribution)>, Failed> {
    let samples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/samples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&samples)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("v1alpha2_") && n.ends_with(".yaml"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let cr: LlamaStackDistribution = serde_saphyr::from_str(&std::fs::read_to_string(&file)?)?;
        if cr.spec.override_config.is_some() {
            continue;
        }
        let name = file
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        out.push((name.to_owned(), cr));
    }
    Ok(out)
}

/// Named PostgreSQL backends (the OGX operator's `storage.backends`, no `stores`) replace the
/// starter's storage, and each line's own validation takes the config: the server's stores and
/// every provider store on one of the two backends (the starter's and a vector store's
/// `persistence` moved off `kv_default`, which no longer exists), the password a variable.
fn named_postgres_backends_pass_each_lines_own_validation(env: &Env) -> Result<(), Failed> {
    let scratch = tempfile::tempdir()?;
    let spec: llama_stack_operator::api::v1alpha2::LlamaStackDistributionSpec =
        serde_json::from_value(json!({"distribution": {"name": "starter"},
            "providers": {"vectorIo": [{"id": "docs", "provider": "remote::milvus",
                "settings": {"uri": "http://milvus:19530", "token": "t"}}]},
            "storage": {"backends": {
                "pg_kv": {"type": "kv_postgres", "host": "pg.db", "user": "ogx",
                    "password": {"name": "pg", "key": "password"}},
                "pg_sql": {"type": "sql_postgres", "host": "pg.db", "user": "ogx",
                    "password": {"name": "pg", "key": "password"}, "poolSize": 4}}}}))?;
    let mut refused = Vec::new();
    for line in [ServerLine::LlamaStack, ServerLine::Ogx] {
        let generated = llama_stack::generate_over_starter(line, &spec)
            .map_err(|e| format!("on {line:?}: {e}"))?;
        if generated.yaml.contains("kv_default") || generated.yaml.contains("sql_default") {
            refused.push(format!("{line:?}: a default backend is still named"));
        }
        let path = scratch.path().join(format!("{line:?}.yaml"));
        std::fs::write(&path, &generated.yaml)?;
        let variables = generated.env.iter().map(|e| e.name.clone());
        if let Some(said) = servers_verdict(env, line, &path, variables, scratch.path())? {
            refused.push(format!("{line:?}: {said}"));
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(refused.join("\n").into())
    }
}

/// The OGX operator's own example of named PostgreSQL backends
/// (`tests/fixtures/ogx-operator/newer/runtime-config-storage-backends.yaml`, its docs at 2580c37)
/// starts the real OGX 1.3.0 server on a real PostgreSQL: the config generated from it over the
/// starter, the password given only as the backends' variable, the host, port, database and user
/// through the example's own `${env.POSTGRES_*}` substitutions. The server's registry is then in
/// the example's key-value table, and its SQL stores in that database.
fn the_ogx_operators_named_backends_example_runs_on_a_real_postgres(
    env: &Env,
) -> Result<(), Failed> {
    use llama_stack_operator::api::ogx::OGXServer;

    let text = std::fs::read_to_string(
        support::workspace_root()
            .join("tests/fixtures/ogx-operator/newer/runtime-config-storage-backends.yaml"),
    )?;
    let server: OGXServer = text
        .split("\n---\n")
        .find(|doc| doc.contains("kind: OGXServer"))
        .ok_or("no OGXServer in the example")
        .map(serde_saphyr::from_str)??;
    let generated = over_ogx_starter(&server)?;
    let dir = tempfile::Builder::new().prefix("llso-pg-").tempdir()?;
    let postgres = support::postgres::Postgres::start(dir.path())?;
    postgres.sql(
        "postgres",
        "CREATE ROLE ogx LOGIN PASSWORD 'example-password'",
    )?;
    postgres.sql("postgres", "CREATE DATABASE ogx OWNER ogx")?;
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, without_local_embeddings(&generated.yaml)?)?;
    let mut vars: Vec<(String, String)> = vec![
        ("POSTGRES_HOST".into(), "127.0.0.1".into()),
        ("POSTGRES_PORT".into(), postgres.port.to_string()),
    ];
    for variable in &generated.env {
        match &variable.source {
            EnvSource::SecretKeyRef(r) if r.name == "ogx-db" && r.key == "password" => {
                vars.push((variable.name.clone(), "example-password".into()));
            }
            other => return Err(format!("{}: unexpected variable {other:?}", variable.name).into()),
        }
    }
    if vars.len() != 4 {
        return Err(format!("one password variable per backend expected: {vars:?}").into());
    }
    let running =
        llama_stack::Server::start(&env.venvs[&ServerLine::Ogx], &config, &vars, dir.path())?;
    running.get_json("/v1/models")?;
    let tables = postgres.sql(
        "ogx",
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
    )?;
    let registry = postgres.sql(
        "ogx",
        "SELECT count(*) FROM ogx_kvstore WHERE key LIKE 'registry%'",
    )?;
    drop(running);
    if registry.trim().parse::<u32>().unwrap_or(0) == 0 {
        return Err(format!("no registry entry in ogx_kvstore; tables: {tables}").into());
    }
    for table in ["inference_store", "openai_conversations"] {
        if !tables.lines().any(|t| t == table) {
            return Err(format!("no {table} table in the database: {tables}").into());
        }
    }
    Ok(())
}

/// The OGX operator's own Praxis sample (`tests/fixtures/ogx-operator/newer/readme-praxis-selector.yaml`,
/// the RHOAI fork's README at 10e3e32) runs the real OGX 1.3.0 server behind Praxis as the
/// generated config says: a caller Praxis has not named (no `x-user-id`, or no `x-tenant-id`) is
/// refused, a named one served, and so is the operator's status read as it names itself;
/// `responses` is not served (Praxis answers it); a conversation one
/// caller creates is theirs alone, hidden from another tenant and from another user of the same
/// tenant.
fn the_ogx_operators_praxis_sample_trusts_praxis_headers_on_the_real_server(
    env: &Env,
) -> Result<(), Failed> {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::stack_config::{OPERATOR_CALLER, PRINCIPAL_HEADER, TENANT_HEADER};
    use support::llama_stack::http_request;

    let text = std::fs::read_to_string(
        support::workspace_root()
            .join("tests/fixtures/ogx-operator/newer/readme-praxis-selector.yaml"),
    )?;
    let server: OGXServer = serde_saphyr::from_str(&text)?;
    let generated = over_ogx_starter(&server)?;
    let dir = tempfile::Builder::new().prefix("llso-praxis-").tempdir()?;
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, without_local_embeddings(&generated.yaml)?)?;
    let running =
        llama_stack::Server::start(&env.venvs[&ServerLine::Ogx], &config, &[], dir.path())?;
    let call = |method: &str, path: &str, who: &[(&str, &str)], body: Option<&Value>| {
        http_request(method, &format!("{}{path}", running.url), who, body)
    };
    let alice = [(PRINCIPAL_HEADER, "alice"), (TENANT_HEADER, "team-a")];
    let carol = [(PRINCIPAL_HEADER, "carol"), (TENANT_HEADER, "team-a")];
    let bob = [(PRINCIPAL_HEADER, "bob"), (TENANT_HEADER, "team-b")];
    let mut wrong = Vec::new();
    let mut expect = |what: &str, got: (u16, String), want: u16| {
        if got.0 != want {
            wrong.push(format!("{what}: {} (want {want}) {}", got.0, got.1));
        }
    };
    expect(
        "no caller named",
        call("GET", "/v1/models", &[], None)?,
        401,
    );
    expect(
        "no tenant named",
        call("GET", "/v1/models", &[(PRINCIPAL_HEADER, "alice")], None)?,
        401,
    );
    expect(
        "a named caller",
        call("GET", "/v1/models", &alice, None)?,
        200,
    );
    // What the operator reads for the status: the version (public) and, named as the operator
    // names itself, the providers.
    expect("the version", call("GET", "/v1/version", &[], None)?, 200);
    expect(
        "the operator's read of the providers",
        call("GET", "/v1/providers", OPERATOR_CALLER, None)?,
        200,
    );
    expect(
        "responses, served by Praxis",
        call("GET", "/v1/responses", &alice, None)?,
        404,
    );
    let (code, body) = call("POST", "/v1/conversations", &alice, Some(&json!({})))?;
    let id = match (code, serde_json::from_str::<Value>(&body)) {
        (200, Ok(created)) => created["id"].as_str().unwrap_or_default().to_owned(),
        _ => return Err(format!("alice's conversation not created: {code} {body}").into()),
    };
    let path = format!("/v1/conversations/{id}");
    expect("the owner", call("GET", &path, &alice, None)?, 200);
    let other_tenant = call("GET", &path, &bob, None)?;
    let same_tenant = call("GET", &path, &carol, None)?;
    drop(running);
    for (who, (code, body)) in [
        ("another tenant", other_tenant),
        ("another user", same_tenant),
    ] {
        if code == 200 {
            wrong.push(format!("{who} read alice's conversation: {body}"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n").into())
    }
}

/// The config the operator generates for an `OGXServer` over OGX's starter (its models replacing
/// the starter's, as for every `OGXServer`).
fn over_ogx_starter(
    server: &llama_stack_operator::api::ogx::OGXServer,
) -> Result<GeneratedConfig, Failed> {
    use llama_stack_operator::ogx_server::to_model;
    use llama_stack_operator::stack_config::{
        ModelMerge, ProviderTable, generate_merging, parse_base,
    };
    let model = to_model(server).map_err(|e| e.to_string())?;
    let base = parse_base(llama_stack::starter_config(ServerLine::Ogx))?;
    Ok(generate_merging(
        &model.spec,
        &base,
        ProviderTable::ogx(),
        ModelMerge::Replace,
    )?)
}

/// `config` without the starter's `inline::sentence-transformers` provider and the vector store
/// defaults that name it: the image has torch, the suite's venv does not (nothing of it is under
/// test where this is used).
fn without_local_embeddings(config: &str) -> Result<String, Failed> {
    let mut config: Value = serde_saphyr::from_str(config)?;
    if let Some(list) = config["providers"]["inference"].as_array_mut() {
        list.retain(|p| p["provider_type"] != "inline::sentence-transformers");
    }
    if let Some(defaults) = config["vector_stores"].as_object_mut() {
        defaults.retain(|_, v| v["provider_id"] != "sentence-transformers");
    }
    Ok(serde_saphyr::to_string(&config)?)
}

/// A vector store named with only its address gets the default kv store as its `persistence`,
/// and each line's own validation takes the config (without it, both refuse: `persistence`
/// "Field required").
fn a_vector_store_without_persistence_passes_each_lines_own_validation(
    env: &Env,
) -> Result<(), Failed> {
    let scratch = tempfile::tempdir()?;
    let spec: llama_stack_operator::api::v1alpha2::LlamaStackDistributionSpec =
        serde_json::from_value(json!({"distribution": {"name": "starter"},
            "providers": {"vectorIo": [
                {"id": "docs", "provider": "remote::milvus",
                 "settings": {"uri": "http://milvus:19530", "token": "t"}},
                {"id": "notes", "provider": "remote::qdrant", "settings": {"url": "http://qdrant:6333"}}]}}))?;
    let mut refused = Vec::new();
    for line in [ServerLine::LlamaStack, ServerLine::Ogx] {
        let generated = llama_stack::generate_over_starter(line, &spec)
            .map_err(|e| format!("on {line:?}: {e}"))?;
        let config: Value = serde_saphyr::from_str(&generated.yaml)?;
        for (id, entry) in config["providers"]["vector_io"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p["provider_id"].as_str()?, p)))
            .filter(|(id, _)| ["docs", "notes"].contains(id))
        {
            // milvus starts empty (no starter has it); qdrant from the starter's own entry,
            // whose persistence is kept.
            let persistence = &entry["config"]["persistence"];
            let ok = match id {
                "docs" => {
                    *persistence == json!({"backend": "kv_default", "namespace": "vector_io::docs"})
                }
                _ => persistence["backend"] == "kv_default",
            };
            if !ok {
                refused.push(format!("{id} on {line:?}: {}", entry["config"]));
            }
        }
        let path = scratch.path().join(format!("{}.yaml", line.as_str()));
        std::fs::write(&path, &generated.yaml)?;
        let variables = generated.env.iter().map(|e| e.name.clone());
        if let Some(said) = servers_verdict(env, line, &path, variables, scratch.path())? {
            refused.push(format!("on {line:?}:\n{said}"));
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(refused.join("\n").into())
    }
}

/// An OpenAI-compatible upstream on loopback that speaks HTTPS and refuses every client
/// without a certificate of `ca`; it records the client certificate of each request it answers.
struct MutualTlsUpstream {
    url: String,
    client_certificates: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl MutualTlsUpstream {
    fn start(ca: &support::test_ca::TestCa) -> Result<Self, Failed> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(ca.pem.as_bytes())?)?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()?;
        let serving = ca.localhost(None)?;
        let chain = vec![CertificateDer::from_pem_slice(serving.cert.as_bytes())?];
        let key = PrivateKeyDer::from_pem_slice(serving.key.as_bytes())?;
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()?
                .with_client_cert_verifier(verifier)
                .with_single_cert(chain, key)?,
        );
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("https://localhost:{}/v1", listener.local_addr()?.port());
        let client_certificates = Arc::new(Mutex::new(Vec::new()));
        let seen = client_certificates.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let Ok(connection) = rustls::ServerConnection::new(config.clone()) else {
                    continue;
                };
                let mut tls = rustls::StreamOwned::new(connection, tcp);
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                // The headers, up to the blank line (the handshake happens on the first read).
                while !request.ends_with(b"\r\n\r\n") {
                    match std::io::Read::read(&mut tls, &mut byte) {
                        Ok(1) => request.push(byte[0]),
                        _ => break,
                    }
                }
                if !request.ends_with(b"\r\n\r\n") {
                    continue;
                }
                if let (Some(cert), Ok(mut seen)) = (
                    tls.conn.peer_certificates().and_then(|c| c.first()),
                    seen.lock(),
                ) {
                    seen.push(cert.to_vec());
                }
                let path = String::from_utf8_lossy(&request)
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let body = r#"{"object":"list","data":[{"id":"fake-model","object":"model","created":0,"owned_by":"test"}]}"#;
                let status = if path.ends_with("/models") {
                    "200 OK"
                } else {
                    "404 Not Found"
                };
                let _ = write!(
                    tls,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        });
        Ok(Self {
            url,
            client_certificates,
        })
    }
}

/// `networking.tls.clientIdentity` (an `OGXServer`'s `tls.identity`) on the real OGX 1.3.0
/// server: the generated config makes its vLLM provider present the mounted client certificate
/// to an upstream that refuses anyone without one, and the server lists the upstream's model.
/// The config runs as generated; only the mount directory is a temporary one here.
fn a_client_identity_is_presented_to_an_upstream_that_requires_one(
    env: &Env,
) -> Result<(), Failed> {
    use llama_stack_operator::stack_config::CLIENT_IDENTITY_DIR;
    let ca = support::test_ca::TestCa::new("llso-mtls-test-ca")?;
    let upstream = MutualTlsUpstream::start(&ca)?;
    let dir = tempfile::Builder::new().prefix("llso-mtls-").tempdir()?;
    let client = ca.client("llama-stack-server")?;
    let identity = dir.path().join("identity");
    std::fs::create_dir_all(&identity)?;
    std::fs::write(identity.join("tls.crt"), &client.cert)?;
    std::fs::write(identity.join("tls.key"), &client.key)?;
    let ca_file = dir.path().join("upstream-ca.crt");
    std::fs::write(&ca_file, &ca.pem)?;
    let spec: LlamaStackDistributionSpec = serde_json::from_value(json!({
        "distribution": {"name": "starter"},
        "networking": {"tls": {"clientIdentity": {"certificate": {"name": "client", "key": "tls.crt"},
                                                  "privateKey": {"name": "client", "key": "tls.key"}}}},
        "providers": {"inference": {"provider": "vllm", "id": "vllm", "endpoint": upstream.url,
                                    "settings": {"network": {"tls": {"verify": ca_file}}}}}
    }))?;
    let generated = llama_stack::generate_over_starter(ServerLine::Ogx, &spec)?;
    let yaml = generated
        .yaml
        .replace(CLIENT_IDENTITY_DIR, &identity.display().to_string());
    if yaml == generated.yaml {
        return Err(
            format!("the config names no file under {CLIENT_IDENTITY_DIR}:\n{yaml}").into(),
        );
    }
    let config_path = dir.path().join("config.yaml");
    std::fs::write(&config_path, &yaml)?;
    let server =
        llama_stack::Server::start(&env.venvs[&ServerLine::Ogx], &config_path, &[], dir.path())?;
    let models = server.get_json("/v1/models")?;
    let listed = models["data"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["id"] == "vllm/fake-model");
    let presented = upstream
        .client_certificates
        .lock()
        .map(|c| c.clone())
        .unwrap_or_default();
    let expected = rustls::pki_types::pem::PemObject::from_pem_slice(client.cert.as_bytes())
        .map(|der: rustls::pki_types::CertificateDer<'_>| der.to_vec())?;
    if !listed || !presented.contains(&expected) {
        return Err(format!(
            "models {models}; the upstream saw {} client certificates (the expected one: {})\n{}",
            presented.len(),
            presented.contains(&expected),
            server.log_tail(30)
        )
        .into());
    }
    // The upstream really refuses a client without a certificate.
    let out = std::process::Command::new(env.venvs[&ServerLine::Ogx].join("bin/python3"))
        .args([
            "-c",
            "import sys, httpx; httpx.get(sys.argv[1] + '/models', verify=sys.argv[2])",
        ])
        .args([&upstream.url, &ca_file.display().to_string()])
        .output()?;
    if out.status.success() {
        return Err("the upstream answered a client without a certificate".into());
    }
    Ok(())
}

/// What the line's server says of the config at `path` when it starts
/// (`test-support/src/validate_config.py`), with `variables` set: `None` when it accepts it,
/// else its words.
fn servers_verdict(
    env: &Env,
    line: ServerLine,
    path: &std::path::Path,
    variables: impl Iterator<Item = String>,
    home: &std::path::Path,
) -> Result<Option<String>, Failed> {
    verdict_of(
        &env.venvs[&line],
        llama_stack::python_package(line),
        &[path],
        variables,
        home,
    )
}

/// What the server of `venv` (its Python package `package`) says of the configs at `paths` when
/// it starts, in one run of `test-support/src/validate_config.py`, with `variables` set: `None`
/// when it accepts every one, else its words, naming the files.
fn verdict_of(
    venv: &std::path::Path,
    package: &str,
    paths: &[&std::path::Path],
    variables: impl Iterator<Item = String>,
    home: &std::path::Path,
) -> Result<Option<String>, Failed> {
    let script = support::workspace_root().join("test-support/src/validate_config.py");
    let out = std::process::Command::new(venv.join("bin/python3"))
        .arg(&script)
        .arg(package)
        .args(paths)
        .envs(variables.map(|name| (name, "x".to_owned())))
        .env("HOME", home)
        .output()?;
    Ok((!out.status.success()).then(|| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }))
}

/// The OGX operator's config-generator cases (`tests/fixtures/ogx-operator/configgen`, its
/// `cmd/configgen/testdata` at 1784464) before the OGX 1.3.0 server: every config this operator
/// generates from them is accepted, and the OGX operator's own expected configs are refused
/// exactly where `docs/ogx-server.md` says its generator writes what the server does not take
/// (provider types 1.x does not have, missing `persistence`, a `vector_index` without its
/// `type`, a postgres backend without `user`). `src/ogx_server/configgen_cases.rs` compares the
/// two configs field by field.
fn the_ogx_operators_configgen_cases_before_the_ogx_server(env: &Env) -> Result<(), Failed> {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::ogx_server::to_model;
    use llama_stack_operator::stack_config::{
        ModelMerge, ProviderTable, generate_merging, parse_base,
    };

    let root = support::workspace_root().join("tests/fixtures/ogx-operator/configgen");
    let scratch = tempfile::tempdir()?;
    let variables_of = |yaml: &str| -> Vec<String> {
        let re = regex::Regex::new(r"\$\{env\.([A-Z0-9_]+)\}").unwrap();
        re.captures_iter(yaml).map(|c| c[1].to_owned()).collect()
    };
    let (mut ours_refused, mut theirs_refused, mut generated) = (Vec::new(), BTreeSet::new(), 0);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    for dir in cases {
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(want) = std::fs::read_to_string(dir.join("want-config.yaml")) else {
            continue;
        };
        let theirs = scratch.path().join(format!("{case}-theirs.yaml"));
        std::fs::write(&theirs, &want)?;
        if servers_verdict(
            env,
            ServerLine::Ogx,
            &theirs,
            variables_of(&want).into_iter(),
            scratch.path(),
        )?
        .is_some()
        {
            theirs_refused.insert(case.clone());
        }
        let cr: OGXServer = serde_saphyr::from_str(&std::fs::read_to_string(dir.join("cr.yaml"))?)?;
        let model = to_model(&cr).map_err(|e| format!("{case}: {e}"))?;
        let base = parse_base(&std::fs::read_to_string(dir.join("base.yaml"))?)?;
        // Refusals are compared with the OGX operator's configs in the unit test.
        let Ok(config) = generate_merging(
            &model.spec,
            &base,
            ProviderTable::ogx(),
            ModelMerge::Replace,
        ) else {
            continue;
        };
        let ours = scratch.path().join(format!("{case}-ours.yaml"));
        std::fs::write(&ours, &config.yaml)?;
        let variables = config.env.iter().map(|e| e.name.clone());
        if let Some(said) = servers_verdict(env, ServerLine::Ogx, &ours, variables, scratch.path())?
        {
            ours_refused.push(format!("{case}: {said}"));
        }
        generated += 1;
    }
    if !ours_refused.is_empty() {
        return Err(ours_refused.join("\n").into());
    }
    let expected: BTreeSet<String> = [
        "p1-batches-config",
        "p1-filesearch-config",
        "p1-milvus-config",
        "p1-pgvector-config",
        "p1-qdrant-config",
        "p1-responses-config",
        "rh-override-storage",
    ]
    .map(str::to_owned)
    .into();
    if theirs_refused != expected {
        return Err(format!("the OGX operator's configs the server refuses: {theirs_refused:?}, documented: {expected:?}").into());
    }
    if generated < 14 {
        return Err(format!("only {generated} of ours checked").into());
    }
    Ok(())
}

fn prepare() -> Result<Env, llama_stack::Error> {
    let mut configs = Vec::new();
    let mut deps: BTreeMap<ServerLine, BTreeSet<String>> = BTreeMap::new();
    let mut bases = BTreeMap::new();
    for line in [ServerLine::LlamaStack, ServerLine::Ogx] {
        bases.insert(line, llama_stack::venv_of(line, &[])?);
    }
    let scratch = tempfile::tempdir()?;
    for case in cases() {
        let line = case.line;
        let (a, b) = (FakeUpstream::start()?, FakeUpstream::start()?);
        let generated = render(&case, &a.url, &b.url)
            .map_err(|e| format!("{}: {}", case.name, e.message().unwrap_or_default()))?;
        let path = scratch.path().join(format!("{}.yaml", case.name));
        std::fs::write(&path, &generated.yaml)?;
        deps.entry(line)
            .or_default()
            .extend(llama_stack::list_deps(&bases[&line], &path)?);
        configs.push((case, generated, a, b));
    }
    let mut venvs = BTreeMap::new();
    for line in [ServerLine::LlamaStack, ServerLine::Ogx] {
        let extra: Vec<String> = deps.remove(&line).unwrap_or_default().into_iter().collect();
        venvs.insert(line, llama_stack::venv_of(line, &extra)?);
    }
    let releases = releases::prepare().map_err(|e| e.message().unwrap_or_default().to_owned())?;
    Ok(Env {
        venvs,
        configs,
        releases,
    })
}

fn main() -> ExitCode {
    let mut tests: Vec<(String, TestFn<Env>)> = cases()
        .iter()
        .enumerate()
        .map(|(i, case)| {
            (
                case.name.to_owned(),
                Box::new(move |env: &Env| run_case(env, i)) as TestFn<Env>,
            )
        })
        .collect();
    for (index, name) in releases::names().into_iter().enumerate() {
        tests.push((
            name,
            Box::new(move |env: &Env| releases::takes_what_is_generated_for_it(env, index)),
        ));
    }
    tests.push((
        "every_generating_sample_passes_each_lines_own_validation".to_owned(),
        Box::new(every_generating_sample_passes_each_lines_own_validation),
    ));
    tests.push((
        "a_vector_store_without_persistence_passes_each_lines_own_validation".to_owned(),
        Box::new(a_vector_store_without_persistence_passes_each_lines_own_validation),
    ));
    tests.push((
        "the_ogx_operators_named_backends_example_runs_on_a_real_postgres".to_owned(),
        Box::new(the_ogx_operators_named_backends_example_runs_on_a_real_postgres),
    ));
    tests.push((
        "the_ogx_operators_praxis_sample_trusts_praxis_headers_on_the_real_server".to_owned(),
        Box::new(the_ogx_operators_praxis_sample_trusts_praxis_headers_on_the_real_server),
    ));
    tests.push((
        "named_postgres_backends_pass_each_lines_own_validation".to_owned(),
        Box::new(named_postgres_backends_pass_each_lines_own_validation),
    ));
    tests.push((
        "a_client_identity_is_presented_to_an_upstream_that_requires_one".to_owned(),
        Box::new(a_client_identity_is_presented_to_an_upstream_that_requires_one),
    ));
    tests.push((
        "the_ogx_operators_configgen_cases_before_the_ogx_server".to_owned(),
        Box::new(the_ogx_operators_configgen_cases_before_the_ogx_server),
    ));
    run_suite(
        tests,
        "llama-stack and OGX",
        || prepare().map_err(|e| e.to_string()),
        None,
    )
}
