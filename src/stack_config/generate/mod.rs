//! v1alpha2 spec + base config -> the server's `config.yaml` (pure, deterministic), for the
//! server line the base config belongs to (llama-stack 0.7.3 or OGX 1.x: the provider table, the
//! APIs it has, where its state goes, and whether it must be told it may serve plain HTTP).
//!
//! Stages, in this order, one module each: the user's providers, replacing the base config's per
//! API (`providers.rs`) -> disabled APIs (subtractive), then the references the changes left
//! dangling repaired (`disabled.rs`) -> models, shields and tool groups (additive,
//! `resources.rs`) -> storage, per subsection (`storage.rs`) -> a gateway's trust (`gateway.rs`,
//! which also takes the APIs it serves out after the disabled ones) -> the server section
//! (`server_section.rs`) -> serialize -> sha256. Secrets never enter the config: they become
//! `${env.LLSD_…}` references plus environment variables filled from Secrets.
//!
//! Choices where the specs and llama-stack 0.7.3 disagree (see docs/config-generation.md):
//! - `endpoint` and `apiKey` go to the provider's own URL and secret keys from the provider
//!   table (vLLM: `base_url`, `api_token`), not to `url`/`api_key`.
//! - A user provider of a type the base config already has starts from that provider's config
//!   (defaults such as `persistence` and `${env.…}` knobs), then gets the user's fields. The base
//!   providers of that API are otherwise dropped (providers are replaced per API, never merged).
//! - An API both configured and disabled is an error, not a warning: one of the two is a mistake.

use std::collections::{BTreeMap, BTreeSet};

use llama_stack_resolver::base_config::{
    BaseConfig, BaseConfigError, ConfigSource, parse_base_config,
};
use llama_stack_resolver::server_line::{ServerLine, ServerRelease};
use serde_json::{Map, Value, json};

use super::env::{EnvSource, EnvVarSpec, UrlPart, env_name, env_ref};
use super::table::{ProviderInfo, ProviderTable};
use crate::api::apis;
use crate::api::polymorphic::NameOrObject;
use crate::api::v1alpha2::{
    KvStorageSpec, KvStorageType, LlamaStackDistributionSpec, ModelConfig, ModelConfigOrString,
    ProviderConfig, SecretKeyRef, SecretValue, SqlStorageSpec, SqlStorageType,
};

mod client_identity;
mod disabled;
mod gateway;
mod named_storage;
mod providers;
mod resources;
mod server_section;
mod storage;

use disabled::*;
use providers::*;
use resources::*;

pub use client_identity::CLIENT_IDENTITY_DIR;
pub use gateway::{OPERATOR_CALLER, PRINCIPAL_HEADER, TENANT_HEADER};
#[cfg(test)]
pub(crate) use named_storage::password_variable as password_variable_for_tests;
pub use server_section::TLS_DIR;
use storage::*;

/// A generation problem at a field path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FieldError {
    /// Path from the object root, e.g. `spec.providers.inference[1].id`.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Why no config was generated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// The base config is not usable.
    #[error("the base config is not a llama-stack config: {0}")]
    BaseConfig(String),
    /// The base config's schema version is not one this operator generates from.
    #[error("the base config is not a llama-stack config: {0}")]
    UnsupportedVersion(llama_stack_resolver::base_config::BaseConfigError),
    /// The spec cannot be turned into a working config.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
}

/// The generated config and what goes with it (empty by default: no config).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GeneratedConfig {
    /// `config.yaml` bytes.
    pub yaml: String,
    /// `sha256:<hex>` of `yaml`.
    pub hash: String,
    /// Environment variables the server container needs (secrets by reference only).
    pub env: Vec<EnvVarSpec>,
    /// Providers in the config.
    pub provider_count: usize,
    /// Registered models, shields and tool groups asked for.
    pub resource_count: usize,
    /// Schema version of the config.
    pub config_version: u64,
    /// Things the user should know (ignored keys, repaired references, removed APIs).
    pub warnings: Vec<String>,
}

struct Ctx<'a> {
    table: &'a ProviderTable,
    /// The server the config is for: the image's release, else the table's.
    release: ServerRelease,
    errors: Vec<FieldError>,
    warnings: Vec<String>,
    env: BTreeMap<String, EnvVarSpec>,
    /// Which spec field each Secret's variable is for: two fields must never share one (the
    /// server would read one Secret for both).
    env_owners: BTreeMap<String, String>,
}

impl Ctx<'_> {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError {
            path: path.into(),
            message: message.into(),
        });
    }

    /// The `${env.NAME}` reference of a variable read from `secret` for the spec field `path`;
    /// an error when another field already uses that variable name (ids that differ only in
    /// case or punctuation, `my-vllm` and `my_vllm`, give one name).
    fn secret_env(&mut self, name: String, secret: &SecretKeyRef, path: &str) -> String {
        let reference = env_ref(&name);
        if let Some(owner) = self.env_owners.get(&name).filter(|owner| *owner != path) {
            let owner = owner.clone();
            self.error(
                path,
                format!("its Secret would be passed as {name}, which {owner} already uses, so the server would read one Secret for both; give the two names (provider ids, backend names) that differ in more than case or punctuation"),
            );
            return reference;
        }
        self.env_owners.insert(name.clone(), path.to_owned());
        self.env.insert(
            name.clone(),
            EnvVarSpec {
                name,
                source: EnvSource::SecretKeyRef(secret.clone()),
            },
        );
        reference
    }
}

/// The provider entries of `api` in the config (none when it has no such list).
fn providers_of<'c>(config: &'c Map<String, Value>, api: &str) -> impl Iterator<Item = &'c Value> {
    config
        .get("providers")
        .and_then(|p| p.get(api))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The id a base config's `provider_id` names unless its variable says otherwise: `ollama` of
/// `${env.OLLAMA_URL:+ollama}` (a provider that exists when the variable is set) and
/// `vllm-embedding` of `${env.EMBEDDING_PROVIDER:=vllm-embedding}` (a reference whose default
/// the variable may change).
fn effective_id(raw: &str) -> &str {
    let Some(inner) = raw.strip_prefix("${env.").and_then(|r| r.strip_suffix('}')) else {
        return raw;
    };
    inner
        .split_once(":+")
        .or_else(|| inner.split_once(":="))
        .map_or(raw, |(_, id)| id)
}

fn base_provider_ids(config: &Map<String, Value>) -> BTreeMap<String, String> {
    let mut ids = BTreeMap::new();
    if let Some(Value::Object(providers)) = config.get("providers") {
        for (api, list) in providers {
            for p in list.as_array().into_iter().flatten() {
                if let Some(id) = p.get("provider_id").and_then(Value::as_str) {
                    ids.insert(effective_id(id).to_owned(), api.clone());
                }
            }
        }
    }
    ids
}

/// Parses a URL of the form `scheme://[user[:password]@]host[:port][/path]`.
struct ParsedUrl<'a> {
    user: Option<&'a str>,
    has_password: bool,
    host: &'a str,
    port: Option<&'a str>,
    path: Option<&'a str>,
}

fn parse_url(url: &str) -> Option<ParsedUrl<'_>> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (authority, path) = match rest.find('/') {
        Some(i) => (
            &rest[..i],
            Some(rest[i + 1..].split(['?', '#']).next().unwrap_or_default())
                .filter(|p| !p.is_empty()),
        ),
        None => (rest, None),
    };
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (user, has_password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((user, _)) => (Some(user), true),
            None => (Some(u), false),
        },
        None => (None, false),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (hostport, None),
    };
    (!host.is_empty()).then_some(ParsedUrl {
        user,
        has_password,
        host,
        port,
        path,
    })
}

/// A base config from YAML text, when it is one this operator generates from.
pub fn parse_base(base_yaml: &str) -> Result<BaseConfig, GenerateError> {
    parse_base_config(base_yaml.as_bytes(), None, ConfigSource::Embedded).map_err(|e| match e {
        BaseConfigError::UnsupportedVersion { .. } => GenerateError::UnsupportedVersion(e),
        other => GenerateError::BaseConfig(other.to_string()),
    })
}

/// [`generate`] over a base config given as YAML text, parsed first.
pub fn generate_from_yaml(
    spec: &LlamaStackDistributionSpec,
    base_yaml: &str,
    table: &ProviderTable,
) -> Result<GeneratedConfig, GenerateError> {
    generate(spec, &parse_base(base_yaml)?, table)
}

/// How the spec's models combine with the base config's: the two APIs differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModelMerge {
    /// Registered in addition to the base config's (`LlamaStackDistribution`).
    #[default]
    Add,
    /// Registered instead of the base config's, when the spec lists any (`OGXServer`, as the
    /// OGX operator merges).
    Replace,
}

/// Generates the config for a spec over a parsed base config, its models added to the base's.
pub fn generate(
    spec: &LlamaStackDistributionSpec,
    base: &BaseConfig,
    table: &ProviderTable,
) -> Result<GeneratedConfig, GenerateError> {
    generate_merging(spec, base, table, ModelMerge::Add)
}

/// Generates the config for a spec over a parsed base config, its models merged as `models`
/// says.
pub fn generate_merging(
    spec: &LlamaStackDistributionSpec,
    base: &BaseConfig,
    table: &ProviderTable,
    models: ModelMerge,
) -> Result<GeneratedConfig, GenerateError> {
    let mut config = Map::clone(&base.document);
    ensure_providers_mapping(&mut config)?;
    let config_version = base.version;
    let before = base_provider_ids(&base.document);
    let mut ctx = Ctx {
        table,
        release: base.server.unwrap_or_else(|| table.release()),
        errors: Vec::new(),
        warnings: Vec::new(),
        env: BTreeMap::new(),
        env_owners: BTreeMap::new(),
    };

    let mut ids = BTreeMap::new();
    let configured = providers(&mut ctx, spec, &mut config, &mut ids);
    telemetry(&mut ctx, spec, &mut ids);
    ensure_apis(&mut config, &configured);
    disabled(&mut ctx, spec, &configured, &mut config);
    gateway::leave_praxis_apis(&mut ctx, spec, &configured, &mut config);
    prune_dependencies(&mut ctx, &mut config);
    repair_references(&mut ctx, &mut config, &before);
    if models == ModelMerge::Replace {
        replace_base_models(spec, &mut config);
    }
    let resource_count = resources(&mut ctx, spec, &mut config);
    storage(&mut ctx, spec, &mut config);
    client_identity::client_identity(&mut ctx, spec, &mut config);
    gateway::trust_praxis(&mut ctx, spec, &mut config);
    let serving = server_section::server(
        spec,
        base.server.unwrap_or_else(|| table.release()),
        &mut config,
    );

    if !ctx.errors.is_empty() {
        return Err(GenerateError::Invalid(ctx.errors));
    }
    let provider_count = provider_count(&config);
    // Nothing to generate: the distribution's config is used byte for byte.
    let untouched = spec.providers.is_none()
        && spec.resources.is_none()
        && spec.storage.is_none()
        && spec.disabled.is_none()
        && !gateway::behind_praxis(spec)
        && !serving;
    let yaml = if untouched {
        base.yaml.to_string()
    } else {
        serde_saphyr::to_string(&Value::Object(config))
            .map_err(|e| GenerateError::BaseConfig(e.to_string()))?
    };
    if !untouched {
        ctx.warnings
            .extend(table.stand_in_warning(base.server.as_ref()));
    }
    let hash = llama_stack_resolver::sha256_hex(yaml.as_bytes());
    Ok(GeneratedConfig {
        yaml,
        hash,
        env: ctx.env.into_values().collect(),
        provider_count,
        resource_count,
        config_version,
        warnings: ctx.warnings,
    })
}

/// Makes sure `config` has a `providers` mapping: a config that declares its version may leave
/// the providers to the spec (the OGX operator's minimal base configs do); anything else without
/// them is not a config.
fn ensure_providers_mapping(config: &mut Map<String, Value>) -> Result<(), GenerateError> {
    match config.get("providers") {
        Some(Value::Object(_)) => Ok(()),
        None if config.contains_key("version") => {
            config.insert("providers".to_owned(), Value::Object(Map::new()));
            Ok(())
        }
        _ => Err(GenerateError::BaseConfig(
            "it has no providers mapping (and no version)".to_owned(),
        )),
    }
}

/// How many providers `config` configures, over every API.
fn provider_count(config: &Map<String, Value>) -> usize {
    config
        .get("providers")
        .and_then(Value::as_object)
        .map(|p| p.values().filter_map(Value::as_array).map(Vec::len).sum())
        .unwrap_or(0)
}
