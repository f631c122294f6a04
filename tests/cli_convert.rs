//! `llama-stack-operator convert`: samples to the other version and back, unchanged.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::process::Command;

use serde_json::Value;

fn convert(file: &std::path::Path, to: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .args(["convert", "--to", to, "-f"])
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_sample_survives_a_round_trip_through_the_other_version() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/samples");
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == "kustomization.yaml") {
            continue;
        }
        let original: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let (there, back) = if original["apiVersion"] == "llamastack.io/v1alpha1" {
            ("v1alpha2", "v1alpha1")
        } else {
            ("v1alpha1", "v1alpha2")
        };
        let (code, converted, stderr) = convert(&path, there);
        assert_eq!(code, 0, "{}: {stderr}", path.display());
        let mid = tmp.path().join("mid.yaml");
        std::fs::write(&mid, &converted).unwrap();
        let (code, restored, stderr) = convert(&mid, back);
        assert_eq!(code, 0, "{stderr}");
        let restored: Value = serde_saphyr::from_str(&restored).unwrap();
        assert_eq!(restored, original, "{}", path.display());
    }
}

#[test]
fn a_non_llsd_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cm.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let (code, _, stderr) = convert(&file, "v1alpha2");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("not a LlamaStackDistribution of llamastack.io/v1alpha1 or v1alpha2"),
        "{stderr}"
    );
}

/// A misspelt field is refused with its path, instead of riding along in an annotation of the
/// converted object (where the user would never see it again).
#[test]
fn a_misspelt_field_is_refused_not_carried_along() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("typo.yaml");
    std::fs::write(
        &file,
        "apiVersion: llamastack.io/v1alpha1\nkind: LlamaStackDistribution\nmetadata: {name: x}\nspec:\n  server:\n    distribution: {name: starter}\n    contianerSpec: {port: 8321}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = convert(&file, "v1alpha2");
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stderr.contains("spec.server.contianerSpec: unknown field"),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "nothing is printed: {stdout}");
}
