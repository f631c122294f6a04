//! `convert`: a migration aid, the conversion webhook's code on a manifest file.

use std::path::PathBuf;

use serde_json::Value;

use crate::convert::convert;
use crate::validate::Stage;

/// Target version.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Version {
    /// llamastack.io/v1alpha1
    V1alpha1,
    /// llamastack.io/v1alpha2
    V1alpha2,
    /// ogx.io/v1beta1: the OGXServer of the same name (also `--to ogx`)
    #[value(name = "ogx.io/v1beta1", alias = "ogx")]
    OgxV1beta1,
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
    /// The API server would not take the object: converting it would carry the mistake along.
    #[error("{path}: the API server would refuse it, so it is not converted:\n{causes}")]
    Refused {
        /// File.
        path: PathBuf,
        /// Every refused field, one per line.
        causes: String,
    },
    /// The validator could not be built.
    #[error(transparent)]
    Setup(#[from] crate::validate::SetupError),
    /// The LlamaStackDistribution says what an OGXServer cannot.
    #[error("{path}: no OGXServer equivalent: {source}")]
    NoOgxEquivalent {
        /// File.
        path: PathBuf,
        /// The field, and why.
        source: crate::ogx_server::Untranslatable,
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
    // A field the schema does not declare would ride along in an annotation and be lost to the
    // user; what the API server refuses is refused here first. (The webhook's own checks are
    // `validate`'s job: convert is about the layout.)
    let catalog = llama_stack_resolver::Catalog::embedded()
        .map_err(|e| ConvertCliError::Output(e.to_string()))?;
    if let crate::validate::Verdict::Invalid {
        stage: Stage::Decode | Stage::Schema,
        causes,
        ..
    } = crate::validate::Validator::new(catalog)?
        .validate(&object)
        .0
    {
        return Err(ConvertCliError::Refused {
            path: args.file.clone(),
            causes: causes
                .iter()
                .map(|c| format!("  {c}"))
                .collect::<Vec<_>>()
                .join("\n"),
        });
    }
    let desired = match args.to {
        Version::V1alpha1 => "llamastack.io/v1alpha1",
        Version::V1alpha2 | Version::OgxV1beta1 => "llamastack.io/v1alpha2",
    };
    let mut converted = convert(&object, desired).map_err(|source| ConvertCliError::Convert {
        path: args.file.clone(),
        source,
    })?;
    if let Version::OgxV1beta1 = args.to {
        converted = to_ogx_server(&args.file, converted)?;
    }
    print!(
        "{}",
        serde_saphyr::to_string(&converted).map_err(|e| ConvertCliError::Output(e.to_string()))?
    );
    Ok(())
}

/// The v1alpha2 object as the OGXServer of the same name; what it leaves out (changing nothing
/// on OGX) is said on standard error.
fn to_ogx_server(path: &std::path::Path, v1alpha2: Value) -> Result<Value, ConvertCliError> {
    let llsd: crate::api::v1alpha2::LlamaStackDistribution = serde_json::from_value(v1alpha2)
        .map_err(|e| ConvertCliError::Read {
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
    let converted = crate::ogx_server::from_llsd::to_ogx_server(&llsd).map_err(|source| {
        ConvertCliError::NoOgxEquivalent {
            path: path.to_owned(),
            source,
        }
    })?;
    for note in &converted.notes {
        eprintln!("note: {note}");
    }
    serde_json::to_value(&converted.server).map_err(|e| ConvertCliError::Output(e.to_string()))
}
