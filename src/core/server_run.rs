//! Which config a stack's server runs, and the config itself, for the plan (pure): the user's
//! ConfigMap as it is, a config generated on a base config (the user's or the image's), or, with
//! no base config, the image's own. [`run`] takes the [`Source`] the plan chose in one match and
//! runs it; every way a source fails becomes a condition reason here. Where the image's base
//! config comes from (the resolver in the cluster, the embedded configs or a file offline) is
//! the caller's business.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use llama_stack_resolver::base_config::{self, BaseConfig};
use llama_stack_resolver::server_line::ServerRelease;

use super::builders::ServerConfig;
use super::observed::Reach;
use super::stack::{Stack, UserConfigMap};
use super::user_config::{Unrunnable, as_generated, user_config};
use crate::api::conditions::Reason;
use crate::api::v1alpha2::ConfigSource;
use crate::naming::config_map_name;
use crate::stack_config::{
    GenerateError, GeneratedConfig, ProviderTable, generate_merging, parse_base,
};

/// Where a stack's config comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'a> {
    /// `overrideConfig`: the user's ConfigMap is the config, as is.
    UserWhole(UserConfigMap<'a>),
    /// `baseConfig`: a config generated on the user's ConfigMap.
    UserBase(UserConfigMap<'a>),
    /// A config generated on the image's base config (its labels', else the embedded one).
    ImageBase(&'a Arc<BaseConfig>),
    /// The image's own config: it has no config labels, and no user's ConfigMap stands in.
    ImageOwn,
}

/// What [`run`] reads beside the source: the image, what its labels told of its server, and the
/// user's ConfigMap as gathered (`reach`: whether it was looked for in a cluster).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Given<'a> {
    pub(crate) image: &'a str,
    pub(crate) told: Option<ServerRelease>,
    pub(crate) user_config: Option<&'a ConfigMap>,
    pub(crate) reach: Reach,
}

/// A source run: what the server runs, and what the status records of where it came from.
#[derive(Debug)]
pub(crate) struct Chosen {
    pub(crate) run: ServerRun,
    pub(crate) source: ConfigSource,
    /// The hash of what the config was made from (the base config, or the user's whole config).
    pub(crate) base_hash: String,
    /// The image's config file the base config was read from (OGX labels), when one was.
    pub(crate) base_file: Option<String>,
    /// What the user should know about it.
    pub(crate) warnings: Vec<String>,
}

/// Why a source cannot run: the condition's reason and message.
#[derive(Debug)]
pub(crate) struct NotRun {
    pub(crate) reason: Reason,
    pub(crate) message: String,
}

/// Runs `source`.
pub(crate) fn run(
    stack: &Stack<'_>,
    source: Source<'_>,
    given: Given<'_>,
) -> Result<Chosen, NotRun> {
    let chosen = |run: ServerRun, source, base_hash: String| Chosen {
        run,
        source,
        base_hash,
        base_file: None,
        warnings: Vec::new(),
    };
    match source {
        Source::UserWhole(named) => {
            let run = whole_user_config(stack, named, given)?;
            let hash = run.generated.hash.clone();
            Ok(chosen(run, ConfigSource::OverrideConfig, hash))
        }
        Source::UserBase(named) => {
            let (base, hash) = user_base(stack, named, given)?;
            let run = from_base(stack, &base).map_err(generation_failure)?;
            Ok(chosen(run, ConfigSource::ConfigMap, hash))
        }
        Source::ImageBase(base) => {
            let run = from_base(stack, base).map_err(generation_failure)?;
            let source = match base.source {
                base_config::ConfigSource::Embedded => ConfigSource::Embedded,
                base_config::ConfigSource::OciLabel => ConfigSource::OciLabel,
            };
            Ok(Chosen {
                base_file: base.file.clone(),
                ..chosen(run, source, base.hash.clone())
            })
        }
        Source::ImageOwn => {
            let run = image_own(stack, server(stack, None)).map_err(|field| NotRun {
                reason: Reason::BaseConfigRequired,
                message: base_config_required(given.image, field),
            })?;
            Ok(Chosen {
                warnings: image_config_warnings(stack),
                ..chosen(run, ConfigSource::Image, String::new())
            })
        }
    }
}

/// `overrideConfig` (v1alpha1 `userConfig`): the user's ConfigMap is the config, as is, mounted
/// whole as the upstream operator mounted it; the hash of all its keys rolls the Pods on edits.
fn whole_user_config(
    stack: &Stack<'_>,
    named: UserConfigMap<'_>,
    given: Given<'_>,
) -> Result<ServerRun, NotRun> {
    let server = server(stack, given.told);
    let (ns, name) = (stack.namespace(), named.name);
    match (given.user_config, given.reach) {
        (Some(cm), _) => from_user_config(name, named.key, cm, server).map_err(|e| match e {
            Unrunnable::Unusable(message) => NotRun::generation(message),
            Unrunnable::OtherLine(message) => NotRun {
                reason: Reason::ConfigServerMismatch,
                message,
            },
        }),
        // Offline, without the ConfigMap: mounted whole all the same, its config unknown.
        (None, Reach::Manifests) => Ok(unread_user_config(name, named.key, server)),
        (None, Reach::Cluster) => Err(NotRun::generation(format!(
            "ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: spec.overrideConfig.configMapName"
        ))),
    }
}

/// `baseConfig`: the user's ConfigMap as the base config to generate on, for the server the
/// image's labels told (else the one the spec declares), and its hash.
fn user_base(
    stack: &Stack<'_>,
    named: UserConfigMap<'_>,
    given: Given<'_>,
) -> Result<(Arc<BaseConfig>, String), NotRun> {
    let (ns, name) = (stack.namespace(), named.name);
    let cm = given.user_config.ok_or_else(|| {
        NotRun::generation(format!(
            "ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: spec.baseConfig.configMapName"
        ))
    })?;
    let user = user_config(cm, named.key)
        .map_err(|e| NotRun::generation(e.message(name, "spec.baseConfig")))?;
    let parsed = parse_base(user.yaml).map_err(|e| match e {
        GenerateError::UnsupportedVersion(inner) => NotRun {
            reason: Reason::UnsupportedConfigVersion,
            message: format!("{} of ConfigMap \"{name}\": {inner}", user.key),
        },
        other => NotRun {
            reason: Reason::InvalidBaseConfig,
            message: format!(
                "{} of ConfigMap \"{name}\" is not a base config: {other}",
                user.key
            ),
        },
    })?;
    let base = Arc::new(BaseConfig {
        server: given.told.or(stack.declared_server),
        ..parsed
    });
    Ok((base, user.hash))
}

impl NotRun {
    /// A config that could not be made, saying `message`.
    fn generation(message: String) -> Self {
        Self {
            reason: Reason::ConfigGenerationFailed,
            message,
        }
    }
}

/// Why a config could not be generated on a base config.
fn generation_failure(error: GenerateError) -> NotRun {
    match error {
        GenerateError::UnsupportedVersion(inner) => NotRun {
            reason: Reason::UnsupportedConfigVersion,
            message: inner.to_string(),
        },
        other => NotRun::generation(format!("Failed to generate config.yaml: {other}")),
    }
}

/// Why an image without a base config cannot run what the spec asks for, and the ways out.
fn base_config_required(image: &str, field: &str) -> String {
    format!(
        "image {image} has no config labels (com.ogx.config.* or io.llamastack.config.*) and the operator has no embedded config for it, so there is no base config to generate from, and {field} asks for a generated config. Fix: remove {field} to run the image's own config, use an image labelled with its config (docs/configuration.md), or give the whole config in overrideConfig.configMapName"
    )
}

/// What the spec sets that the image's own config does not see.
fn image_config_warnings(stack: &Stack<'_>) -> Vec<String> {
    let workers = stack.workload.workers;
    workers
        .filter(|w| *w > 1)
        .map(|w| {
            format!(
                "workload.workers ({w}) has no effect: the server runs the image's own config, which sets its own workers"
            )
        })
        .into_iter()
        .collect()
}

/// What the server of a stack runs.
#[derive(Clone, Debug)]
pub struct ServerRun {
    /// Which config, and how it reaches the server container.
    pub config: ServerConfig,
    /// The server the image runs.
    pub server: ServerRelease,
    /// The config (the user's, for their ConfigMap; empty for the image's own).
    pub generated: GeneratedConfig,
}

/// The user's ConfigMap `name` (`overrideConfig`, at its `key` when given) as the server's config,
/// as is; or why it cannot be (a message naming the ConfigMap).
fn from_user_config(
    name: &str,
    key: Option<&str>,
    config_map: &ConfigMap,
    server: ServerRelease,
) -> Result<ServerRun, Unrunnable> {
    let user = user_config(config_map, key)
        .map_err(|e| Unrunnable::Unusable(e.message(name, "spec.overrideConfig")))?;
    let generated = as_generated(&user, name, server)?;
    Ok(ServerRun {
        config: ServerConfig::User {
            config_map: name.to_owned(),
            key: user.key.to_owned(),
        },
        server,
        generated,
    })
}

/// The user's ConfigMap `name` as the server's config when its content is unknown (offline, not
/// among the manifests): mounted whole, the server runs `key`, else `config.yaml` (in the cluster,
/// its `config.yaml`, `run.yaml` or only key).
fn unread_user_config(name: &str, key: Option<&str>, server: ServerRelease) -> ServerRun {
    ServerRun {
        config: ServerConfig::User {
            config_map: name.to_owned(),
            key: key.unwrap_or("config.yaml").to_owned(),
        },
        server,
        generated: GeneratedConfig::default(),
    }
}

/// A config generated from the spec on `base`, for the server `base` names (or the spec
/// declares), in the hash-named ConfigMap.
fn from_base(stack: &Stack<'_>, base: &Arc<BaseConfig>) -> Result<ServerRun, GenerateError> {
    let base = base_for_server(stack, base);
    let generated = generate_merging(
        stack.generator_input,
        &base,
        ProviderTable::for_server(base.server.as_ref()),
        stack.door.models(),
    )?;
    Ok(ServerRun {
        config: ServerConfig::Generated(config_map_name(stack.name(), &generated.hash)),
        server: server(stack, base.server),
        generated,
    })
}

/// With no base config: the image's own config and entrypoint, as the upstream operator ran an
/// image (nothing generated or mounted); refused, with the first field that asks for a generated
/// config, when the spec asks for one ([`generation_asked`]).
fn image_own(stack: &Stack<'_>, server: ServerRelease) -> Result<ServerRun, &'static str> {
    if let Some(field) = generation_asked(stack) {
        return Err(field);
    }
    Ok(ServerRun {
        config: ServerConfig::Image,
        server,
        generated: GeneratedConfig::default(),
    })
}

/// The first field of the spec that only a generated config can carry: with it, an image
/// without a base config cannot run its own config instead.
pub fn generation_asked(stack: &Stack<'_>) -> Option<&'static str> {
    let spec = stack.generator_input;
    let tls = spec
        .networking
        .as_ref()
        .and_then(|n| n.tls.as_ref())
        .is_some_and(|t| t.enabled);
    [
        ("spec.providers", spec.providers.is_some()),
        ("spec.resources", spec.resources.is_some()),
        ("spec.storage", spec.storage.is_some()),
        (
            "spec.disabled",
            spec.disabled.as_ref().is_some_and(|d| !d.is_empty()),
        ),
        ("spec.externalProviders", stack.has_external_providers()),
        ("spec.networking.tls.enabled", tls),
        (
            "spec.networking.tls.clientIdentity",
            stack.networking.client_identity.is_some(),
        ),
    ]
    .into_iter()
    .find_map(|(field, set)| set.then_some(field))
}

/// The server the stack's image runs: what its labels or the catalog told (`told`), completed
/// by what the spec declares ([`completed`]), else the llama-stack line (how every image before
/// OGX ran).
fn server(stack: &Stack<'_>, told: Option<ServerRelease>) -> ServerRelease {
    completed(told, stack.declared_server).unwrap_or(ServerRelease::ASSUMED)
}

/// `base` as the stack's server reads it: when its labels said nothing of the server, or named
/// its line without a release, and the spec declares one, a copy that carries the declared
/// release (the resolver's cached config is shared and stays as the image said).
fn base_for_server(stack: &Stack<'_>, base: &Arc<BaseConfig>) -> Arc<BaseConfig> {
    let server = completed(base.server, stack.declared_server);
    if server == base.server {
        return base.clone();
    }
    Arc::new(BaseConfig {
        server,
        ..BaseConfig::clone(base)
    })
}

/// The server an image runs: what its labels told (`told`), unless they said nothing, or named
/// the line without a release (RHOAI's images label `0.0`) and the spec declares a release of
/// that line (`declared`); then the declared one. Labels that name a release win.
fn completed(
    told: Option<ServerRelease>,
    declared: Option<ServerRelease>,
) -> Option<ServerRelease> {
    match (told, declared) {
        (Some(told), Some(declared)) if told.version.is_none() && told.line == declared.line => {
            Some(declared)
        }
        (Some(told), _) => Some(told),
        (None, declared) => declared,
    }
}

#[cfg(test)]
#[path = "tests/server_run.rs"]
mod tests;
