//! `validate`: what admission would say of LlamaStackDistribution manifests, offline, one
//! verdict per object (see [`crate::validate`]). Exit status: 0 when every object would be
//! admitted, 1 when one would be refused, 2 when the inputs cannot be read.

use std::path::PathBuf;

use serde::Serialize;

use super::overrides::catalog_with_overrides;
use crate::validate::documents::{Document, ReadError, read_inputs};
use crate::validate::{SetupError, Stage, Validator, Verdict};

/// Output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum Format {
    /// One line per object, causes indented below it.
    #[default]
    Text,
    /// A JSON array, one entry per object (for pre-commit hooks and CI).
    Json,
}

/// Options of `validate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Manifests: files (several documents, `kind: List`), directories, or `-` for standard
    /// input; repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH", required = true)]
    files: Vec<PathBuf>,
    /// The operator ConfigMap's `image-overrides` (names it adds are known to admission).
    #[arg(long, value_name = "FILE")]
    overrides: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t)]
    format: Format,
}

/// Why `validate` could not judge the inputs.
#[derive(Debug, thiserror::Error)]
pub enum ValidateCliError {
    /// The inputs could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The overrides could not be read.
    #[error(transparent)]
    Overrides(#[from] super::overrides::OverridesError),
    /// The validator could not be built.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Output failed.
    #[error("cannot write the result: {0}")]
    Output(String),
}

/// One object's entry in `-o json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    location: &'a str,
    api_version: &'a str,
    name: &'a str,
    #[serde(flatten)]
    verdict: &'a Verdict,
}

fn stage_text(stage: Stage) -> &'static str {
    match stage {
        Stage::Decode => "refused while decoding",
        Stage::Schema => "refused by the CRD's schema and rules",
        Stage::Admission => "refused by the validating webhook",
    }
}

/// The verdicts of `documents`, printed in `format`; whether every object would be admitted.
pub fn report(
    documents: &[Document],
    validator: &Validator,
    format: Format,
) -> Result<bool, ValidateCliError> {
    let verdicts: Vec<Verdict> = documents
        .iter()
        .map(|d| validator.validate(&d.object).0)
        .collect();
    let admitted = !verdicts.iter().any(Verdict::refused);
    match format {
        Format::Json => {
            let entries: Vec<Entry<'_>> = documents
                .iter()
                .zip(&verdicts)
                .map(|(d, verdict)| Entry {
                    location: &d.location,
                    api_version: d.object["apiVersion"].as_str().unwrap_or_default(),
                    name: d.object["metadata"]["name"].as_str().unwrap_or_default(),
                    verdict,
                })
                .collect();
            let text = serde_json::to_string_pretty(&entries)
                .map_err(|e| ValidateCliError::Output(e.to_string()))?;
            println!("{text}");
        }
        Format::Text => {
            for (document, verdict) in documents.iter().zip(&verdicts) {
                print!("{}", text_entry(document, verdict));
            }
        }
    }
    Ok(admitted)
}

fn text_entry(document: &Document, verdict: &Verdict) -> String {
    let name = document.object["metadata"]["name"]
        .as_str()
        .unwrap_or("(no name)");
    let short = match document.object["kind"].as_str() {
        Some("OGXServer") => "ogxserver",
        _ => "llsd",
    };
    let head = format!("{} ({short}/{name})", document.location);
    match verdict {
        Verdict::Skipped { what } => format!(
            "{}: skipped, neither a LlamaStackDistribution nor an OGXServer ({what})\n",
            document.location
        ),
        Verdict::Valid { warnings } => {
            let mut text = format!("{head}: admitted\n");
            for warning in warnings {
                text.push_str(&format!("  warning: {warning}\n"));
            }
            text
        }
        Verdict::Invalid {
            stage,
            causes,
            warnings,
        } => {
            let mut text = format!("{head}: {}\n", stage_text(*stage));
            for cause in causes {
                text.push_str(&format!("  {cause}\n"));
            }
            for warning in warnings {
                text.push_str(&format!("  warning: {warning}\n"));
            }
            text
        }
    }
}

/// Runs `validate`: `Ok(true)` when every object would be admitted.
pub(super) fn run(args: &Args) -> Result<bool, ValidateCliError> {
    let documents = read_inputs(&args.files, std::io::stdin().lock())?;
    let validator = Validator::new(catalog_with_overrides(args.overrides.as_deref())?)?;
    report(&documents, &validator, args.format)
}
