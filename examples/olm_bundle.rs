//! `scripts/build-bundle.sh`: writes the OLM bundle (registry+v1) of this version into a
//! directory, from `kubectl kustomize deploy/base` on stdin (`llama_stack_operator_tools::olm_bundle` makes it).
//!
//! Usage: kubectl kustomize deploy/base | cargo run --example olm_bundle -- <out-dir>

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use llama_stack_operator_tools::olm_bundle as bundle;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: olm_bundle <out-dir>")?,
    );
    let mut rendered = String::new();
    std::io::stdin()
        .read_to_string(&mut rendered)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    for (path, content) in bundle::files(&rendered, env!("CARGO_PKG_VERSION"))? {
        let path = out.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&path, content).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
