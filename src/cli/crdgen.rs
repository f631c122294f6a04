//! `crdgen`: prints the CRD YAML that `crds/` holds, or the API reference.

use std::io::Write;

use crate::api::{self, ConversionService, CrdError, DEFAULT_CONVERSION_SERVICE};

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
    /// Print the `OGXServer` CRD (ogx.io/v1beta1) instead.
    #[arg(long, conflicts_with = "reference")]
    ogx_server: bool,
}

/// Errors of `crdgen`.
#[derive(Debug, thiserror::Error)]
pub enum CrdgenError {
    /// The CRD could not be rendered.
    #[error(transparent)]
    Crd(#[from] CrdError),
    /// Writing to stdout failed.
    #[error("cannot write the CRD")]
    Io(#[from] std::io::Error),
}

pub(super) fn run(args: &Args) -> Result<(), CrdgenError> {
    let text = if args.reference {
        api::reference_markdown()?
    } else if args.ogx_server {
        api::ogx_crd_yaml()?
    } else {
        api::crd_yaml(&ConversionService {
            namespace: &args.webhook_namespace,
            name: &args.webhook_service,
            port: DEFAULT_CONVERSION_SERVICE.port,
        })?
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}
