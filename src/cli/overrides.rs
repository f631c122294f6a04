//! The operator ConfigMap's `image-overrides` given to an offline command as a file: the
//! embedded catalog with them added, as the operator's own catalog would be.

use std::path::{Path, PathBuf};

use llama_stack_resolver::Catalog;
use llama_stack_resolver::parse_image_overrides;

/// Why the catalog could not be made.
#[derive(Debug, thiserror::Error)]
pub enum OverridesError {
    /// The overrides file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The embedded catalog is broken (a build defect).
    #[error("the embedded catalog: {0}")]
    Embedded(String),
}

/// The embedded catalog, with the overrides in `path` when given; entries that cannot be used
/// are printed as warnings on stderr, as the operator logs them.
pub fn catalog_with_overrides(path: Option<&Path>) -> Result<Catalog, OverridesError> {
    let catalog = Catalog::embedded().map_err(|e| OverridesError::Embedded(e.to_string()))?;
    let Some(path) = path else {
        return Ok(catalog);
    };
    let text = std::fs::read_to_string(path).map_err(|source| OverridesError::Read {
        path: path.to_owned(),
        source,
    })?;
    let (valid, problems) = parse_image_overrides(&text);
    for problem in problems {
        eprintln!("warning: {problem}");
    }
    Ok(catalog.with_overrides(&valid))
}
