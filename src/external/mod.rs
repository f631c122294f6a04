//! External providers in the server Pod: the paths the init containers share, the
//! error report every step writes to its termination message, the provider-image step
//! (`stage-provider`), and the Python steps run with the distribution image's own interpreter.
//!
//! Pod flow: `copy-tools` (operator image) puts this static binary and the Python steps on a
//! shared volume; one `install-provider-<id>` per provider (provider image, no shell or pip
//! needed) validates and stages its metadata and wheels; `install-packages` (distribution
//! image) installs only what the image lacks; `merge-config` adds the providers to the config;
//! `preflight` imports each provider and checks it before the server starts.

pub(crate) mod ids;
pub(crate) mod report;
pub(crate) mod stage;

/// Where `copy-tools` puts the operator binary and the Python steps.
pub const TOOLS_DIR: &str = "/opt/llama-stack/tools";
/// Shared by the provider steps: `metadata/<id>/`, `wheels/<id>/`, `python-packages/`,
/// `installed-packages.txt`.
pub const PROVIDERS_DIR: &str = "/opt/llama-stack/external-providers";
/// Where the merged config is written.
pub const MERGED_DIR: &str = "/opt/llama-stack/config";
/// Inside a provider image: the metadata file and the wheels directory.
pub const PROVIDER_ROOT: &str = "/lls-provider";
/// Kubernetes reads a container's termination message from here.
pub const TERMINATION_LOG: &str = "/dev/termination-log";

/// The install step (`install-packages`), run with the distribution image's Python.
pub const INSTALL_SCRIPT: &str = include_str!("scripts/install_providers.py");
/// The preflight step, run with the distribution image's Python.
pub const PREFLIGHT_SCRIPT: &str = include_str!("scripts/preflight.py");
/// The report helper both Python steps import.
pub const REPORT_MODULE: &str = include_str!("scripts/llso_report.py");

/// Name of the init container of provider `id`.
pub fn install_container_name(id: &str) -> String {
    format!("install-provider-{id}")
}
