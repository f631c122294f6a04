//! What kstatus (sigs.k8s.io/cli-utils, what Flux, Argo CD and kpt judge custom resources with)
//! makes of a stack, through `kstatus-compute` (`scripts/build-kstatus.sh`, built from Go
//! modules).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::control_plane::{ControlPlane, Error, run_build_script};
use crate::operator::kubectl;

/// `kstatus-compute`, built (or reused from the cache) by `scripts/build-kstatus.sh`.
pub fn kstatus_bin() -> Result<PathBuf, Error> {
    run_build_script("build-kstatus.sh", &[], &[])
}

/// kstatus' verdict (`Current`, `InProgress`, `Failed`, ...) on the stack `ns/name` as the API
/// server serves it.
pub fn verdict(
    plane: &ControlPlane,
    kstatus: &Path,
    ns: &str,
    name: &str,
) -> Result<String, Error> {
    let object = kubectl(plane, &["get", "llsd", name, "-n", ns, "-o", "json"], None)?;
    let mut child = Command::new(kstatus)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or("kstatus-compute has no stdin")?
        .write_all(object.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!(
            "kstatus-compute failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let verdict: Value = serde_json::from_slice(&out.stdout)?;
    Ok(verdict["status"].as_str().unwrap_or_default().to_owned())
}
