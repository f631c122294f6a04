//! `llama-stack-operator validate`: one verdict per object, from files, directories, standard
//! input and Lists, with exit statuses a CI pipeline can act on and JSON a hook can read.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::process::{Command, Stdio};

use serde_json::Value;

fn validate(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .arg("validate")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const GOOD: &str = "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: good}\nspec:\n  distribution: {name: starter}\n";
const TYPO: &str = "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: typo}\nspec:\n  distribution: {name: starter}\n  providres: {}\n";
const V3: &str = "apiVersion: llamastack.io/v1alpha3\nkind: LlamaStackDistribution\nmetadata: {name: future}\nspec: {}\n";

#[test]
fn the_samples_directory_is_admitted_and_exits_zero() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/samples");
    let (code, stdout, stderr) = validate(&["-f", samples], "");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("(llsd/"), "{stdout}");
    assert!(
        stdout.contains("kustomization.yaml: skipped"),
        "other kinds are named as skipped: {stdout}"
    );
}

#[test]
fn one_verdict_per_object_in_json_and_exit_one_on_a_refusal() {
    let input = format!(
        "{GOOD}---\n{TYPO}---\n{V3}---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: llamastack.io/v1alpha2\n  kind: LlamaStackDistribution\n  metadata: {{name: listed}}\n  spec: {{distribution: {{name: starter}}, networking: {{port: 80}}}}\n"
    );
    let (code, stdout, stderr) = validate(&["-f", "-", "-o", "json"], &input);
    assert_eq!(code, 1, "{stderr}");
    let verdicts: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let summary: Vec<(String, String, String)> = verdicts
        .iter()
        .map(|v| {
            (
                v["location"].as_str().unwrap_or_default().to_owned(),
                v["verdict"].as_str().unwrap_or_default().to_owned(),
                v["causes"][0]["field"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    let expected = [
        ("-#0", "valid", ""),
        ("-#1", "invalid", "spec.providres"),
        ("-#2", "invalid", "apiVersion"),
        ("-#3.items[0]", "invalid", "spec.networking.port"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect();
    assert_eq!(summary, expected, "{stdout}");
}

#[test]
fn unreadable_inputs_exit_two() {
    let (code, _, stderr) = validate(&["-f", "/nonexistent/llsd.yaml"], "");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/nonexistent/llsd.yaml"), "{stderr}");
    let (code, _, stderr) = validate(&["-f", "-"], "a: [unclosed");
    assert_eq!(code, 2, "{stderr}");
}

/// `OGXServer`s are judged by their CRD as the API server judges them (the OGX operator's
/// samples are admitted; one with both a name and an image is refused at `spec.distribution`,
/// one with an empty storage size at `spec.workload.storage`, by its `quantity()` rule).
#[test]
fn ogx_servers_are_judged_by_their_crd() {
    let samples = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ogx-operator/example-with-monitoring.yaml"
    );
    let (code, stdout, stderr) = validate(&["-f", samples], "");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout.matches("(ogxserver/").count(), 3, "{stdout}");
    let both = "apiVersion: ogx.io/v1beta1\nkind: OGXServer\nmetadata: {name: both}\nspec:\n  distribution: {name: starter, image: quay.io/x/y:1}\n---\napiVersion: ogx.io/v1beta1\nkind: OGXServer\nmetadata: {name: empty}\nspec:\n  distribution: {name: starter}\n  workload:\n    storage: {size: '0'}\n";
    let (code, stdout, _) = validate(&["-f", "-"], both);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("spec.distribution:") && stdout.contains("spec.workload.storage:"),
        "{stdout}"
    );
    assert!(!stdout.contains("could not be evaluated"), "{stdout}");
}
