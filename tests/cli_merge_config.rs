//! `llama-stack-operator merge-config` on a metadata directory as the init containers lay it out.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::path::Path;
use std::process::Command;

fn provider(dir: &Path, id: &str, section: &str, api: &str, order: u32, image: &str) {
    let d = dir.join(id);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("crd-config.yaml"), format!("providerId: {id}\napi: {section}\nimage: {image}\norder: {order}\nconfig: {{url: 'http://{id}'}}\n")).unwrap();
    std::fs::write(
        d.join("lls-provider-spec.yaml"),
        format!("apiVersion: llamastack.io/v1alpha1\nkind: ProviderPackage\nmetadata: {{name: {id}, version: 0.1.0, vendor: acme}}\nspec:\n  packageName: acme_{}\n  providerType: remote::{id}\n  api: {api}\n  wheelPath: /lls-provider/packages/{id}.whl\n", id.replace('-', "_")),
    )
    .unwrap();
}

fn merge_config(dir: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .args(["merge-config", "--base"])
        .arg(dir.join("base.yaml"))
        .arg("--metadata-dir")
        .arg(dir.join("metadata"))
        .arg("--output")
        .arg(dir.join("config.yaml"))
        .arg("--extra-providers-output")
        .arg(dir.join("extra-providers.yaml"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn base(dir: &Path) {
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::write(dir.join("base.yaml"), "version: 2\ndistro_name: t\napis: [inference]\nproviders:\n  inference:\n  - {provider_id: ollama, provider_type: remote::ollama, config: {}}\n").unwrap();
}

#[test]
fn merges_in_crd_order_and_writes_all_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    base(tmp.path());
    let meta = tmp.path().join("metadata");
    provider(&meta, "zeta", "inference", "inference", 0, "reg/zeta:1");
    provider(
        &meta,
        "alpha",
        "toolRuntime",
        "tool_runtime",
        1,
        "reg/alpha:1",
    );
    provider(&meta, "ollama", "inference", "inference", 2, "reg/ollama:2");
    let (code, stderr) = merge_config(tmp.path());
    assert_eq!(code, 0, "{stderr}");
    let config: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(tmp.path().join("config.yaml")).unwrap())
            .unwrap();
    let ids: Vec<&str> = config["providers"]["inference"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["provider_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["zeta", "ollama"],
        "CRD order, the base ollama replaced"
    );
    assert_eq!(
        config["providers"]["tool_runtime"][0]["module"],
        "acme_alpha"
    );
    assert!(
        stderr.contains(
            "WARNING: External provider 'ollama' overrides base provider in API 'inference'"
        ),
        "{stderr}"
    );
    let log = std::fs::read_to_string(tmp.path().join("merge.log")).unwrap();
    assert!(
        log.contains("merged 3 external provider(s)") && log.contains("Base type: remote::ollama"),
        "{log}"
    );
    assert!(
        std::fs::read_to_string(tmp.path().join("extra-providers.yaml"))
            .unwrap()
            .contains("kind: ExternalProviders")
    );
}

#[test]
fn failures_exit_1_with_the_spec_messages() {
    let tmp = tempfile::tempdir().unwrap();
    base(tmp.path());
    let meta = tmp.path().join("metadata");
    provider(&meta, "guard", "safety", "inference", 0, "reg/guard:1");
    let (code, stderr) = merge_config(tmp.path());
    assert_eq!(code, 1);
    assert!(stderr.contains("Provider 'guard' (image: reg/guard:1)\ndeclares api=inference in lls-provider-spec.yaml\nbut is placed under externalProviders.safety"), "{stderr}");
    assert!(
        !tmp.path().join("config.yaml").exists(),
        "nothing is written on failure"
    );

    std::fs::remove_file(meta.join("guard/lls-provider-spec.yaml")).unwrap();
    let (code, stderr) = merge_config(tmp.path());
    assert_eq!(code, 1);
    assert!(
        stderr.contains("Missing /lls-provider/lls-provider-spec.yaml in image reg/guard:1"),
        "{stderr}"
    );
}
