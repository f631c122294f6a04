//! `render`: what the operator would apply for LlamaStackDistribution and `OGXServer`
//! manifests, offline. Each object is first checked as admission checks it ([`crate::validate`]);
//! v1alpha1 is converted as the conversion webhook converts it, an `OGXServer` mapped into the
//! model as the controller maps it. Then the controller's own pipeline runs with an offline
//! gather: the manifests and files given stand for the cluster ([`Reach::Manifests`]), and the
//! controller's [`decide`] makes the one decision. The image is the catalog's or the manifest's
//! reference, not pinned, since render does not reach a registry; its base config is the embedded
//! one of a named distribution or `--base-config`; an image whose config render cannot know runs
//! its own, and a user's ConfigMap is mounted whole, as in the cluster.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use llama_stack_resolver::embedded_base_config;
use llama_stack_resolver::{Catalog, Distribution, LookupError, Resolution, ResolveError};
use serde_json::Value;

use super::overrides::{OverridesError, catalog_with_overrides};
use crate::api::conditions::Reason;
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::core::builders::{Desired, ServerConfig};
use crate::core::conditions::Blocked;
use crate::core::decide::{Operator, decide};
use crate::core::door::Door;
use crate::core::observed::{Observed, Reach};
use crate::core::plan::Planned;
use crate::core::server_run;
use crate::core::stack::{ConfigRole, Invalid, Model, Stack, UserConfigMap};
use crate::stack_config::parse_base;
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
    /// The controller would block the stack: its condition's message.
    #[error("{0}")]
    Blocked(String),
    /// The `--base-config` file is not a base config.
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

/// Every object the controller applies, as one YAML stream. Offline, so without the values only
/// the cluster knows (CA bundle, Secret hashes, pull secrets).
fn objects(desired: &Desired) -> Result<String, RenderError> {
    let err = |e: &dyn std::fmt::Display| RenderError::Output(e.to_string());
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

/// The gather step, offline: what the controller would read, from the manifests and files given
/// (`--base-config`'s text: `file`).
fn observed_offline(
    stack: &Stack<'_>,
    file: Option<String>,
    image: &str,
    config_maps: &BTreeMap<String, ConfigMap>,
) -> Result<Observed, RenderError> {
    let user_config = user_config_offline(stack, file.as_deref(), config_maps)?;
    Ok(Observed {
        reach: Reach::Manifests,
        reference: image.to_owned(),
        resolution: Some(resolution_offline(stack, file, image)?),
        user_config,
        ..Observed::default()
    })
}

/// The user's ConfigMap the stack names, from the manifests: a whole config not among them is
/// mounted all the same (with a warning); a `baseConfig` must be there, or given as `file`.
fn user_config_offline(
    stack: &Stack<'_>,
    file: Option<&str>,
    config_maps: &BTreeMap<String, ConfigMap>,
) -> Result<Option<ConfigMap>, RenderError> {
    let Some(UserConfigMap { role, name, key }) = stack.user_config_map else {
        return Ok(None);
    };
    let found = config_maps.get(name).cloned();
    match (role, file, found) {
        (ConfigRole::Whole, _, found) => {
            if found.is_none() {
                eprintln!(
                    "warning: ConfigMap {name:?} is not among the inputs: the server runs its config.yaml, run.yaml or only key; shown here as config.yaml"
                );
            }
            Ok(found)
        }
        (ConfigRole::Base, Some(text), _) => Ok(Some(ConfigMap {
            data: Some(BTreeMap::from([(
                key.unwrap_or("config.yaml").to_owned(),
                text.to_owned(),
            )])),
            ..ConfigMap::default()
        })),
        (ConfigRole::Base, None, Some(cm)) => Ok(Some(cm)),
        (ConfigRole::Base, None, None) => Err(RenderError::NoBase(format!(
            "spec.baseConfig names ConfigMap {name:?}, which is not among the inputs; pass it with -f, or its config with --base-config FILE"
        ))),
    }
}

/// The distribution "resolved" offline: `image` with the base config the controller would find
/// for it, as far as render can know it: `file` (which stands for the image's labels, unless it
/// stands for `baseConfig`'s ConfigMap), else the embedded config of a named distribution;
/// without either, an image whose labels render does not read.
fn resolution_offline(
    stack: &Stack<'_>,
    file: Option<String>,
    image: &str,
) -> Result<Result<Resolution, Arc<ResolveError>>, RenderError> {
    let base_named = stack
        .user_config_map
        .is_some_and(|n| n.role == ConfigRole::Base);
    let labelled = match (file, &stack.distribution) {
        (Some(text), _) if !base_named => Some(Arc::new(parse_base(&text)?)),
        (_, Distribution::Name(name)) => embedded_base_config(name)
            .transpose()
            .map_err(|e| RenderError::NoBase(e.to_string()))?,
        (_, Distribution::Image(_)) => None,
    };
    Ok(match labelled {
        Some(config) => Ok(Resolution {
            image: image.to_owned(),
            pinned: false,
            config,
            stale: None,
            signature: None,
        }),
        None => Err(Arc::new(ResolveError::BaseConfigRequired {
            image: image.to_owned(),
        })),
    })
}

/// Why `--config`/`--env` have nothing to show for `planned`, when they do not.
fn nothing_to_show(planned: &Planned, config_maps: &BTreeMap<String, ConfigMap>) -> Option<String> {
    let image = &planned.image;
    match &planned.mount {
        ServerConfig::Image => Some(format!(
            "the server runs the config inside {image} (`llama-stack-operator resolve {image} --show-config` prints it, if the image is labelled with it)"
        )),
        ServerConfig::User { config_map, .. } if !config_maps.contains_key(config_map) => Some(
            format!("the config is in ConfigMap {config_map:?}, which is not among the inputs"),
        ),
        ServerConfig::User { .. } | ServerConfig::Generated(_) => None,
    }
}

/// What blocks a stack offline, as render says it: the controller's message, except where
/// render's own limits are the cause (it reads no image labels).
fn refusal(stack: &Stack<'_>, image: &str, blocked: Blocked) -> RenderError {
    match (blocked.reason, server_run::generation_asked(stack)) {
        (Reason::BaseConfigRequired, Some(field)) => RenderError::NoBase(format!(
            "{field} asks for a generated config, and the base config of {image} is in its labels, which render does not fetch; pass --base-config FILE (`llama-stack-operator resolve {image} --show-config` prints it)"
        )),
        _ => RenderError::Blocked(blocked.message),
    }
}

/// The output for one admitted stack: gathered offline, decided as the controller decides.
/// Generation's warnings are printed with `location`, except those admission gave already
/// (`admission_warnings`, printed by the caller).
fn render_one(
    (model, door): (Model<'_>, Door),
    args: &Args,
    catalog: &Catalog,
    config_maps: &BTreeMap<String, ConfigMap>,
    (location, admission_warnings): (&str, &[String]),
) -> Result<String, RenderError> {
    // Offline: the catalog's (or the manifest's) reference, not pinned to a digest.
    let image = match &model.spec.distribution.name {
        Some(name) => catalog.image(name)?.to_owned(),
        None => model.spec.distribution.image.clone().unwrap_or_default(),
    };
    let stack = Stack::read_through(model, door)?;
    let file = args.base_config.as_ref().map(read).transpose()?;
    let observed = observed_offline(&stack, file, &image, config_maps)?;
    // The operator's own image runs the external-provider steps; offline it is left unnamed.
    let operator = Operator {
        image: Some(""),
        ..Operator::default()
    };
    let decision =
        decide(&stack, &observed, &operator).map_err(|e| RenderError::Output(e.to_string()))?;
    let intent = decision
        .next
        .map_err(|blocked| refusal(&stack, &image, blocked))?;
    let generated = &intent.planned.generated;
    let nothing = nothing_to_show(&intent.planned, config_maps);
    // The plan's warnings (what the controller puts in `ConfigGenerated`), then the generator's
    // when there is a config to show; each once, and none admission gave already.
    let shown = nothing
        .is_none()
        .then_some(&generated.warnings)
        .into_iter()
        .flatten();
    let mut printed: Vec<&String> = Vec::new();
    for warning in intent.planned.warnings.iter().chain(shown) {
        let said = admission_warnings
            .iter()
            .any(|w| w.contains(warning.as_str()));
        if !said && !printed.contains(&warning) {
            eprintln!("warning: {location}: {warning}");
            printed.push(warning);
        }
    }
    if args.config || args.env {
        if let Some(why) = nothing {
            return Err(RenderError::NoBase(why));
        }
        return if args.config {
            Ok(generated.yaml.clone())
        } else {
            serde_saphyr::to_string(&generated.env).map_err(|e| RenderError::Output(e.to_string()))
        };
    }
    objects(&intent.desired)
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
        let (meta, spec, status, door) = if stored["kind"] == "OGXServer" {
            let server: OGXServer =
                serde_json::from_value(stored).map_err(|e| manifest(e.to_string()))?;
            let modelled =
                crate::ogx_server::to_model(&server).map_err(|e| RenderError::NotServed {
                    location: location.clone(),
                    detail: e.to_string(),
                })?;
            let door = crate::ogx_server::door(&server);
            (server.metadata, modelled.spec, modelled.status, door)
        } else {
            let v1alpha2 = if stored["apiVersion"] == "llamastack.io/v1alpha1" {
                crate::convert::convert(&stored, "llamastack.io/v1alpha2")
                    .map_err(|e| manifest(e.to_string()))?
            } else {
                stored
            };
            let cr: LlamaStackDistribution =
                serde_json::from_value(v1alpha2).map_err(|e| manifest(e.to_string()))?;
            (
                cr.metadata,
                cr.spec,
                cr.status,
                Door::LlamaStackDistribution,
            )
        };
        let model = Model {
            meta: &meta,
            spec: &spec,
            status: status.as_ref(),
        };
        outputs.push(render_one(
            (model, door),
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
