//! `render`: what the operator would apply for LlamaStackDistribution and `OGXServer`
//! manifests, offline, on the embedded distribution configs, with the same builders as the
//! controller. Each object is first checked as admission checks it ([`crate::validate`]);
//! v1alpha1 is converted as the conversion webhook converts it, an `OGXServer` mapped into the
//! model as the controller maps it. The image is the catalog's or the manifest's reference, not
//! pinned, since render does not reach a registry; an image whose config render cannot know runs
//! its own, and a user's ConfigMap is mounted whole, as in the cluster.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::ConfigMap;
use llama_stack_resolver::embedded::embedded_base_config;
use llama_stack_resolver::{Catalog, LookupError};
use serde_json::Value;

use super::overrides::{OverridesError, catalog_with_overrides};
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::controller::builders::{self, ServerConfig};
use crate::controller::door::Door;
use crate::controller::server_run::{self, ServerRun};
use crate::controller::stack::{Invalid, Stack};
use crate::stack_config::{GeneratedConfig, parse_base};
use crate::validate::documents::{ReadError, read_inputs};
use crate::validate::{SetupError, Validator, Verdict};

/// Options of `render`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Manifests (LlamaStackDistribution v1alpha2 or v1alpha1, `OGXServer`): files (several
    /// documents, `kind: List`), directories, or `-` for standard input; repeatable. ConfigMaps
    /// among them are the ones `overrideConfig`/`userConfig`/`baseConfig` name.
    #[arg(short = 'f', long = "filename", value_name = "PATH", required = true)]
    files: Vec<PathBuf>,
    /// Print only the generated config.yaml.
    #[arg(long, conflicts_with = "env")]
    config: bool,
    /// Print only the environment variables the server container gets.
    #[arg(long)]
    env: bool,
    /// The operator ConfigMap's `image-overrides`.
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
    /// The inputs could not be read.
    #[error(transparent)]
    Inputs(#[from] ReadError),
    /// The overrides could not be read.
    #[error(transparent)]
    Overrides(#[from] OverridesError),
    /// The validator could not be built.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Admission would refuse an object (every refused field, one per line).
    #[error("admission would refuse it (`llama-stack-operator validate` says why):\n{0}")]
    Refused(String),
    /// Nothing to render.
    #[error("no LlamaStackDistribution or OGXServer in the inputs")]
    Nothing,
    /// An `OGXServer` asks for what the operator does not serve (the controller refuses it so).
    #[error("{location}: {detail}")]
    NotServed {
        /// Where.
        location: String,
        /// The field and why.
        detail: String,
    },
    /// An admitted object could not be read as v1alpha2 (a defect).
    #[error("{location}: {detail}")]
    Manifest {
        /// Where.
        location: String,
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
    Generate(#[from] crate::stack_config::GenerateError),
    /// Output failed.
    #[error("cannot serialize the output: {0}")]
    Output(String),
    /// The resource cannot be read as the controller reads it.
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

fn read(path: &PathBuf) -> Result<String, RenderError> {
    std::fs::read_to_string(path).map_err(|source| RenderError::Read {
        path: path.clone(),
        source,
    })
}

/// What the server of one stack runs, offline, as the controller decides it
/// ([`server_run`]); and why `--config`/`--env` have nothing to show, when they do not.
struct OfflineRun {
    run: ServerRun,
    nothing_to_show: Option<String>,
}

impl OfflineRun {
    /// The config `--config`/`--env` show.
    fn shown(&self) -> Result<&GeneratedConfig, RenderError> {
        match &self.nothing_to_show {
            Some(why) => Err(RenderError::NoBase(why.clone())),
            None => Ok(&self.run.generated),
        }
    }
}

/// Every object the controller applies, as one YAML stream, built by the controller's builders.
/// Offline, so without the values only the cluster knows (CA bundle, Secret hashes, pull secrets).
fn objects(stack: &Stack<'_>, image: &str, offline: &OfflineRun) -> Result<String, RenderError> {
    let err = |e: &dyn std::fmt::Display| RenderError::Output(e.to_string());
    let inputs = builders::Inputs {
        image,
        server: offline.run.server,
        generated: offline.shown().ok(),
        config: offline.run.config.clone(),
        ..Default::default()
    };
    let desired = builders::desired(stack, &inputs).map_err(|e| err(&e))?;
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

/// What the server of `cr` runs, offline.
fn offline_run(
    stack: &Stack<'_>,
    args: &Args,
    image: &str,
    config_maps: &BTreeMap<String, ConfigMap>,
) -> Result<OfflineRun, RenderError> {
    let server = stack.server(
        stack
            .spec
            .distribution
            .name
            .as_deref()
            .and_then(embedded_base_config)
            .and_then(|base| base.ok()?.server),
    );
    if let Some(o) = &stack.spec.override_config {
        let name = &o.config_map_name;
        let Some(cm) = config_maps.get(name) else {
            eprintln!(
                "warning: ConfigMap {name:?} is not among the inputs: the server runs its config.yaml, run.yaml or only key; shown here as config.yaml"
            );
            let run = ServerRun {
                config: ServerConfig::User {
                    config_map: name.clone(),
                    key: o.key.clone().unwrap_or_else(|| "config.yaml".to_owned()),
                },
                server,
                generated: GeneratedConfig::default(),
            };
            let why = format!("the config is in ConfigMap {name:?}, which is not among the inputs");
            return Ok(OfflineRun {
                run,
                nothing_to_show: Some(why),
            });
        };
        let run = server_run::from_user_config(name, o.key.as_deref(), cm, server)
            .map_err(RenderError::NoBase)?;
        return Ok(OfflineRun {
            run,
            nothing_to_show: None,
        });
    }
    // A named distribution's embedded config knows its server (the catalog's release); a file
    // given with --base-config runs on the release `serverVersion` declares, else it is taken
    // for the llama-stack line, as an unlabelled image is.
    let base = match (&args.base_config, &stack.spec.distribution.name) {
        (Some(path), _) => Some(std::sync::Arc::new(parse_base(&read(path)?)?)),
        (None, _) if stack.spec.base_config.is_some() => {
            Some(std::sync::Arc::new(base_from_inputs(stack, config_maps)?))
        }
        (None, Some(name)) => embedded_base_config(name)
            .transpose()
            .map_err(|e| RenderError::NoBase(e.to_string()))?,
        (None, None) => None,
    };
    let Some(base) = base else {
        let run = server_run::image_own(stack, server).map_err(|field| {
            RenderError::NoBase(format!(
                "{field} asks for a generated config, and the base config of {image} is in its labels, which render does not fetch; pass --base-config FILE (`llama-stack-operator resolve {image} --show-config` prints it)"
            ))
        })?;
        let why = format!(
            "the server runs the config inside {image} (`llama-stack-operator resolve {image} --show-config` prints it, if the image is labelled with it)"
        );
        return Ok(OfflineRun {
            run,
            nothing_to_show: Some(why),
        });
    };
    Ok(OfflineRun {
        run: server_run::from_base(stack, &base)?,
        nothing_to_show: None,
    })
}

/// The base config `baseConfig` names, from the ConfigMaps among the inputs.
fn base_from_inputs(
    stack: &Stack<'_>,
    config_maps: &BTreeMap<String, ConfigMap>,
) -> Result<llama_stack_resolver::base_config::BaseConfig, RenderError> {
    let Some(base) = &stack.spec.base_config else {
        return Err(RenderError::NoBase("no baseConfig".to_owned()));
    };
    let name = &base.config_map_name;
    let cm = config_maps.get(name).ok_or_else(|| {
        RenderError::NoBase(format!(
            "spec.baseConfig names ConfigMap {name:?}, which is not among the inputs; pass it with -f, or its config with --base-config FILE"
        ))
    })?;
    let user = crate::controller::user_config::user_config(cm, base.key.as_deref())
        .map_err(|e| RenderError::NoBase(e.message(name, "spec.baseConfig")))?;
    Ok(parse_base(user.yaml)?)
}

/// The output for one admitted stack. Generation's warnings are printed with `location`, except
/// those admission gave already (`admission_warnings`, printed by the caller).
fn render_one(
    (cr, door): (&LlamaStackDistribution, Door),
    args: &Args,
    catalog: &Catalog,
    config_maps: &BTreeMap<String, ConfigMap>,
    (location, admission_warnings): (&str, &[String]),
) -> Result<String, RenderError> {
    // Offline: the catalog's (or the manifest's) reference, not pinned to a digest.
    let image = match &cr.spec.distribution.name {
        Some(name) => catalog.image(name)?.to_owned(),
        None => cr.spec.distribution.image.clone().unwrap_or_default(),
    };
    let stack = Stack::read_through(cr, door)?;
    let offline = offline_run(&stack, args, &image, config_maps)?;
    if let Ok(generated) = offline.shown() {
        for warning in &generated.warnings {
            if !admission_warnings
                .iter()
                .any(|w| w.contains(warning.as_str()))
            {
                eprintln!("warning: {location}: {warning}");
            }
        }
    }
    if args.config || args.env {
        let generated = offline.shown()?;
        return if args.config {
            Ok(generated.yaml.clone())
        } else {
            serde_saphyr::to_string(&generated.env).map_err(|e| RenderError::Output(e.to_string()))
        };
    }
    objects(&stack, &image, &offline)
}

/// The ConfigMaps among the inputs, by name.
fn config_maps(objects: &[&Value]) -> BTreeMap<String, ConfigMap> {
    objects
        .iter()
        .filter(|o| o["kind"] == "ConfigMap" && o["apiVersion"] == "v1")
        .filter_map(|o| serde_json::from_value::<ConfigMap>((*o).clone()).ok())
        .filter_map(|cm| Some((cm.metadata.name.clone()?, cm)))
        .collect()
}

pub(super) fn run(args: &Args) -> Result<(), RenderError> {
    let documents = read_inputs(&args.files, std::io::stdin().lock())?;
    let catalog = catalog_with_overrides(args.overrides.as_deref())?;
    let validator = Validator::new(catalog.clone())?;
    let config_maps = config_maps(&documents.iter().map(|d| &d.object).collect::<Vec<_>>());
    let mut outputs = Vec::new();
    let mut refused = Vec::new();
    for document in &documents {
        let (verdict, stored) = validator.validate(&document.object);
        let location = &document.location;
        let admission_warnings = match verdict {
            Verdict::Skipped { .. } => continue,
            Verdict::Invalid { causes, .. } => {
                refused.extend(causes.iter().map(|c| format!("{location}: {c}")));
                continue;
            }
            Verdict::Valid { warnings } => {
                for warning in &warnings {
                    eprintln!("warning: {location}: {warning}");
                }
                warnings
            }
        };
        let manifest = |detail: String| RenderError::Manifest {
            location: location.clone(),
            detail,
        };
        let stored = stored.ok_or_else(|| manifest("no object after validation".to_owned()))?;
        let (model, door) = if stored["kind"] == "OGXServer" {
            let server: OGXServer =
                serde_json::from_value(stored).map_err(|e| manifest(e.to_string()))?;
            let model =
                crate::ogx_server::to_model(&server).map_err(|e| RenderError::NotServed {
                    location: location.clone(),
                    detail: e.to_string(),
                })?;
            (model, Door::of_ogx_server(&server))
        } else {
            let v1alpha2 = if stored["apiVersion"] == "llamastack.io/v1alpha1" {
                crate::convert::convert(&stored, "llamastack.io/v1alpha2")
                    .map_err(|e| manifest(e.to_string()))?
            } else {
                stored
            };
            let cr: LlamaStackDistribution =
                serde_json::from_value(v1alpha2).map_err(|e| manifest(e.to_string()))?;
            (cr, Door::LlamaStackDistribution)
        };
        outputs.push(render_one(
            (&model, door),
            args,
            &catalog,
            &config_maps,
            (location, &admission_warnings),
        )?);
    }
    if !refused.is_empty() {
        return Err(RenderError::Refused(refused.join("\n")));
    }
    if outputs.is_empty() {
        return Err(RenderError::Nothing);
    }
    print!("{}", outputs.join("---\n"));
    Ok(())
}
