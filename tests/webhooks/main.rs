//! The conversion and validating webhooks, called over TLS by a real kube-apiserver.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

mod differential;

use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use libtest_mimic::Failed;
use llama_stack_operator::webhook::live_catalog::LiveCatalog;
use llama_stack_operator::webhook::{WebhookServer, WebhookState, serve};
use llama_stack_resolver::Catalog;
use serde_json::{Value, json};
use support::admission::{self, Outcome};
use support::control_plane::{ControlPlane, committed_crd, committed_ogx_crd, install_crd};
use support::harness::{run_suite, table};
use support::kube_objects::{create_namespace, llsd_api, ogx_server_api as ogx_api};
use support::test_ca::TestCa;

struct Env {
    plane: ControlPlane,
    client: kube::Client,
    rt: tokio::runtime::Runtime,
    server: WebhookServer,
    dir: tempfile::TempDir,
    ca: TestCa,
}

type Test = fn(&Env) -> Result<(), Failed>;

fn api(env: &Env, ns: &str, version: &str) -> Api<DynamicObject> {
    llsd_api(&env.client, ns, &format!("llamastack.io/{version}"))
}

fn namespace(env: &Env, name: &str) -> Result<String, Failed> {
    env.rt.block_on(create_namespace(&env.client, name))?;
    Ok(name.to_owned())
}

fn create(env: &Env, ns: &str, object: Value) -> Result<Value, kube::Error> {
    let version = object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("llamastack.io/")
        .to_owned();
    let obj: DynamicObject = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
    let created = env
        .rt
        .block_on(api(env, ns, &version).create(&PostParams::default(), &obj))?;
    serde_json::to_value(created).map_err(kube::Error::SerdeError)
}

fn read(env: &Env, ns: &str, version: &str, name: &str) -> Result<Value, Failed> {
    Ok(serde_json::to_value(
        env.rt.block_on(api(env, ns, version).get(name))?,
    )?)
}

fn serving_cert(ca: &TestCa) -> Result<(String, String), Failed> {
    let server = ca.localhost(None)?;
    Ok((server.cert, server.key))
}

fn v1alpha1_objects_round_trip_through_v1alpha2(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "conv-v1")?;
    let object = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution", "metadata": {"name": "old"},
        "spec": {"replicas": 2, "server": {"distribution": {"name": "starter"},
            "containerSpec": {"name": "server", "port": 9000, "env": [{"name": "A", "value": "b"}]},
            "userConfig": {"configMapName": "cfg", "configMapNamespace": "elsewhere"},
            "storage": {"size": "5Gi"}, "tlsConfig": {"caBundle": {"configMapName": "ca"}}},
            "network": {"exposeRoute": true}}});
    let created = create(env, &ns, object)?;
    let v2 = read(env, &ns, "v1alpha2", "old")?;
    let s = &v2["spec"];
    let checks = [
        (&s["workload"]["replicas"], json!(2)),
        (&s["networking"]["port"], json!(9000)),
        (&s["overrideConfig"]["configMapName"], json!("cfg")),
        (&s["workload"]["storage"]["size"], json!("5Gi")),
        (&s["networking"]["expose"], json!(true)),
        (&s["workload"]["overrides"]["env"][0]["name"], json!("A")),
    ];
    for (got, want) in checks {
        if *got != want {
            return Err(format!("read as v1alpha2: got {got}, want {want}\n{v2:#}").into());
        }
    }
    let back = read(env, &ns, "v1alpha1", "old")?;
    if back["spec"] != created["spec"] {
        return Err(format!(
            "v1alpha1 -> v1alpha2 -> v1alpha1 changed the spec:\n{:#}\nwas\n{:#}",
            back["spec"], created["spec"]
        )
        .into());
    }
    Ok(())
}

fn v1alpha2_objects_round_trip_through_v1alpha1(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "conv-v2")?;
    let sample: Value = serde_saphyr::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/samples/v1alpha2_us8_production.yaml"
    ))?)?;
    let created = create(env, &ns, sample)?;
    let v1 = read(env, &ns, "v1alpha1", "us8-production")?;
    let carried = v1["metadata"]["annotations"]["llamastack.io/v1alpha2-fields"]
        .as_str()
        .ok_or("no v1alpha2-fields annotation")?;
    if !carried.contains("pgvector") {
        return Err(format!("the providers should ride in the annotation: {carried}").into());
    }
    if v1["spec"]["server"]["autoscaling"]["maxReplicas"] != 5 {
        return Err(format!("autoscaling should map to spec.server.autoscaling: {v1:#}").into());
    }
    let back = read(env, &ns, "v1alpha2", "us8-production")?;
    if back["spec"] != created["spec"] {
        return Err(format!(
            "v1alpha2 -> v1alpha1 -> v1alpha2 changed the spec:\n{:#}\nwas\n{:#}",
            back["spec"], created["spec"]
        )
        .into());
    }
    Ok(())
}

fn every_sample_is_accepted_including_v1alpha1(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "samples")?;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/samples");
    let mut count = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.file_name().is_some_and(|n| n == "kustomization.yaml") {
            continue;
        }
        let object: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path)?)?;
        create(env, &ns, object).map_err(|e| format!("{}: {e}", path.display()))?;
        count += 1;
    }
    if count < 12 {
        return Err(format!("only {count} samples").into());
    }
    Ok(())
}

fn denials_carry_field_paths(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "denials")?;
    let v2 = |spec: Value| json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": "bad"}, "spec": spec});
    let cases = [
        (
            v2(json!({"distribution": {"name": "starter"}, "providers": {"inference": "vllm"}})),
            "spec.providers.inference",
            "expected a provider object or a list of provider objects",
        ),
        (
            v2(
                json!({"distribution": {"name": "starter"}, "providers": {"inference": [{"provider": "vllm"}, {"id": "b", "provider": "openai"}]}}),
            ),
            "spec.providers.inference[0].id",
            "id is required when inference lists more than one provider",
        ),
        (
            v2(
                json!({"distribution": {"name": "starter"}, "providers": {"inference": {"id": "x", "provider": "vllm", "endpoint": "http://v"}, "toolRuntime": {"id": "x", "provider": "brave-search"}}}),
            ),
            "spec.providers.toolRuntime.id",
            "provider ids must be unique across all APIs",
        ),
        (
            v2(
                json!({"distribution": {"name": "starter"}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v"}}, "disabled": ["inference"]}),
            ),
            "spec.disabled[0]",
            "both configured under spec.providers and disabled",
        ),
        (
            v2(
                json!({"distribution": {"name": "starter"}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v"}}, "resources": {"models": [{"name": "m", "provider": "nope"}]}}),
            ),
            "spec.resources.models[0].provider",
            "available: vllm",
        ),
        (
            v2(json!({"distribution": {"name": "startr"}})),
            "spec.distribution.name",
            "known distributions: postgres-demo, rh, rh-dev, starter",
        ),
        (
            json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution", "metadata": {"name": "bad"}, "spec": {"server": {"distribution": {"name": "startr"}}}}),
            "spec.server.distribution.name",
            "known distributions: postgres-demo, rh, rh-dev, starter",
        ),
        (
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": "n".repeat(56)}, "spec": {"distribution": {"name": "starter"}}}),
            "metadata.name",
            "use a name of at most 55 characters",
        ),
    ];
    for (object, field, needle) in cases {
        match create(env, &ns, object) {
            Err(kube::Error::Api(status)) => {
                let causes = status
                    .details
                    .as_ref()
                    .map(|d| d.causes.clone())
                    .unwrap_or_default();
                if !status.message.contains("denied the request")
                    || !causes
                        .iter()
                        .any(|c| c.field == field && c.message.contains(needle))
                {
                    return Err(format!("expected a webhook denial at {field} containing {needle:?}, got {}: {causes:?}", status.message).into());
                }
            }
            other => return Err(format!("expected a denial at {field}, got {other:?}").into()),
        }
    }
    Ok(())
}

/// `kubectl apply --server-side` of `manifest` in `ns`: whether it succeeded, and its stderr
/// (where kubectl prints the admission warnings).
fn apply_manifest(env: &Env, ns: &str, manifest: &str) -> Result<(bool, String), Failed> {
    let mut child = env
        .plane
        .kubectl()
        .args(["apply", "--server-side", "-n", ns, "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    std::io::Write::write_all(&mut child.stdin.take().ok_or("stdin")?, manifest.as_bytes())?;
    let out = child.wait_with_output()?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Fails unless `manifest` is admitted with every one of `wanted` among kubectl's warnings.
fn admitted_with_warnings(
    env: &Env,
    ns: &str,
    manifest: &str,
    wanted: &[&str],
) -> Result<(), Failed> {
    let (admitted, stderr) = apply_manifest(env, ns, manifest)?;
    if !admitted || !wanted.iter().all(|w| stderr.contains(w)) {
        return Err(format!(
            "expected admission with the warnings {wanted:?}, got admitted={admitted}: {stderr}"
        )
        .into());
    }
    Ok(())
}

fn unknown_settings_are_warnings(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "warnings")?;
    let manifest = "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: w}\nspec:\n  distribution: {name: starter}\n  providers:\n    inference: {provider: vllm, endpoint: 'http://v', settings: {max_tokenz: 10}}\n";
    admitted_with_warnings(
        env,
        &ns,
        manifest,
        &["Warning: spec.providers.inference.settings.max_tokenz: remote::vllm has no setting"],
    )
}

/// A name whose image is no longer published is admitted with a warning that says what to
/// write instead, in both versions: GitOps re-applies the manifests of stacks still running it.
fn unpublished_names_are_warnings_not_denials(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "unpublished")?;
    let wanted = [
        "distribution \"ollama\" has no published image any more",
        "use distribution name \"starter\" with an ollama inference provider",
    ];
    let v2 = "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: o2}\nspec:\n  distribution: {name: ollama}\n";
    admitted_with_warnings(env, &ns, v2, &wanted)?;
    let v1 = "apiVersion: llamastack.io/v1alpha1\nkind: LlamaStackDistribution\nmetadata: {name: o1}\nspec:\n  server:\n    distribution: {name: ollama}\n";
    admitted_with_warnings(env, &ns, v1, &wanted)
}

/// Turning off the Praxis migration an `OGXServer` asked for is admitted with the warning that
/// it is a soft rollback (the webhook compares the stored object with the new one); applying
/// the same object again earns none.
fn turning_the_praxis_migration_off_is_warned(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "migration-off")?;
    let server = |migration: &str| {
        format!(
            "apiVersion: ogx.io/v1beta1\nkind: OGXServer\nmetadata: {{name: moving}}\nspec:\n  distribution: {{image: 'quay.io/opendatahub/odh-ogx-core:3.6'}}\n  storage:\n    sql: {{type: postgres, connectionString: {{name: ogx-pg, key: url}}}}\n  praxisMode:\n    enabled: true\n{migration}"
        )
    };
    let on =
        server("    migrationJob:\n      targetConnectionString: {name: praxis-pg, key: url}\n");
    let (admitted, stderr) = apply_manifest(env, &ns, &on)?;
    if !admitted || stderr.contains("soft rollback") {
        return Err(format!("asking for it: admitted={admitted}: {stderr}").into());
    }
    let (admitted, stderr) = apply_manifest(env, &ns, &on)?;
    if !admitted || stderr.contains("soft rollback") {
        return Err(format!("unchanged: admitted={admitted}: {stderr}").into());
    }
    admitted_with_warnings(
        env,
        &ns,
        &server(""),
        &["Warning: the Praxis migration is no longer asked for: a soft rollback only"],
    )
}

fn missing_references_are_warnings_not_denials(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "references")?;
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(
        json!({"metadata": {"name": "present"}, "stringData": {"other": "x"}}),
    )?;
    env.rt.block_on(
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client.clone(), &ns)
            .create(&PostParams::default(), &secret),
    )?;
    let manifest = "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: refs}\nspec:\n  distribution: {name: starter}\n  providers:\n    inference:\n    - {id: a, provider: vllm, endpoint: 'http://v', apiKey: {secretKeyRef: {name: missing, key: token}}}\n    - {id: b, provider: openai, apiKey: {secretKeyRef: {name: present, key: token}}}\n";
    admitted_with_warnings(
        env,
        &ns,
        manifest,
        &[
            "Warning: spec.providers.inference[0].apiKey.secretKeyRef.name: Secret \"missing\" not found in namespace \"references\"",
            "Warning: spec.providers.inference[1].apiKey.secretKeyRef: key \"token\" not found in Secret \"present\" (namespace \"references\"); available keys: other",
        ],
    )
}

fn certificate_rotation_without_failed_requests(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "rotation")?;
    let (cert, key) = serving_cert(&env.ca)?;
    let (cert_path, key_path) = (
        env.dir.path().join("tls.crt"),
        env.dir.path().join("tls.key"),
    );
    std::fs::write(&cert_path, cert)?;
    std::fs::write(&key_path, key)?;
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut i = 0;
    while Instant::now() < deadline {
        if i == 5 {
            env.rt.block_on(env.server.reload(&cert_path, &key_path))?;
        }
        let object = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution", "metadata": {"name": format!("r{i}")}, "spec": {"server": {"distribution": {"name": "starter"}}}});
        create(env, &ns, object)
            .map_err(|e| format!("request {i} failed around the rotation: {e}"))?;
        i += 1;
    }
    Ok(())
}

/// An object stored while the CRD had no conversion reads correctly in both versions once the
/// webhook conversion is enabled.
fn objects_stored_before_conversion_read_in_both_versions(env: &Env) -> Result<(), Failed> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let v1 = loop {
        match read(env, "default", "v1alpha1", "early") {
            Ok(v1) => break v1,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(e),
        }
    };
    if v1["spec"]["replicas"] != 3 || v1["spec"]["server"]["distribution"]["name"] != "starter" {
        return Err(format!("the early object reads wrong as v1alpha1: {v1:#}").into());
    }
    let v2 = read(env, "default", "v1alpha2", "early")?;
    if v2["spec"]["providers"]["inference"]["endpoint"] != "http://v" {
        return Err(format!("the early object changed: {v2:#}").into());
    }
    Ok(())
}

const TESTS: &[(&str, Test)] = &[
    (
        "ogx_servers_are_checked_at_admission",
        ogx_servers_are_checked_at_admission,
    ),
    (
        "the_ogx_operators_newer_examples_get_their_verdicts_at_admission",
        the_ogx_operators_newer_examples_get_their_verdicts_at_admission,
    ),
    (
        "offline_validation_agrees_with_the_api_server",
        offline_validation_agrees_with_the_api_server,
    ),
    (
        "objects_stored_before_conversion_read_in_both_versions",
        objects_stored_before_conversion_read_in_both_versions,
    ),
    (
        "v1alpha1_objects_round_trip_through_v1alpha2",
        v1alpha1_objects_round_trip_through_v1alpha2,
    ),
    (
        "v1alpha2_objects_round_trip_through_v1alpha1",
        v1alpha2_objects_round_trip_through_v1alpha1,
    ),
    (
        "every_sample_is_accepted_including_v1alpha1",
        every_sample_is_accepted_including_v1alpha1,
    ),
    ("denials_carry_field_paths", denials_carry_field_paths),
    (
        "unknown_settings_are_warnings",
        unknown_settings_are_warnings,
    ),
    (
        "unpublished_names_are_warnings_not_denials",
        unpublished_names_are_warnings_not_denials,
    ),
    (
        "turning_the_praxis_migration_off_is_warned",
        turning_the_praxis_migration_off_is_warned,
    ),
    (
        "missing_references_are_warnings_not_denials",
        missing_references_are_warnings_not_denials,
    ),
    (
        "certificate_rotation_without_failed_requests",
        certificate_rotation_without_failed_requests,
    ),
];

/// The API server's verdict on `object` ([`admission::dry_run`]), as a LlamaStackDistribution
/// of its version in `ns`.
fn server_outcome(env: &Env, ns: &str, object: &Value) -> Result<(Outcome, String), Failed> {
    let version = object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("llamastack.io/");
    let collection =
        format!("/apis/llamastack.io/{version}/namespaces/{ns}/llamastackdistributions");
    Ok(env
        .rt
        .block_on(admission::dry_run(&env.client, &collection, object))?)
}

/// The offline validator (`llama-stack-operator validate`) and the API server with the
/// operator's webhooks give the same verdict, refusing at the same fields, on every object of a
/// corpus of samples, real manifests and their mutations.
fn offline_validation_agrees_with_the_api_server(env: &Env) -> Result<(), Failed> {
    use llama_stack_operator::validate::Validator;
    let ns = namespace(env, "differential")?;
    let validator = Validator::new(Catalog::embedded()?)?;
    let corpus = differential::corpus();
    let (mut admitted, mut disagreements) = (0, Vec::new());
    for case in &corpus {
        let (server, said) = server_outcome(env, &ns, &case.object)?;
        let offline = Outcome::of_verdict(validator.validate(&case.object).0)
            .map_err(|skipped| format!("{}: {skipped}", case.label))?;
        admitted += usize::from(server.admitted);
        if server != offline {
            disagreements.push(format!(
                "{}: the API server {server:?} ({said}), offline {offline:?}",
                case.label
            ));
        }
    }
    eprintln!(
        "differential: {} objects, {admitted} admitted and {} refused by the API server; offline agrees on {}",
        corpus.len(),
        corpus.len() - admitted,
        corpus.len() - disagreements.len()
    );
    assert!(corpus.len() >= 500, "a corpus of {} objects", corpus.len());
    assert!(
        admitted >= 50 && corpus.len() - admitted >= 300,
        "the corpus exercises both verdicts"
    );
    if !disagreements.is_empty() {
        return Err(format!(
            "{} disagreements:\n{}",
            disagreements.len(),
            disagreements.join("\n")
        )
        .into());
    }
    Ok(())
}

/// The shipped webhook covers `OGXServer`: a name outside the catalog is refused at
/// `spec.distribution.name` (as the OGX operator's webhook refuses it), Open Data Hub's names are
/// admitted; an object stored before the webhook existed takes metadata edits (finalizers,
/// labels) and is refused only when its spec changes.
/// The `OGXServer`s of the OGX operator's newer docs and samples
/// (`tests/fixtures/ogx-operator/newer`, each with its source) through the API server and the
/// webhook: every one admitted, named storage backends and Praxis mode included, but the one that
/// asks for the Praxis migration Job of `starter`, refused at `spec.praxisMode.migrationJob`:
/// that distribution is OGX 1.3.0 as released, which has no `ogx migrate praxis` (the webhook's
/// words name the image).
fn the_ogx_operators_newer_examples_get_their_verdicts_at_admission(
    env: &Env,
) -> Result<(), Failed> {
    // (file, object, admitted)
    let expected: &[(&str, &str, bool)] = &[
        (
            "network-config-praxis.yaml",
            "ogxserver-network-example",
            true,
        ),
        (
            "network-config-praxis.yaml",
            "ogxserver-external-access-ignored",
            true,
        ),
        (
            "network-config-praxis.yaml",
            "ogxserver-no-networkpolicy",
            true,
        ),
        ("praxis-migration-job.yaml", "demo", false),
        ("readme-monitoring.yaml", "my-ogxserver", true),
        (
            "readme-network-policy-additive-ingress.yaml",
            "my-ogxserver",
            true,
        ),
        ("readme-praxis-selector.yaml", "my-ogxserver", true),
        (
            "readme-runtime-config-sample.yaml",
            "runtime-config-sample",
            true,
        ),
        (
            "runtime-config-minimal-declarative.yaml",
            "generated-config-sample",
            true,
        ),
        (
            "runtime-config-storage-backends.yaml",
            "generated-config-with-storage",
            true,
        ),
    ];
    let root = support::workspace_root().join("tests/fixtures/ogx-operator/newer");
    let mut wrong = Vec::new();
    let mut seen = 0;
    for (i, file) in [
        "network-config-praxis.yaml",
        "praxis-migration-job.yaml",
        "readme-monitoring.yaml",
        "readme-network-policy-additive-ingress.yaml",
        "readme-praxis-selector.yaml",
        "readme-runtime-config-sample.yaml",
        "runtime-config-minimal-declarative.yaml",
        "runtime-config-storage-backends.yaml",
    ]
    .iter()
    .enumerate()
    {
        let ns = namespace(env, &format!("ogx-newer-{i}"))?;
        let api = ogx_api(&env.client, &ns);
        let text = std::fs::read_to_string(root.join(file))?;
        for document in serde_saphyr::from_multiple::<Value>(&text)? {
            if document["kind"] != "OGXServer" {
                continue;
            }
            seen += 1;
            let name = document["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let admitted = expected
                .iter()
                .find(|(f, n, _)| f == file && *n == name)
                .map(|(_, _, a)| *a)
                .ok_or_else(|| format!("{file}: {name} has no expected verdict"))?;
            let object: DynamicObject = serde_json::from_value(document)?;
            match (
                env.rt.block_on(api.create(&PostParams::default(), &object)),
                admitted,
            ) {
                (Ok(_), true) => {}
                (Err(kube::Error::Api(status)), false)
                    if status.message.contains("denied the request")
                        && status.message.contains("spec.praxisMode.migrationJob")
                        && status
                            .message
                            .contains("docker.io/ogxai/distribution-starter:1.3.0") => {}
                (outcome, _) => wrong.push(format!("{file} {name}: {outcome:?}")),
            }
        }
    }
    if seen != expected.len() {
        return Err(format!(
            "{seen} OGXServers in the files, {} expected",
            expected.len()
        )
        .into());
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n").into())
    }
}

fn ogx_servers_are_checked_at_admission(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "ogx-admission")?;
    let api = ogx_api(&env.client, &ns);
    let server = |name: &str, distribution: &str| -> Result<DynamicObject, Failed> {
        Ok(serde_json::from_value(
            json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": name}, "spec": {"distribution": {"name": distribution}}}),
        )?)
    };
    match env
        .rt
        .block_on(api.create(&PostParams::default(), &server("typo", "startr")?))
    {
        Err(kube::Error::Api(status)) => {
            let message = status.message;
            if !(message.contains("denied the request")
                && message.contains("spec.distribution.name")
                && message.contains("unknown distribution \"startr\""))
            {
                return Err(format!("not the refusal expected: {message}").into());
            }
        }
        other => return Err(format!("admitted: {other:?}").into()),
    }
    for (name, distribution) in [("odh", "rh"), ("odh-dev", "rh-dev"), ("plain", "starter")] {
        env.rt
            .block_on(api.create(&PostParams::default(), &server(name, distribution)?))?;
    }
    // The OGX operator's API after v0.14: named backends, conversations, an Ingress certificate.
    let newer: DynamicObject = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1",
        "kind": "OGXServer", "metadata": {"name": "newer"},
        "spec": {"distribution": {"name": "starter"}, "disabledAPIs": ["conversations"],
            "storage": {"backends": {
                "pg-kv": {"type": "kv_postgres", "host": "pg", "user": "ogx", "tableName": "kv"},
                "pg-sql": {"type": "sql_postgres", "host": "pg", "user": "ogx",
                    "password": {"name": "pg", "key": "password"}, "sslMode": "require"}}},
            "network": {"externalAccess": {"enabled": true, "hostname": "ogx.example.com",
                "tls": {"secretName": "ogx-cert"}}}}}))?;
    env.rt
        .block_on(api.create(&PostParams::default(), &newer))?;
    let refusal = |name: &str, spec: Value| -> Result<String, Failed> {
        let object: DynamicObject = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1",
            "kind": "OGXServer", "metadata": {"name": name}, "spec": spec}))?;
        match env.rt.block_on(api.create(&PostParams::default(), &object)) {
            Err(kube::Error::Api(status)) => Ok(status.message),
            other => Err(format!("{name} admitted: {other:?}").into()),
        }
    };
    // The OGX operator's CEL, in its words.
    let mixed = refusal(
        "mixed",
        json!({"distribution": {"name": "starter"}, "storage": {
            "backends": {"pg": {"type": "kv_postgres", "user": "u"}}, "kv": {"type": "sqlite"}}}),
    )?;
    if !mixed.contains("named and deprecated storage fields cannot be mixed") {
        return Err(format!("not the OGX operator's words: {mixed}").into());
    }
    let misplaced = refusal(
        "misplaced",
        json!({"distribution": {"name": "starter"}, "storage": {
            "backends": {"pg": {"type": "sql_postgres", "user": "u", "tableName": "t"}}}}),
    )?;
    if !misplaced.contains("tableName is only valid for kv_postgres backends") {
        return Err(format!("not the OGX operator's words: {misplaced}").into());
    }
    // Praxis mode is served; its migration Job, and turning off the NetworkPolicy that keeps
    // every caller but Praxis away, are refused naming the field.
    let behind: DynamicObject = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1",
        "kind": "OGXServer", "metadata": {"name": "behind-praxis"},
        "spec": {"distribution": {"name": "starter"}, "praxisMode": {}}}))?;
    env.rt
        .block_on(api.create(&PostParams::default(), &behind))?;
    for (name, spec, field) in [
        (
            "migrating",
            json!({"distribution": {"name": "starter"}, "praxisMode": {"migrationJob": {
                "targetConnectionString": {"name": "praxis-pg", "key": "url"}}}}),
            "spec.praxisMode.migrationJob",
        ),
        (
            "unguarded",
            json!({"distribution": {"name": "starter"}, "praxisMode": {},
                "network": {"policy": {"enabled": false}}}),
            "spec.network.policy.enabled",
        ),
    ] {
        let said = refusal(name, spec)?;
        if !(said.contains("denied the request") && said.contains(field)) {
            return Err(format!("{name}: not the refusal expected: {said}").into());
        }
    }
    let early = ogx_api(&env.client, "default");
    let patch = |body: Value| {
        env.rt.block_on(early.patch(
            "early-unknown",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(body),
        ))
    };
    patch(json!({"metadata": {"labels": {"team": "a"}, "finalizers": ["example.com/hold"]}}))?;
    patch(json!({"metadata": {"finalizers": null}}))?;
    match patch(json!({"spec": {"distribution": {"name": "startr2"}}})) {
        Err(kube::Error::Api(status)) if status.message.contains("spec.distribution.name") => {
            Ok(())
        }
        other => Err(format!("a spec change kept its unknown name: {other:?}").into()),
    }
}

fn start() -> Result<Env, Failed> {
    let plane = ControlPlane::start().map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = rt.block_on(plane.client()).map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir()?;
    let ca = TestCa::new("llso-webhooks-test-ca")?;
    let ca_pem = ca.pem.clone();
    let (cert, key) = serving_cert(&ca)?;
    std::fs::write(dir.path().join("tls.crt"), cert)?;
    std::fs::write(dir.path().join("tls.key"), key)?;
    let state = WebhookState {
        catalog: Arc::new(LiveCatalog::new(Catalog::embedded()?)),
        client: Some(client.clone()),
    };
    let (server, addr, _task) = rt.block_on(serve(
        "127.0.0.1:0".parse()?,
        dir.path().join("tls.crt"),
        dir.path().join("tls.key"),
        state,
    ))?;
    let base = format!("https://{addr}");
    let mut crd = committed_crd().map_err(|e| e.to_string())?;
    let webhook_conversion = {
        let mut conversion = crd.spec.conversion.clone().ok_or("no conversion stanza")?;
        let config = conversion
            .webhook
            .as_mut()
            .and_then(|w| w.client_config.as_mut())
            .ok_or("no client config")?;
        config.service = None;
        config.url = Some(format!("{base}/convert"));
        config.ca_bundle = Some(ByteString(ca_pem.clone().into_bytes()));
        conversion
    };
    // First without conversion, as a cluster that stored objects before the webhook existed.
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "None".to_owned(),
        webhook: None,
    });
    rt.block_on(install_crd(&client, &crd))
        .map_err(|e| e.to_string())?;
    let early: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "early", "namespace": "default"},
        "spec": {"distribution": {"name": "starter"}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v"}}, "workload": {"replicas": 3}}}),
    )?;
    let v2api = llsd_api(&client, "default", "llamastack.io/v1alpha2");
    rt.block_on(v2api.create(&PostParams::default(), &early))?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut installed = rt.block_on(crds.get("llamastackdistributions.llamastack.io"))?;
    installed.spec.conversion = Some(webhook_conversion);
    rt.block_on(crds.replace(
        "llamastackdistributions.llamastack.io",
        &PostParams::default(),
        &installed,
    ))?;
    // The OGXServer API, with one object stored before the webhook existed that it would refuse.
    rt.block_on(install_crd(
        &client,
        &committed_ogx_crd().map_err(|e| e.to_string())?,
    ))
    .map_err(|e| e.to_string())?;
    let early_ogx: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
        "metadata": {"name": "early-unknown", "namespace": "default"},
        "spec": {"distribution": {"name": "startr"}}}))?;
    rt.block_on(ogx_api(&client, "default").create(&PostParams::default(), &early_ogx))?;
    // The webhooks as shipped (deploy/base), called at this server.
    let vwc = support::operator::shipped_webhooks(&format!("{base}/validate"), &ca_pem)
        .map_err(|e| e.to_string())?;
    let vwc: ValidatingWebhookConfiguration = serde_json::from_value(vwc)?;
    rt.block_on(
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .create(&PostParams::default(), &vwc),
    )?;
    let env = Env {
        plane,
        client,
        rt,
        server,
        dir,
        ca,
    };
    // The API server picks up webhook configurations asynchronously: wait until a denial comes back.
    namespace(&env, "probe")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let probe = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": "probe"}, "spec": {"distribution": {"name": "startr"}}});
        match create(&env, "probe", probe) {
            Err(kube::Error::Api(s)) if s.message.contains("denied the request") => return Ok(env),
            _ if Instant::now() > deadline => {
                return Err("the validating webhook was not called within 30 s".into());
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// With the webhook down: the failure policy (Fail) refuses writes, objects stay readable in the
/// storage version, and reading them as v1alpha1 fails instead of returning unconverted data.
fn webhook_down(env: &Env) -> Result<(), Failed> {
    let ns = namespace(env, "down")?;
    let ok = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": "kept"}, "spec": {"distribution": {"name": "starter"}}});
    create(env, &ns, ok)?;
    env.server.handle.shutdown();
    std::thread::sleep(Duration::from_millis(300));
    let write = create(
        env,
        &ns,
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": "new"}, "spec": {"distribution": {"name": "starter"}}}),
    );
    match write {
        Err(kube::Error::Api(s)) if s.message.contains("failed calling webhook") => {}
        other => {
            return Err(format!(
                "with the webhook down a write must fail (failurePolicy Fail), got {other:?}"
            )
            .into());
        }
    }
    // What the webhook has nothing to judge is not sent to it (the shipped matchConditions):
    // labels, annotations and finalizers change while it is down; a spec change does not.
    let kept = api(env, &ns, "v1alpha2");
    let metadata_only = json!({"metadata": {"labels": {"team": "b"},
        "annotations": {"example.com/owner": "b"}, "finalizers": ["example.com/hold"]}});
    env.rt
        .block_on(kept.patch(
            "kept",
            &PatchParams::default(),
            &Patch::Merge(&metadata_only),
        ))
        .map_err(|e| format!("a metadata-only update with the webhook down: {e}"))?;
    let released =
        json!({"metadata": {"finalizers": null, "annotations": {"example.com/owner": null}}});
    env.rt
        .block_on(kept.patch("kept", &PatchParams::default(), &Patch::Merge(&released)))
        .map_err(|e| format!("a finalizer's removal with the webhook down: {e}"))?;
    let spec = json!({"spec": {"workload": {"replicas": 2}}});
    match env
        .rt
        .block_on(kept.patch("kept", &PatchParams::default(), &Patch::Merge(&spec)))
    {
        Err(kube::Error::Api(s)) if s.message.contains("failed calling webhook") => {}
        other => {
            return Err(format!(
                "with the webhook down a spec change must fail (failurePolicy Fail), got {other:?}"
            )
            .into());
        }
    }
    read(env, &ns, "v1alpha2", "kept")?;
    if read(env, &ns, "v1alpha1", "kept").is_ok() {
        return Err("reading as v1alpha1 must fail without the conversion webhook".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    // The webhook-down check stops the webhook server, so it runs last, alone.
    run_suite(
        table(TESTS),
        "the control plane and webhooks",
        || start().map_err(|e| e.message().unwrap_or_default().to_owned()),
        Some(("webhook_down_behaves_as_documented", webhook_down)),
    )
}
