//! `convert`: a migration aid, the conversion webhook's code on a manifest file.

use std::path::PathBuf;

use serde_json::Value;

use crate::convert::convert;

/// Target version.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Version {
    /// llamastack.io/v1alpha1
    V1alpha1,
    /// llamastack.io/v1alpha2
    V1alpha2,
}

/// Options of `convert`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A LlamaStackDistribution manifest (YAML or JSON).
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    file: PathBuf,
    /// Version to convert to.
    #[arg(long, value_enum)]
    to: Version,
}

/// Errors of `convert`.
#[derive(Debug, thiserror::Error)]
pub enum ConvertCliError {
    /// Reading failed.
    #[error("cannot read {path}: {detail}")]
    Read {
        /// File.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// Conversion failed.
    #[error("{path}: {source}")]
    Convert {
        /// File.
        path: PathBuf,
        /// Cause.
        source: crate::convert::ConvertError,
    },
    /// Output failed.
    #[error("cannot write YAML: {0}")]
    Output(String),
}

pub(super) fn run(args: &Args) -> Result<(), ConvertCliError> {
    let text = std::fs::read_to_string(&args.file).map_err(|e| ConvertCliError::Read {
        path: args.file.clone(),
        detail: e.to_string(),
    })?;
    let object: Value = serde_saphyr::from_str(&text).map_err(|e| ConvertCliError::Read {
        path: args.file.clone(),
        detail: e.to_string(),
    })?;
    let desired = match args.to {
        Version::V1alpha1 => "llamastack.io/v1alpha1",
        Version::V1alpha2 => "llamastack.io/v1alpha2",
    };
    let converted = convert(&object, desired).map_err(|source| ConvertCliError::Convert {
        path: args.file.clone(),
        source,
    })?;
    print!(
        "{}",
        serde_saphyr::to_string(&converted).map_err(|e| ConvertCliError::Output(e.to_string()))?
    );
    Ok(())
}
