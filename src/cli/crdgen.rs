//! `crdgen`: prints the CRD YAML that `crds/` holds.

use std::io::Write;

use crate::api::{self, ConversionService, DEFAULT_CONVERSION_SERVICE};

/// Options of `crdgen`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Namespace of the conversion webhook Service.
    #[arg(long, default_value = DEFAULT_CONVERSION_SERVICE.namespace)]
    webhook_namespace: String,
    /// Name of the conversion webhook Service.
    #[arg(long, default_value = DEFAULT_CONVERSION_SERVICE.name)]
    webhook_service: String,
    /// Print the Markdown API reference (docs/api-reference.md) instead of the CRD.
    #[arg(long)]
    reference: bool,
}

/// Errors of `crdgen`.
#[derive(Debug, thiserror::Error)]
pub enum CrdgenError {
    /// The two versions could not be merged (a bug in the type definitions).
    #[error("cannot merge the CRD versions: {0}")]
    Merge(#[from] kube::core::crd::MergeError),
    /// YAML serialization failed.
    #[error("cannot serialize the CRD to YAML: {0}")]
    Yaml(String),
    /// Writing to stdout failed.
    #[error("cannot write the CRD: {0}")]
    Io(#[from] std::io::Error),
}

/// The CRD as the YAML document `crds/` holds.
pub fn render(service: &ConversionService<'_>) -> Result<String, CrdgenError> {
    let crd = api::crd(service)?;
    serde_saphyr::to_string(&crd).map_err(|err| CrdgenError::Yaml(err.to_string()))
}

/// The Markdown API reference `docs/api-reference.md` holds.
pub fn reference() -> Result<String, CrdgenError> {
    Ok(api::reference::markdown(&api::crd(
        &DEFAULT_CONVERSION_SERVICE,
    )?))
}

pub(super) fn run(args: &Args) -> Result<(), CrdgenError> {
    let text = if args.reference {
        reference()?
    } else {
        render(&ConversionService {
            namespace: &args.webhook_namespace,
            name: &args.webhook_service,
            port: DEFAULT_CONVERSION_SERVICE.port,
        })?
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}
