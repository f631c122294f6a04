//! The config half of a decision (pure): from the resolution and the user's ConfigMap as
//! gathered, which image runs which config, with what the user should know about it.

use llama_stack_resolver::{FailureKind, Resolution, ResolveError};
use std::sync::Arc;

use llama_stack_resolver::base_config::BaseConfig;
use llama_stack_resolver::server_line::ServerRelease;

use super::builders::{self, ServerConfig};
use super::conditions::Blocked;
use super::observed::{Observed, Reach};
use super::pin::{self, Pin};
use super::server_run::{self, ServerRun};
use super::stack::{ConfigRole, Stack, UserConfigMap};
use super::user_config::{Unrunnable, user_config};
use crate::api::conditions::{ConditionType, Reason};
use crate::api::v1alpha2::ConfigSource;
use crate::stack_config::GenerateError;
use crate::stack_config::parse_base;

/// The outcome of the config half of a decision.
#[derive(Debug)]
pub struct Planned {
    /// The config the Pods run.
    pub mount: ServerConfig,
    pub image: String,
    /// The server the image runs.
    pub server: ServerRelease,
    pub source: ConfigSource,
    pub base_hash: String,
    /// The image's config file the base config was read from (OGX labels), when one was.
    pub base_file: Option<String>,
    pub generated: crate::stack_config::GeneratedConfig,
    pub stale: Option<String>,
    /// Pull secrets of the Pod's ServiceAccount (copied into the managed one).
    pub pull_secrets: Vec<String>,
    /// Where the image's pin came from.
    pub(crate) pin: Pin,
    /// What the user should know about the plan (shown in the `ConfigGenerated` message).
    pub warnings: Vec<String>,
}

/// What the operator itself brings to a decision: its settings and what it learnt of the
/// cluster it runs in.
#[derive(Clone, Copy, Debug, Default)]
pub struct Operator<'a> {
    /// The operator's own image (its binary runs the external-provider steps in the Pods).
    pub image: Option<&'a str>,
    /// The operator's namespace (allowed by the NetworkPolicy).
    pub namespace: Option<&'a str>,
    /// Whether the cluster serves OpenShift Routes.
    pub routes_available: bool,
    /// Whether it serves ServiceMonitors and PrometheusRules.
    pub monitoring_available: bool,
}

/// Why no config could be planned: the condition reason and message, and the image resolved.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) reason: Reason,
    pub(crate) message: String,
    pub(crate) image: Option<String>,
}

/// A registry that failed the plan, saying `message`.
fn registry(message: String) -> Failure {
    Failure {
        reason: Reason::RegistryError,
        message,
        image: None,
    }
}

/// A resolution failure, for the status.
fn resolve_failure(error: &llama_stack_resolver::ResolveError) -> Failure {
    Failure {
        reason: resolve_failure_reason(error.kind()),
        message: error.to_string(),
        image: None,
    }
}

/// The status reason of a resolution failure.
fn resolve_failure_reason(kind: FailureKind) -> Reason {
    match kind {
        FailureKind::BaseConfigRequired => Reason::BaseConfigRequired,
        FailureKind::UnsupportedConfigVersion => Reason::UnsupportedConfigVersion,
        FailureKind::InvalidDistribution => Reason::InvalidDistribution,
        FailureKind::Registry => Reason::RegistryError,
        FailureKind::InvalidBaseConfig => Reason::InvalidBaseConfig,
        FailureKind::SignatureRejected => Reason::SignatureVerificationFailed,
    }
}

/// Which image runs which config, from what was gathered; or why none can.
pub(crate) fn plan(
    stack: &Stack<'_>,
    observed: &Observed,
    operator: &Operator<'_>,
) -> Result<Planned, Failure> {
    // What runs, as the status recorded it when it was applied.
    let running = stack
        .recorded
        .image()
        .filter(|_| observed.deployment.is_some());
    let mut warnings = spec_warnings(stack, operator)?;
    let resolved = match (&observed.pull_secret_unusable, &observed.resolution) {
        (None, Some(resolved)) => resolved,
        (unusable, _) => return Err(registry(unusable.clone().unwrap_or_default())),
    };
    let pin = pin::recorded(
        stack,
        observed.kept_pin_from.as_deref(),
        &observed.reference,
    );
    warnings.extend(pin::superseded_warning(&pin));
    warnings.extend(resolved.as_ref().ok().and_then(signature_audit));
    let user_config_map = stack.user_config_map;
    let (whole, base) = match user_config_map {
        Some(named) if named.role == ConfigRole::Whole => (Some(named), None),
        named => (None, named),
    };
    let planned = match whole {
        Some(over) => over_user_config(stack, observed, over, running, resolved)?,
        None => generated(stack, observed, base, running, resolved, &mut warnings)?,
    };
    Ok(Planned {
        pull_secrets: observed.pull_secrets.clone(),
        pin,
        warnings,
        ..planned
    })
}

/// The user's whole config (`overrideConfig`): it needs no base config, so the image is only
/// pinned and its labels are optional.
fn over_user_config(
    stack: &Stack<'_>,
    observed: &Observed,
    over: UserConfigMap<'_>,
    running: Option<&str>,
    resolved: &Result<Resolution, Arc<ResolveError>>,
) -> Result<Planned, Failure> {
    let (image, server, stale) = match resolved {
        Ok(resolution) => {
            pin::keep_pinned_over_fallback(running, resolution).map_err(registry)?;
            let stale = resolution.stale.as_ref().map(ToString::to_string);
            let server = stack.server(resolution.config.server);
            (resolution.image.clone(), server, stale)
        }
        Err(e) => match e.pinned_without_config() {
            Some(pinned) => (pinned.to_owned(), stack.server(None), None),
            None => return Err(resolve_failure(e)),
        },
    };
    override_config(stack, observed, over, image, server, stale)
}

/// A generated config: on the user's base config (`base`), else on the image's; an image
/// without config labels runs its own config when the spec needs nothing generated.
fn generated(
    stack: &Stack<'_>,
    observed: &Observed,
    base: Option<UserConfigMap<'_>>,
    running: Option<&str>,
    resolved: &Result<Resolution, Arc<ResolveError>>,
    warnings: &mut Vec<String>,
) -> Result<Planned, Failure> {
    match resolved {
        Ok(resolution) => {
            pin::keep_pinned_over_fallback(running, resolution).map_err(registry)?;
            match base {
                Some(base) => {
                    let stale = resolution.stale.as_ref().map(ToString::to_string);
                    let image = (resolution.image.clone(), resolution.config.server);
                    generate_on_config_map(stack, observed, base, image, stale)
                }
                None => generate_from(stack, resolution),
            }
        }
        Err(e) => match (e.pinned_without_config(), base) {
            // An image without config labels: the user's base config is all it needs.
            (Some(pinned), Some(base)) => {
                let image = (pinned.to_owned(), None);
                generate_on_config_map(stack, observed, base, image, None)
            }
            (Some(pinned), None) => match server_run::image_own(stack, stack.server(None)) {
                Ok(run) => {
                    warnings.extend(image_config_warnings(stack));
                    Ok(planned(run, pinned.to_owned(), ConfigSource::Image, None))
                }
                Err(field) => Err(Failure {
                    reason: Reason::BaseConfigRequired,
                    message: base_config_required(pinned, field),
                    image: None,
                }),
            },
            (None, _) => Err(resolve_failure(e)),
        },
    }
}

/// What blocks a stack whose config could not be planned. When the image a name resolves to
/// changed (an operator upgrade) while a Deployment runs (`has_deployment`), and its base config
/// does not take the spec, says so: the running Deployment is kept, and the user must adapt the
/// spec or pin the old image.
pub(crate) fn blocked(stack: &Stack<'_>, failure: Failure, has_deployment: bool) -> Blocked {
    let running = stack.recorded.image();
    // Any failure to generate from the new image's base config (not a registry failure,
    // which carries no image).
    let generation_failed = matches!(
        failure.reason,
        Reason::ConfigGenerationFailed | Reason::UnsupportedConfigVersion
    );
    let upgraded = generation_failed
        && has_deployment
        && matches!((running, failure.image.as_deref()), (Some(old), Some(new)) if old != new);
    let (reason, message) = if upgraded {
        (
            Reason::UpgradeConfigFailure,
            format!(
                "Config generation failed after operator upgrade: {}",
                failure.message
            ),
        )
    } else {
        (failure.reason, failure.message)
    };
    Blocked::spec(ConditionType::ConfigGenerated, reason, message)
}

/// What the user should know about the spec before anything is resolved.
fn spec_warnings(stack: &Stack<'_>, operator: &Operator<'_>) -> Result<Vec<String>, Failure> {
    let mut warnings = check_external_providers(stack, operator)?;
    warnings.extend(builders::pdb_warning(stack));
    warnings.extend(builders::exposure_warning(stack, operator.routes_available));
    warnings.extend(builders::gateway_warnings(stack));
    Ok(warnings)
}

/// Why an image without a base config cannot run what the spec asks for, and the ways out.
fn base_config_required(image: &str, field: &str) -> String {
    format!(
        "image {image} has no config labels (com.ogx.config.* or io.llamastack.config.*) and the operator has no embedded config for it, so there is no base config to generate from, and {field} asks for a generated config. Fix: remove {field} to run the image's own config, use an image labelled with its config (docs/configuration.md), or give the whole config in overrideConfig.configMapName"
    )
}

/// A plan of `run` on `image`; the base config's hash and file, the pull secrets, the pin and
/// the warnings are filled in by the caller where they apply.
fn planned(run: ServerRun, image: String, source: ConfigSource, stale: Option<String>) -> Planned {
    Planned {
        mount: run.config,
        image,
        server: run.server,
        source,
        base_hash: String::new(),
        base_file: None,
        generated: run.generated,
        stale,
        pull_secrets: Vec::new(),
        pin: Pin::default(),
        warnings: Vec::new(),
    }
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

/// What an `audit` rule of the signature policy found wrong with the image (deployed anyway).
fn signature_audit(resolution: &llama_stack_resolver::Resolution) -> Option<String> {
    let check = resolution.signature.as_ref().filter(|c| !c.verified())?;
    Some(format!(
        "signature audit (not enforced): {}",
        check.describe()
    ))
}

/// The config generated from the resolved image's base config.
fn generate_from(
    stack: &Stack<'_>,
    resolution: &llama_stack_resolver::Resolution,
) -> Result<Planned, Failure> {
    let run = server_run::from_base(stack, &resolution.config).map_err(|e| {
        let (reason, message) = match e {
            GenerateError::UnsupportedVersion(inner) => {
                (Reason::UnsupportedConfigVersion, inner.to_string())
            }
            other => (
                Reason::ConfigGenerationFailed,
                format!("Failed to generate config.yaml: {other}"),
            ),
        };
        Failure {
            reason,
            message,
            image: Some(resolution.image.clone()),
        }
    })?;
    let source = match resolution.config.source {
        llama_stack_resolver::base_config::ConfigSource::Embedded => ConfigSource::Embedded,
        llama_stack_resolver::base_config::ConfigSource::OciLabel => ConfigSource::OciLabel,
    };
    let stale = resolution.stale.as_ref().map(ToString::to_string);
    Ok(Planned {
        base_hash: resolution.config.hash.clone(),
        base_file: resolution.config.file.clone(),
        ..planned(run, resolution.image.clone(), source, stale)
    })
}

/// `baseConfig`: the config generated on the user's ConfigMap instead of the image's base config;
/// `image` is what runs, with the server its labels told, if they did.
fn generate_on_config_map(
    stack: &Stack<'_>,
    observed: &Observed,
    base: UserConfigMap<'_>,
    (image, told): (String, Option<ServerRelease>),
    stale: Option<String>,
) -> Result<Planned, Failure> {
    let (ns, name) = (stack.namespace, base.name);
    let fail = |reason: Reason, message: String| Failure {
        reason,
        message,
        image: Some(image.clone()),
    };
    let cm = observed.user_config.as_ref().ok_or_else(|| {
        fail(
            Reason::ConfigGenerationFailed,
            format!("ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: spec.baseConfig.configMapName"),
        )
    })?;
    let user = user_config(cm, base.key).map_err(|e| {
        fail(
            Reason::ConfigGenerationFailed,
            e.message(name, "spec.baseConfig"),
        )
    })?;
    let parsed = parse_base(user.yaml).map_err(|e| match e {
        GenerateError::UnsupportedVersion(inner) => fail(
            Reason::UnsupportedConfigVersion,
            format!("{} of ConfigMap \"{name}\": {inner}", user.key),
        ),
        other => fail(
            Reason::InvalidBaseConfig,
            format!(
                "{} of ConfigMap \"{name}\" is not a base config: {other}",
                user.key
            ),
        ),
    })?;
    let parsed = Arc::new(BaseConfig {
        server: told.or(stack.declared_server),
        ..parsed
    });
    let run = server_run::from_base(stack, &parsed).map_err(|e| match e {
        GenerateError::UnsupportedVersion(inner) => {
            fail(Reason::UnsupportedConfigVersion, inner.to_string())
        }
        other => fail(
            Reason::ConfigGenerationFailed,
            format!("Failed to generate config.yaml: {other}"),
        ),
    })?;
    Ok(Planned {
        base_hash: user.hash.clone(),
        ..planned(run, image, ConfigSource::ConfigMap, stale)
    })
}

/// `overrideConfig` (v1alpha1 `userConfig`): the user's ConfigMap is the config, as is, mounted
/// whole as the upstream operator mounted it; the hash of all its keys rolls the Pods on edits.
fn override_config(
    stack: &Stack<'_>,
    observed: &Observed,
    over: UserConfigMap<'_>,
    image: String,
    server: ServerRelease,
    stale: Option<String>,
) -> Result<Planned, Failure> {
    let ns = stack.namespace;
    let name = over.name;
    let fail = |message: String| Failure {
        reason: Reason::ConfigGenerationFailed,
        message,
        image: Some(image.clone()),
    };
    let run = match (&observed.user_config, observed.reach) {
        (Some(cm), _) => {
            server_run::from_user_config(name, over.key, cm, server).map_err(|e| match e {
                Unrunnable::Unusable(message) => fail(message),
                Unrunnable::OtherLine(message) => Failure {
                    reason: Reason::ConfigServerMismatch,
                    ..fail(message)
                },
            })?
        }
        // Offline, without the ConfigMap: mounted whole all the same, its config unknown.
        (None, Reach::Manifests) => server_run::unread_user_config(name, over.key, server),
        (None, Reach::Cluster) => {
            return Err(fail(format!(
                "ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: spec.overrideConfig.configMapName"
            )));
        }
    };
    Ok(Planned {
        base_hash: run.generated.hash.clone(),
        ..planned(run, image, ConfigSource::OverrideConfig, stale)
    })
}

/// What can be checked about external providers before any Pod exists: the operator knows its
/// own image (its binary runs the in-Pod steps), and no provider ID is used twice
/// ([`crate::external::ids::check_ids`], which admission applies too). Returns the warnings.
fn check_external_providers(
    stack: &Stack<'_>,
    operator: &Operator<'_>,
) -> Result<Vec<String>, Failure> {
    if !stack.has_external_providers() {
        return Ok(Vec::new());
    }
    let fail = |message: String| Failure {
        reason: Reason::ExternalProviderInvalid,
        message,
        image: None,
    };
    if operator.image.is_none() {
        return Err(fail("spec.externalProviders: the operator does not know its own image, which runs the provider install steps; set OPERATOR_IMAGE (or --operator-image) on the operator Deployment".to_owned()));
    }
    crate::external::ids::check_provider_ids(&stack.external_providers, &stack.inline_provider_ids)
        .map_err(fail)
}
