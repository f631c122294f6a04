//! `merge-config`: the in-Pod step that adds external providers to the config.
//!
//! Metadata layout: `<metadata-dir>/<providerId>/lls-provider-spec.yaml` (copied from the provider
//! image) and `crd-config.yaml` (`providerId`, `api` = the CRD section, `image`, `order`, `config`,
//! written from the CRD). Providers are merged in `order` (the CRD order).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::stack_config::merge::{ExternalProvider, merge, parse_provider_package};

/// Options of `merge-config`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Base config.yaml (generated, the distribution's, or the user's ConfigMap).
    #[arg(long, value_name = "FILE")]
    base: PathBuf,
    /// Directory with one subdirectory per external provider.
    #[arg(long, value_name = "DIR")]
    metadata_dir: PathBuf,
    /// Where to write the merged config.yaml.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Where to write extra-providers.yaml.
    #[arg(long, value_name = "FILE")]
    extra_providers_output: PathBuf,
    /// Where to write the merge log (warnings); default: next to --output as merge.log.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

/// `crd-config.yaml`.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CrdConfig {
    provider_id: String,
    api: String,
    image: String,
    #[serde(default)]
    order: u32,
    #[serde(default)]
    config: Option<Map<String, Value>>,
}

/// Errors of `merge-config` (printed, and written to the Pod's termination message by the caller).
#[derive(Debug, thiserror::Error)]
pub enum MergeConfigError {
    /// I/O.
    #[error("ERROR: cannot {action} {path}: {source}")]
    Io {
        /// What was attempted.
        action: &'static str,
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A crd-config.yaml is invalid.
    #[error("ERROR: {path}: {detail}")]
    CrdConfig {
        /// File.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// A provider's metadata is invalid.
    #[error("ERROR: {0}")]
    Metadata(#[from] crate::stack_config::merge::MetadataError),
    /// The merge failed.
    #[error("{0}")]
    Merge(#[from] crate::stack_config::merge::MergeError),
}

fn read(path: &Path) -> Result<String, MergeConfigError> {
    std::fs::read_to_string(path).map_err(|source| MergeConfigError::Io {
        action: "read",
        path: path.to_owned(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), MergeConfigError> {
    std::fs::write(path, text).map_err(|source| MergeConfigError::Io {
        action: "write",
        path: path.to_owned(),
        source,
    })
}

/// Reads the metadata directory into external providers, in CRD order.
pub fn load_externals(dir: &Path) -> Result<Vec<ExternalProvider>, MergeConfigError> {
    let entries = std::fs::read_dir(dir).map_err(|source| MergeConfigError::Io {
        action: "list",
        path: dir.to_owned(),
        source,
    })?;
    let mut loaded = Vec::new();
    for entry in entries.flatten() {
        let provider_dir = entry.path();
        if !provider_dir.is_dir() {
            continue;
        }
        let crd_path = provider_dir.join("crd-config.yaml");
        let crd: CrdConfig =
            serde_saphyr::from_str(&read(&crd_path)?).map_err(|e| MergeConfigError::CrdConfig {
                path: crd_path.clone(),
                detail: e.to_string(),
            })?;
        let spec_path = provider_dir.join("lls-provider-spec.yaml");
        if !spec_path.is_file() {
            return Err(MergeConfigError::CrdConfig {
                path: spec_path,
                detail: format!(
                    "Missing /lls-provider/lls-provider-spec.yaml in image {}",
                    crd.image
                ),
            });
        }
        let package = parse_provider_package(&read(&spec_path)?, &crd.image)?;
        loaded.push((
            crd.order,
            crd.provider_id.clone(),
            ExternalProvider {
                provider_id: crd.provider_id,
                section: crd.api,
                image: crd.image,
                config: crd.config,
                package,
            },
        ));
    }
    loaded.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Ok(loaded.into_iter().map(|(_, _, e)| e).collect())
}

pub(super) fn run(args: &Args) -> Result<(), MergeConfigError> {
    let base = read(&args.base)?;
    let externals = load_externals(&args.metadata_dir)?;
    let merged = merge(&base, &externals)?;
    write(&args.output, &merged.config_yaml)?;
    write(&args.extra_providers_output, &merged.extra_providers_yaml)?;
    let log_path = args
        .log
        .clone()
        .unwrap_or_else(|| args.output.with_file_name("merge.log"));
    let mut log = format!(
        "merged {} external provider(s) into {}\n",
        externals.len(),
        args.output.display()
    );
    for warning in &merged.warnings {
        eprintln!("{warning}");
        log.push_str(warning);
        log.push('\n');
    }
    write(&log_path, &log)
}
