//! Scripts that run cargo build the same thing whoever starts them (`scripts/lib/cargo-env.sh`).
//! A test's process carries what cargo set for that test (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`),
//! and ring's build script asks to rerun when `CARGO_MANIFEST_DIR` changes, so a script started
//! by a test rebuilt the shipped LTO binary that the test command had just built (10 minutes).

use std::process::Command;

use crate::workspace_root;

/// The variables cargo sets for a running test that no build of ours may see.
fn is_test_only(name: &str) -> bool {
    name == "CARGO_MANIFEST_DIR"
        || name == "CARGO_MANIFEST_PATH"
        || name == "CARGO_CRATE_NAME"
        || name == "CARGO_PRIMARY_PACKAGE"
        || name == "CARGO_TARGET_TMPDIR"
        || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

#[test]
fn the_helper_clears_what_cargo_set_for_the_test_and_keeps_the_rest() {
    // This process is a test: cargo set these for it.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    let out = Command::new("bash")
        .arg("-c")
        .arg("source scripts/lib/cargo-env.sh && env")
        .current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", "/kept/target")
        .env("CARGO_HOME", "/kept/home")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let env = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    let left: Vec<&&str> = names.iter().filter(|n| is_test_only(n)).collect();
    assert!(left.is_empty(), "still set after the helper: {left:?}");
    assert!(env.contains("CARGO_TARGET_DIR=/kept/target\n"), "{env}");
    assert!(env.contains("CARGO_HOME=/kept/home\n"), "{env}");
}

#[test]
fn every_script_that_runs_cargo_sources_the_helper() {
    let scripts = workspace_root().join("scripts");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&scripts).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "sh") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let runs_cargo = text.lines().any(|line| {
            let code = line.split('#').next().unwrap_or_default();
            ["build", "run", "test", "install", "cyclonedx"]
                .iter()
                .any(|verb| code.contains(&format!("cargo {verb}")))
        });
        if runs_cargo {
            assert!(
                text.contains("source scripts/lib/cargo-env.sh"),
                "{} runs cargo without scripts/lib/cargo-env.sh",
                path.display()
            );
            checked.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    checked.sort();
    // The check must see the scripts it exists for.
    for expected in ["build-static.sh", "build-sbom.sh", "build-bundle.sh"] {
        assert!(checked.iter().any(|c| c == expected), "{checked:?}");
    }
}
