//! `render`: what the operator would apply for a LlamaStackDistribution, offline, on the
//! embedded distribution configs: the same builders as the controller (the image is the catalog's
//! reference, not pinned, since render does not reach a registry).

use std::path::PathBuf;

use llama_stack_resolver::catalog::parse_image_overrides;
use llama_stack_resolver::embedded::embedded_config;
use llama_stack_resolver::{Catalog, LookupError};

use crate::api::v1alpha2::LlamaStackDistribution;
use crate::config::{GeneratedConfig, ProviderTable, generate_from_yaml};
use crate::controller::builders;

/// Options of `render`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The LlamaStackDistribution manifest (v1alpha2, YAML or JSON).
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    file: PathBuf,
    /// Print only the generated config.yaml.
    #[arg(long, conflicts_with = "env")]
    config: bool,
    /// Print only the environment variables the server container gets.
    #[arg(long)]
    env: bool,
    /// The operator ConfigMap's `image-overrides` (names it adds need --base-config).
    #[arg(long, value_name = "FILE")]
    overrides: Option<PathBuf>,
    /// A base config.yaml to use instead of the embedded one (e.g. for distribution.image).
    #[arg(long, value_name = "FILE")]
    base_config: Option<PathBuf>,
}

/// Errors of `render`.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The manifest is not a v1alpha2 LlamaStackDistribution.
    #[error("{path} is not a llamastack.io/v1alpha2 LlamaStackDistribution: {detail}")]
    Manifest {
        /// File.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// Unknown distribution.
    #[error("spec.distribution.name: {0}")]
    Lookup(#[from] LookupError),
    /// No base config offline.
    #[error("{0}")]
    NoBase(String),
    /// Generation failed.
    #[error("{0}")]
    Generate(#[from] crate::config::GenerateError),
    /// Output failed.
    #[error("cannot serialize the output: {0}")]
    Output(String),
}

fn read(path: &PathBuf) -> Result<String, RenderError> {
    std::fs::read_to_string(path).map_err(|source| RenderError::Read {
        path: path.clone(),
        source,
    })
}

/// Every object the controller applies, as one YAML stream, built by the controller's builders.
/// Offline, so without the values only the cluster knows (CA bundle, Secret hashes, pull secrets).
fn objects(
    cr: &LlamaStackDistribution,
    image: &str,
    generated: &GeneratedConfig,
) -> Result<String, RenderError> {
    let err = |e: &dyn std::fmt::Display| RenderError::Output(e.to_string());
    let config_map = builders::config_map_name(
        cr.metadata.name.as_deref().unwrap_or_default(),
        &generated.hash,
    );
    let inputs = builders::Inputs {
        image,
        generated: Some(generated),
        config: builders::ServerConfig::Generated(&config_map),
        ..Default::default()
    };
    let desired = builders::desired(cr, &inputs).map_err(|e| err(&e))?;
    let mut docs = Vec::new();
    let mut push =
        |value: Result<String, serde_saphyr::SerializeError>| -> Result<(), RenderError> {
            docs.push(value.map_err(|e| err(&e))?);
            Ok(())
        };
    if let Some(cm) = &desired.config_map {
        push(serde_saphyr::to_string(cm))?;
    }
    if let Some(sa) = &desired.service_account {
        push(serde_saphyr::to_string(sa))?;
    }
    if let Some(pvc) = &desired.pvc {
        push(serde_saphyr::to_string(pvc))?;
    }
    push(serde_saphyr::to_string(&desired.deployment))?;
    push(serde_saphyr::to_string(&desired.service))?;
    if let Some(np) = &desired.network_policy {
        push(serde_saphyr::to_string(np))?;
    }
    if let Some(ingress) = &desired.ingress {
        push(serde_saphyr::to_string(ingress))?;
    }
    if let Some(hpa) = &desired.hpa {
        push(serde_saphyr::to_string(hpa))?;
    }
    if let Some(pdb) = &desired.pdb {
        push(serde_saphyr::to_string(pdb))?;
    }
    Ok(docs.join("---\n"))
}

pub(super) fn run(args: &Args) -> Result<(), RenderError> {
    let text = read(&args.file)?;
    let cr: LlamaStackDistribution =
        serde_saphyr::from_str(&text).map_err(|e| RenderError::Manifest {
            path: args.file.clone(),
            detail: e.to_string(),
        })?;
    if cr.metadata.name.as_deref().unwrap_or_default().is_empty() {
        return Err(RenderError::Manifest {
            path: args.file.clone(),
            detail: "metadata.name is required".to_owned(),
        });
    }
    if let Some(o) = &cr.spec.override_config {
        return Err(RenderError::NoBase(format!(
            "spec.overrideConfig: the server uses ConfigMap {:?} as is; there is nothing to generate",
            o.config_map_name
        )));
    }
    // Offline: the catalog's (or the given) reference, not pinned to a digest.
    let mut image = cr.spec.distribution.image.clone().unwrap_or_default();
    let base = match (&args.base_config, &cr.spec.distribution.name) {
        (Some(path), _) => read(path)?,
        (None, Some(name)) => {
            let mut catalog =
                Catalog::embedded().map_err(|e| RenderError::Output(e.to_string()))?;
            if let Some(path) = &args.overrides {
                let (valid, problems) = parse_image_overrides(&read(path)?);
                for problem in problems {
                    eprintln!("warning: {problem}");
                }
                catalog = catalog.with_overrides(&valid);
            }
            image = catalog.image(name)?.to_owned();
            embedded_config(name)
                .ok_or_else(|| RenderError::NoBase(format!("spec.distribution.name: {name:?} has no embedded config; pass --base-config FILE")))?
                .to_owned()
        }
        (None, None) => {
            return Err(RenderError::NoBase(
                "spec.distribution.image: the base config comes from the image's labels, which render does not fetch; pass --base-config FILE (or run `llama-stack-operator resolve IMAGE --show-config`)".to_owned(),
            ));
        }
    };
    let generated = generate_from_yaml(&cr.spec, &base, ProviderTable::embedded())?;
    for warning in &generated.warnings {
        eprintln!("warning: {warning}");
    }
    let out = if args.config {
        generated.yaml.clone()
    } else if args.env {
        serde_saphyr::to_string(&generated.env).map_err(|e| RenderError::Output(e.to_string()))?
    } else {
        objects(&cr, &image, &generated)?
    };
    print!("{out}");
    Ok(())
}
