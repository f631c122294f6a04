//! `resolve`: a distribution name or image to the pinned image and base config the operator
//! would deploy, with the same code the controller uses.

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use llama_stack_resolver::MirrorRule;
use llama_stack_resolver::Platform;
use llama_stack_resolver::read_ca_file;
use llama_stack_resolver::{CredentialSource, Keyring};
use llama_stack_resolver::{Distribution, Resolver, ResolverOptions};
use llama_stack_resolver::{SecretOutcome, add_pull_secret};
use serde::Serialize;

use super::overrides::catalog_with_overrides;

/// Output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum Format {
    /// JSON.
    #[default]
    Json,
    /// YAML.
    Yaml,
}

/// Options of `resolve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A distribution name (e.g. `starter`) or an image reference.
    distribution: String,
    /// The operator ConfigMap's `image-overrides` value (a YAML map of name to image).
    #[arg(long, value_name = "FILE")]
    overrides: Option<PathBuf>,
    /// A Secret manifest (YAML or JSON) of type kubernetes.io/dockerconfigjson or
    /// kubernetes.io/dockercfg; repeat in the order kubelet would try them.
    #[arg(long = "pull-secret", value_name = "FILE")]
    pull_secrets: Vec<PathBuf>,
    /// A mirror rule FROM=TO (registry or repository prefixes); repeatable.
    #[arg(long = "mirror", value_name = "FROM=TO")]
    mirrors: Vec<MirrorRule>,
    /// Extra CA certificates (PEM) to trust for registries (at most 10 MiB).
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// A registry reached over plain HTTP; repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    insecure_registries: Vec<String>,
    /// Platform whose image carries the labels.
    #[arg(long, default_value = "linux/amd64")]
    platform: Platform,
    /// Read this one of the image's config files (one its `com.ogx.distribution.configs` label
    /// lists), as `distribution.imageConfig` asks, instead of the one it runs.
    #[arg(long, value_name = "FILE")]
    image_config: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t)]
    format: Format,
    /// Also print the base config.
    #[arg(long)]
    show_config: bool,
    /// Fail (exit 1, after printing the answer) unless the answer is fresh and its base config
    /// was read from the image: a stale answer (the registry could not be reached) or the
    /// operator's embedded fallback config is an error. For checks of a mirror before cutting
    /// over, which must not pass on a dead mirror.
    #[arg(long)]
    strict: bool,
    /// A public key (PEM, e.g. cosign.pub) that must have signed the image with cosign (either
    /// form: the `.sig` tag or a sigstore bundle referrer); repeatable: any one of them counts.
    /// The check is made before the image's label is read, as the operator's `image-signatures`
    /// policy makes it; an unsigned image, or one signed by another key, is an error naming the
    /// digest (exit 1).
    #[arg(long = "verify-key", value_name = "FILE")]
    verify_keys: Vec<PathBuf>,
    /// With --verify-key: the repository (`registry/repository`) the signatures are kept in,
    /// when not beside the image (cosign's COSIGN_REPOSITORY).
    #[arg(long, value_name = "REPOSITORY", requires = "verify_keys")]
    signature_repository: Option<String>,
    #[command(flatten)]
    credential_providers: super::credential_providers::CredentialProviderArgs,
}

/// Errors of `resolve`, each one line.
#[derive(Debug, thiserror::Error)]
pub enum ResolveCliError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A pull secret file is not a Secret.
    #[error("{path} is not a Kubernetes Secret manifest: {detail}")]
    NotASecret {
        /// The file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// A pull secret is unusable.
    #[error("{0}")]
    PullSecret(#[from] llama_stack_resolver::PullSecretError),
    /// A pull secret has another type.
    #[error(
        "{path}: type {secret_type} is not a pull secret; use kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg"
    )]
    NotAPullSecret {
        /// The file.
        path: PathBuf,
        /// Its type.
        secret_type: String,
    },
    /// The overrides could not be read.
    #[error(transparent)]
    Overrides(#[from] super::overrides::OverridesError),
    /// Resolution failed.
    #[error("{0}")]
    Resolve(Arc<llama_stack_resolver::ResolveError>),
    /// Set-up failed.
    #[error("{0}")]
    Setup(llama_stack_resolver::ResolveError),
    /// Output failed.
    #[error("cannot write the result: {0}")]
    Output(String),
    /// The credential provider config is unusable.
    #[error(transparent)]
    CredentialProviders(#[from] llama_stack_resolver::credential_provider::ConfigError),
    /// A `--verify-key` file is not a usable public key.
    #[error("--verify-key {0}")]
    Key(#[from] llama_stack_resolver::signature::KeyError),
    /// `--strict`, and the answer is stale or uses the embedded fallback config.
    #[error("--strict: {0}")]
    NotStrict(String),
}

/// Why an answer fails `--strict`, if it does.
fn strictness_failure(stale_reason: Option<&str>, config_source: &str) -> Option<String> {
    if let Some(reason) = stale_reason {
        return Some(format!(
            "the answer is stale, from the cache, because the registry could not be reached: {reason}"
        ));
    }
    (config_source == llama_stack_resolver::base_config::ConfigSource::Embedded.as_str()).then(|| {
        "the base config is the operator's embedded fallback, not one read from the image's labels".to_owned()
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    image: &'a str,
    pinned: bool,
    config_source: &'a str,
    config_hash: &'a str,
    config_version: u64,
    /// The server line the image runs (`ogx`, `llama-stack`), as the controller decides it.
    server_line: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_version: Option<String>,
    /// What told the line: a label, the catalog, or nothing.
    server_line_source: &'static str,
    /// The image's config file the base config was read from (OGX labels).
    #[serde(skip_serializing_if = "Option::is_none")]
    image_config: Option<&'a str>,
    /// The config files the image carries, any of which `--image-config` can name.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    image_configs: &'a [String],
    stale: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stale_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<SignatureOutput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<&'a str>,
}

/// The signature check, as printed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SignatureOutput {
    /// verified, unsigned or failed.
    result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    form: Option<&'static str>,
    detail: String,
}

fn signature_output(check: &llama_stack_resolver::signature::SignatureCheck) -> SignatureOutput {
    let (key, form) = match &check.verdict {
        llama_stack_resolver::signature::SignatureVerdict::Verified { key, form } => {
            (Some(key.clone()), Some(*form))
        }
        _ => (None, None),
    };
    SignatureOutput {
        result: check.outcome(),
        key,
        form,
        detail: check.describe(),
    }
}

/// The policy of `--verify-key`: every image must be signed by one of the keys in the files.
fn verify_policy(
    files: &[PathBuf],
    signature_repository: Option<String>,
) -> Result<Option<llama_stack_resolver::signature::SignaturePolicy>, ResolveCliError> {
    use llama_stack_resolver::signature::{PublicKey, SignaturePolicy};
    if files.is_empty() {
        return Ok(None);
    }
    let mut keys = Vec::new();
    for path in files {
        let pem = read_bounded_file(path)?;
        keys.extend(PublicKey::from_pem(&path.display().to_string(), &pem)?);
    }
    Ok(Some(SignaturePolicy::require_everywhere(
        keys,
        signature_repository,
    )))
}

/// A key file, read within the bound of a PEM of keys.
fn read_bounded_file(path: &std::path::Path) -> Result<Vec<u8>, ResolveCliError> {
    let limit = llama_stack_resolver::signature::keys::MAX_KEYS_PEM_BYTES as u64;
    llama_stack_resolver::read_file_within(path, limit).map_err(|source| ResolveCliError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn read(path: &PathBuf) -> Result<String, ResolveCliError> {
    std::fs::read_to_string(path).map_err(|source| ResolveCliError::Read {
        path: path.clone(),
        source,
    })
}

fn keyring(paths: &[PathBuf]) -> Result<Keyring, ResolveCliError> {
    let mut keyring = Keyring::default();
    for path in paths {
        let secret: Secret =
            serde_saphyr::from_str(&read(path)?).map_err(|e| ResolveCliError::NotASecret {
                path: path.clone(),
                detail: e.to_string(),
            })?;
        let mut data: std::collections::BTreeMap<String, Vec<u8>> = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        data.extend(
            secret
                .string_data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes())),
        );
        let source = CredentialSource {
            namespace: secret
                .metadata
                .namespace
                .unwrap_or_else(|| "default".to_owned()),
            name: secret
                .metadata
                .name
                .unwrap_or_else(|| path.display().to_string()),
        };
        let secret_type = secret.type_.unwrap_or_default();
        if let SecretOutcome::IgnoredType(t) =
            add_pull_secret(&mut keyring, source, &secret_type, &data)?
        {
            return Err(ResolveCliError::NotAPullSecret {
                path: path.clone(),
                secret_type: t,
            });
        }
    }
    Ok(keyring)
}

pub(super) fn run(args: Args) -> Result<(), ResolveCliError> {
    let catalog = catalog_with_overrides(args.overrides.as_deref())?;
    let distribution = if catalog.image(&args.distribution).is_ok()
        || !args.distribution.contains(['/', ':', '@'])
    {
        Distribution::Name(args.distribution.clone())
    } else {
        Distribution::Image(args.distribution.clone())
    };
    let keyring = keyring(&args.pull_secrets)?;
    let mut options = ResolverOptions::new(catalog);
    options.mirrors = args.mirrors;
    options.platform = args.platform;
    options.insecure_registries = args.insecure_registries;
    if let Some(path) = &args.ca_file {
        let pem = read_ca_file(path).map_err(|source| ResolveCliError::Read {
            path: path.clone(),
            source,
        })?;
        options.extra_ca_pem = Some(pem);
    }
    options.credential_providers = args.credential_providers.load()?;
    if let Some(policy) = verify_policy(&args.verify_keys, args.signature_repository)? {
        options.signatures = Arc::new(policy);
    }
    let resolver = Resolver::new(options).map_err(ResolveCliError::Setup)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ResolveCliError::Output(e.to_string()))?;
    let resolution = runtime
        .block_on(resolver.resolve_choosing(&distribution, args.image_config.as_deref(), &keyring))
        .map_err(ResolveCliError::Resolve)?;
    let server = resolution.config.server.unwrap_or_default();
    let output = Output {
        image: &resolution.image,
        pinned: resolution.pinned,
        config_source: resolution.config.source.as_str(),
        config_hash: &resolution.config.hash,
        config_version: resolution.config.version,
        server_line: server.line.as_str(),
        server_version: server.version.map(|v| v.to_string()),
        server_line_source: server.evidence.as_str(),
        image_config: resolution.config.file.as_deref(),
        image_configs: &resolution.config.configs,
        stale: resolution.stale.is_some(),
        stale_reason: resolution.stale.as_ref().map(ToString::to_string),
        signature: resolution.signature.as_deref().map(signature_output),
        config: args.show_config.then_some(&*resolution.config.yaml),
    };
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&output)
            .map(|mut s| {
                s.push('\n');
                s
            })
            .map_err(|e| ResolveCliError::Output(e.to_string()))?,
        Format::Yaml => {
            serde_saphyr::to_string(&output).map_err(|e| ResolveCliError::Output(e.to_string()))?
        }
    };
    print!("{text}");
    match strictness_failure(output.stale_reason.as_deref(), output.config_source) {
        Some(failure) if args.strict => Err(ResolveCliError::NotStrict(failure)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::strictness_failure;

    #[test]
    fn strict_refuses_a_stale_answer_and_the_embedded_fallback_only() {
        assert_eq!(strictness_failure(None, "oci-label"), None);
        assert!(
            strictness_failure(Some("connection refused"), "oci-label")
                .is_some_and(|f| f.contains("stale") && f.contains("connection refused"))
        );
        assert!(strictness_failure(None, "embedded").is_some_and(|f| f.contains("embedded")));
    }
}
