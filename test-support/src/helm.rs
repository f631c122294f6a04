//! The real helm (`scripts/build-helm.sh`, built from Go modules), with its state kept in a
//! directory of the test's own.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::control_plane::{ControlPlane, Error, run_build_script};

/// The chart, relative to the repository.
pub const CHART: &str = "charts/llama-stack-operator";

/// helm, built (or reused from the cache) by `scripts/build-helm.sh`.
pub fn helm_bin() -> Result<PathBuf, Error> {
    run_build_script("build-helm.sh", &[], &[])
}

/// Runs `bin args` from the repository with helm's state in `home` (never the user's), talking
/// to `plane` when given: (success, stdout, stderr).
pub fn helm(
    bin: &Path,
    home: &Path,
    plane: Option<&ControlPlane>,
    args: &[&str],
) -> (bool, String, String) {
    let mut command = Command::new(bin);
    command
        .args(args)
        .current_dir(crate::workspace_root())
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBERNETES_SERVICE_HOST");
    if let Some(plane) = plane {
        command.env("KUBECONFIG", &plane.kubeconfig);
    }
    match command.output() {
        Ok(out) => (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
        Err(e) => (false, String::new(), format!("cannot run helm: {e}")),
    }
}
