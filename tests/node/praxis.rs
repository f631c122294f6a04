//! The Praxis migration on the real node: the OGX operator's own example
//! (`tests/fixtures/ogx-operator/newer/praxis-migration-job.yaml`) runs on a real PostgreSQL, a
//! real OGX server writes conversations there through its Service, Praxis mode with the
//! migration is turned on, and the Job kubelet runs moves them into a second real PostgreSQL,
//! where they are read back. A first attempt against a target that cannot be reached fails and
//! stays, with its logs; mended, the next attempt runs once and is not made again.
//!
//! The image is the node suite's OGX 1.3.0 with `ogx migrate praxis` laid over it
//! (`scripts/build-test-images.sh ogx-praxis`: the midstream files of
//! `tests/fixtures/ogx-praxis-migrate`, and asyncpg), labelled `1.3.0+praxis` as a build of that
//! release. The example's `starter` is OGX 1.3.0 as released, which the operator refuses for the
//! migration, so the example runs that image instead.

use std::path::Path;
use std::time::Duration;

use libtest_mimic::Failed;
use serde_json::{Value, json};
use support::node::{NODE_IP, POD_SUBNET};
use support::postgres::Postgres;

use super::{Env, condition, registry_host, service_address, support, wait_phase_ready};

/// What the migration moves: two conversations, four items.
const CONVERSATIONS: usize = 2;
const ITEMS: usize = 4;

/// The example, in `ns`, running `image`, without its `praxisMode` (returned apart, to be
/// turned on once the server has data) and with small requests.
fn the_example(ns: &str, image: &str) -> Result<(Value, Value), Failed> {
    let text = std::fs::read_to_string(
        support::workspace_root()
            .join("tests/fixtures/ogx-operator/newer/praxis-migration-job.yaml"),
    )?;
    let mut server: Value = serde_saphyr::from_str(&text)?;
    assert_eq!(server["spec"]["distribution"], json!({"name": "starter"}));
    server["metadata"]["namespace"] = json!(ns);
    server["spec"]["distribution"] = json!({"image": image});
    server["spec"]["workload"] =
        json!({"resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}});
    let praxis = server["spec"]["praxisMode"].take();
    server["spec"]
        .as_object_mut()
        .ok_or("the example's spec")?
        .remove("praxisMode");
    Ok((server, praxis))
}

/// A PostgreSQL server the node's Pods reach (on the Pod bridge's gateway address), with
/// `database` owned by `user`.
fn database(dir: &Path, user: &str, password: &str, database: &str) -> Result<Postgres, Failed> {
    std::fs::create_dir_all(dir)?;
    let server = Postgres::start_on(dir, NODE_IP, Some(POD_SUBNET))?;
    server.sql(
        "postgres",
        &format!("CREATE ROLE {user} LOGIN PASSWORD '{password}'"),
    )?;
    server.sql(
        "postgres",
        &format!("CREATE DATABASE {database} OWNER {user}"),
    )?;
    Ok(server)
}

fn url(user: &str, password: &str, port: u16, database: &str) -> String {
    format!("postgresql://{user}:{password}@{NODE_IP}:{port}/{database}")
}

/// Applies Secret `ns/name` holding `url` under `url`.
fn secret(env: &Env, ns: &str, name: &str, url: &str) -> Result<(), Failed> {
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": ns}, "stringData": {"url": url}});
    env.kubectl(
        &["apply", "--server-side", "-f", "-"],
        Some(&secret.to_string()),
    )?;
    Ok(())
}

/// Writes the conversations through the server's API, as its users would.
fn converse(address: &str) -> Result<(), Failed> {
    let post = |path: &str, body: Value| -> Result<Value, Failed> {
        let (code, text) =
            support::llama_stack::http_post(&format!("http://{address}{path}"), &body)?;
        if code != 200 {
            return Err(format!("POST {path}: {code} {text}").into());
        }
        Ok(serde_json::from_str(&text)?)
    };
    let message =
        |role: &str, text: &str| json!({"type": "message", "role": role, "content": text});
    post(
        "/v1/conversations",
        json!({"items": [message("user", "hi"), message("assistant", "hello there")],
            "metadata": {"topic": "greeting"}}),
    )?;
    let second = post(
        "/v1/conversations",
        json!({"items": [message("user", "what is 2+2?")], "metadata": {"topic": "math"}}),
    )?;
    let id = second["id"].as_str().ok_or("no conversation id")?;
    post(
        &format!("/v1/conversations/{id}/items"),
        json!({"items": [message("assistant", "4")]}),
    )?;
    Ok(())
}

/// What the Pods of Job `ns/job` wrote, as `kubectl logs` would read it from the node.
fn job_logs(env: &Env, ns: &str, job: &str) -> Result<String, Failed> {
    let selector = format!("batch.kubernetes.io/job-name={job}");
    let pods = env.json(&["get", "pods", "-n", ns, "-l", &selector])?;
    let mut text = String::new();
    for pod in pods["items"].as_array().into_iter().flatten() {
        let pod = pod["metadata"]["name"].as_str().unwrap_or_default();
        text.push_str(&format!("--- {pod}\n{}", env.node.pod_logs(ns, pod)?));
    }
    Ok(text)
}

fn count(server: &Postgres, database: &str, sql: &str) -> Result<usize, Failed> {
    Ok(server.sql(database, sql)?.trim().parse()?)
}

/// The server's `status.migration`, once `done` says it is there.
fn migration_until(
    env: &Env,
    ns: &str,
    name: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Result<Value, Failed> {
    let mut last = Value::Null;
    // A Job's Pods each start Python twice (the dry run, the run); a failing one is retried
    // twice, with the Job controller's backoff between.
    let outcome = support::wait::poll_until(super::VERDICT, Duration::from_secs(2), what, || {
        last = env
            .json(&["get", "ogxserver", name, "-n", ns])
            .map_err(|e| format!("{e:?}"))?["status"]
            .clone();
        Ok::<bool, String>(done(&last["migration"]))
    });
    match outcome {
        Ok(()) => Ok(last),
        Err(e) => {
            let jobs = env.kubectl(&["get", "jobs,pods", "-n", ns, "-o", "wide"], None)?;
            let logs = job_logs(env, ns, &format!("{name}-praxis-migration")).unwrap_or_default();
            Err(format!("{e}\nstatus: {last:#}\n{jobs}\nlogs:\n{logs}").into())
        }
    }
}

pub(super) fn a_praxis_migration_job_moves_real_data_between_two_real_postgres_servers(
    env: &Env,
) -> Result<(), Failed> {
    let (ns, name) = ("e2e-praxis", "demo");
    let job = format!("{name}-praxis-migration");
    env.namespace(ns, registry_host(&env.images.praxis))?;
    let dir = tempfile::Builder::new().prefix("llso-praxis-").tempdir()?;
    let source = database(&dir.path().join("source"), "ogx", "ogx-password", "ogx")?;
    let target = database(
        &dir.path().join("target"),
        "praxis",
        "praxis-password",
        "praxis",
    )?;
    // Praxis makes its tables on its first request; the command makes none.
    let tables = std::fs::read_to_string(
        support::workspace_root().join("tests/fixtures/ogx-praxis-migrate/praxis-tables.sql"),
    )?;
    target.sql("praxis", &format!("SET ROLE praxis; {tables}"))?;
    secret(
        env,
        ns,
        "ogx-pg",
        &url("ogx", "ogx-password", source.port, "ogx"),
    )?;
    // First, a target nobody listens on.
    let closed = support::process::free_port()?;
    secret(
        env,
        ns,
        "praxis-pg",
        &url("praxis", "praxis-password", closed, "praxis"),
    )?;

    // The server on its PostgreSQL, and what its users say to it.
    let (server, mut praxis) = the_example(ns, &env.images.praxis)?;
    env.kubectl(&["create", "-f", "-"], Some(&server.to_string()))?;
    wait_phase_ready(env, "ogxserver", ns, name)?;
    converse(&service_address(env, ns, name)?)?;
    assert_eq!(
        count(&source, "ogx", "SELECT count(*) FROM openai_conversations")?,
        CONVERSATIONS
    );
    assert_eq!(
        count(&source, "ogx", "SELECT count(*) FROM conversation_items")?,
        ITEMS
    );

    // Praxis mode with the migration, as the example asks for it, with the fallbacks its
    // comments name: the server had no tenancy, so its rows name no tenant nor owner.
    praxis["migrationJob"]["fallbackTenant"] = json!("target-tenant");
    praxis["migrationJob"]["fallbackOwnerSubject"] = json!("target-owner");
    super::storage::patch_server(env, ns, name, &json!({"spec": {"praxisMode": praxis}}))?;

    // The target cannot be reached: the attempt fails (the Job controller's backoff), its Job
    // and Pods stay, and the status says where the logs are.
    let failed = migration_until(env, ns, name, "the first attempt failed", |m| {
        m["phase"] == "Failed"
    })?;
    let message = failed["migration"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("kubectl logs job/{job}")),
        "{message}"
    );
    assert_eq!(
        condition(&failed, "MigrationJobSucceeded")["reason"],
        "MigrationJobFailed"
    );
    let first = env.json(&["get", "job", &job, "-n", ns])?;
    let logs = job_logs(env, ns, &job)?;
    assert!(
        logs.contains(&closed.to_string()) || logs.to_lowercase().contains("connect"),
        "the logs say why: {logs}"
    );
    assert_eq!(
        count(
            &target,
            "praxis",
            "SELECT count(*) FROM openai_conversations"
        )?,
        0
    );

    // Mended: the Secret's new version is a new attempt; the failed Job goes first, then the
    // new one runs, once.
    secret(
        env,
        ns,
        "praxis-pg",
        &url("praxis", "praxis-password", target.port, "praxis"),
    )?;
    let validated = migration_until(env, ns, name, "the migration validated", |m| {
        m["phase"] == "Validated"
    })?;
    assert_ne!(
        validated["migration"]["attemptKey"],
        failed["migration"]["attemptKey"]
    );
    let second = env.json(&["get", "job", &job, "-n", ns])?;
    assert_ne!(second["metadata"]["uid"], first["metadata"]["uid"]);
    assert_eq!(
        condition(&validated, "MigrationValidated")["status"],
        "True"
    );
    assert_eq!(
        condition(&validated, "PraxisCutoverReady")["status"],
        "True"
    );

    // In the target, every conversation and item, with the fallbacks and the issuer.
    let by_fallback = "WHERE tenant_id = 'target-tenant' AND owner_subject = 'target-owner'";
    assert_eq!(
        count(
            &target,
            "praxis",
            &format!("SELECT count(*) FROM openai_conversations {by_fallback}")
        )?,
        CONVERSATIONS
    );
    assert_eq!(
        count(
            &target,
            "praxis",
            &format!("SELECT count(*) FROM openai_conversation_items {by_fallback}")
        )?,
        ITEMS
    );
    let topics = target.sql(
        "praxis",
        "SELECT metadata FROM openai_conversations ORDER BY metadata",
    )?;
    assert!(
        topics.contains("greeting") && topics.contains("math"),
        "{topics}"
    );
    let moved =
        "SELECT conversation_id, tenant_id, owner_subject, owner_issuer FROM openai_conversations";
    eprintln!("in Praxis's database:\n{}", target.sql("praxis", moved)?);
    assert_eq!(
        count(&source, "ogx", "SELECT count(*) FROM openai_conversations")?,
        CONVERSATIONS
    );

    // A reconcile more (a label), and a while: no other Job, nothing moved twice.
    env.kubectl(&["label", "ogxserver", name, "-n", ns, "again=1"], None)?;
    std::thread::sleep(Duration::from_secs(10));
    let jobs = env.json(&["get", "jobs", "-n", ns])?;
    let uids: Vec<&Value> = jobs["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|j| &j["metadata"]["uid"])
        .collect();
    assert_eq!(uids, [&second["metadata"]["uid"]]);
    let status = env.json(&["get", "ogxserver", name, "-n", ns])?["status"].clone();
    assert_eq!(status["migration"]["phase"], "Validated", "{status:#}");
    assert_eq!(
        count(
            &target,
            "praxis",
            "SELECT count(*) FROM openai_conversation_items"
        )?,
        ITEMS
    );
    Ok(())
}
