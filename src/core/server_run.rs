//! Which config a stack's server runs, and the config itself, for the plan (pure): the user's
//! ConfigMap as it is, a config generated on a base config, or, with no base config, the image's
//! own. Where the base config comes from (the
//! resolver in the cluster, the embedded configs or a file offline) is the caller's business.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use llama_stack_resolver::base_config::BaseConfig;
use llama_stack_resolver::server_line::ServerRelease;

use super::builders::ServerConfig;
use super::stack::Stack;
use super::user_config::{Unrunnable, as_generated, user_config};
use crate::naming::config_map_name;
use crate::stack_config::{GenerateError, GeneratedConfig, ProviderTable, generate_merging};

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
pub fn from_user_config(
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
pub fn unread_user_config(name: &str, key: Option<&str>, server: ServerRelease) -> ServerRun {
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
pub fn from_base(stack: &Stack<'_>, base: &Arc<BaseConfig>) -> Result<ServerRun, GenerateError> {
    let base = stack.base_for_server(base);
    let generated = generate_merging(
        stack.generator_input,
        &base,
        ProviderTable::for_server(base.server.as_ref()),
        stack.door.models(),
    )?;
    Ok(ServerRun {
        config: ServerConfig::Generated(config_map_name(stack.name, &generated.hash)),
        server: stack.server(base.server),
        generated,
    })
}

/// With no base config: the image's own config and entrypoint, as the upstream operator ran an
/// image (nothing generated or mounted); refused, with the first field that asks for a generated
/// config, when the spec asks for one ([`generation_asked`]).
pub fn image_own(stack: &Stack<'_>, server: ServerRelease) -> Result<ServerRun, &'static str> {
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

#[cfg(test)]
mod tests;
