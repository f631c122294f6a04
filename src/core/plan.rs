//! The config half of a decision (pure): from the resolution and the user's ConfigMap as
//! gathered, which image runs which config, with what the user should know about it.

use llama_stack_resolver::{FailureKind, Resolution, ResolveError};
use std::sync::Arc;

use llama_stack_resolver::base_config::BaseConfig;
use llama_stack_resolver::server_line::ServerRelease;

use super::builders::{self, ServerConfig};
use super::conditions::Blocked;
use super::observed::Observed;
use super::pin::{self, Pin};
use super::server_run::{self, Given, Source};
use super::stack::{ConfigRole, Stack};
use crate::api::conditions::{ConditionType, Reason};
use crate::api::v1alpha2::ConfigSource;

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
    let image = image(running, resolved)?;
    let source = match (stack.user_config_map, image.base) {
        (Some(named), _) if named.role == ConfigRole::Whole => Source::UserWhole(named),
        (Some(named), _) => Source::UserBase(named),
        (None, Some(base)) => Source::ImageBase(base),
        (None, None) => Source::ImageOwn,
    };
    let given = Given {
        image: &image.name,
        told: image.told,
        user_config: observed.user_config.as_ref(),
        reach: observed.reach,
    };
    let chosen = server_run::run(stack, source, given).map_err(|not| Failure {
        reason: not.reason,
        message: not.message,
        image: Some(image.name.clone()),
    })?;
    warnings.extend(chosen.warnings);
    Ok(Planned {
        mount: chosen.run.config,
        image: image.name,
        server: chosen.run.server,
        source: chosen.source,
        base_hash: chosen.base_hash,
        base_file: chosen.base_file,
        generated: chosen.run.generated,
        stale: image.stale,
        pull_secrets: observed.pull_secrets.clone(),
        pin,
        warnings,
    })
}

/// The image that runs, and what its resolution tells of it.
struct Image<'a> {
    name: String,
    /// The server its labels told, if they did.
    told: Option<ServerRelease>,
    /// Why its base config is an older one, when the registry could not be asked.
    stale: Option<String>,
    /// Its base config: none for a pinned image without config labels.
    base: Option<&'a Arc<BaseConfig>>,
}

/// The image to run from the resolution: the one place a resolution's fallback (never over a
/// pinned image that runs) and its staleness are read.
fn image<'a>(
    running: Option<&str>,
    resolved: &'a Result<Resolution, Arc<ResolveError>>,
) -> Result<Image<'a>, Failure> {
    match resolved {
        Ok(resolution) => {
            pin::keep_pinned_over_fallback(running, resolution).map_err(registry)?;
            Ok(Image {
                name: resolution.image.clone(),
                told: resolution.config.server,
                stale: resolution.stale.as_ref().map(ToString::to_string),
                base: Some(&resolution.config),
            })
        }
        Err(e) => match e.pinned_without_config() {
            Some(pinned) => Ok(Image {
                name: pinned.to_owned(),
                told: None,
                stale: None,
                base: None,
            }),
            None => Err(resolve_failure(e)),
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

/// What an `audit` rule of the signature policy found wrong with the image (deployed anyway).
fn signature_audit(resolution: &llama_stack_resolver::Resolution) -> Option<String> {
    let check = resolution.signature.as_ref().filter(|c| !c.verified())?;
    Some(format!(
        "signature audit (not enforced): {}",
        check.describe()
    ))
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
