//! The config half of a reconcile (no writes): resolve the distribution with the Pod's pull
//! credentials, then generate the config (or read the user's `overrideConfig`).

use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::ResourceExt;
use kube::api::Api;
use llama_stack_resolver::keyring::Keyring;
use llama_stack_resolver::server_line::ServerRelease;
use llama_stack_resolver::{FailureKind, Resolver};

use super::builders::{self, ServerConfig};
use super::context::Context;
use super::error::{ApiError, api_err};
use super::server_run::{self, ServerRun};
use super::stack::Stack;
use crate::api::conditions::Reason;
use crate::api::v1alpha2::ConfigSource;
use crate::stack_config::GenerateError;

/// The outcome of the config half of a reconcile.
pub(super) struct Planned {
    /// The config the Pods run.
    pub(super) mount: ServerConfig,
    pub(super) image: String,
    /// The server the image runs.
    pub(super) server: ServerRelease,
    pub(super) source: ConfigSource,
    pub(super) base_hash: String,
    /// The image's config file the base config was read from (OGX labels), when one was.
    pub(super) base_file: Option<String>,
    pub(super) generated: crate::stack_config::GeneratedConfig,
    pub(super) stale: Option<String>,
    /// Pull secrets of the Pod's ServiceAccount (copied into the managed one).
    pub(super) pull_secrets: Vec<String>,
    /// Where the image's pin came from.
    pub(super) pin: Pin,
    /// What the user should know about the plan (shown in the `ConfigGenerated` message).
    pub(super) warnings: Vec<String>,
}

/// Where a pinned image came from, for the status.
#[derive(Clone, Debug, Default)]
pub(super) struct Pin {
    /// The reference the image was pinned from (catalog, overrides and mirrors applied).
    pub(super) reference: String,
    /// The `llamastack.io/repin` annotation this plan honoured.
    pub(super) request: Option<String>,
    /// The reference the distribution resolves from now, when the pin kept was taken from
    /// another one ([`pinned_in_deleted_organisation`]).
    pub(super) superseded_by: Option<String>,
}

/// A pin that stands, and the reference it was taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kept<'a> {
    image: &'a str,
    from: &'a str,
}

/// Annotation a user sets (to any new value, e.g. a timestamp) to have the tags of a stack
/// looked up again: `kubectl annotate llsd <name> llamastack.io/repin="$(date +%s)" --overwrite`.
pub const REPIN_ANNOTATION: &str = "llamastack.io/repin";

/// Why a plan stopped: a problem the user must fix, or an API read that failed (retried with
/// backoff; an API hiccup is not a problem of the spec and does not fail the stack).
#[derive(Debug)]
pub(super) enum PlanError {
    /// The spec, a referenced object or the registry stands in the way.
    Blocked(Failure),
    /// Reading the ServiceAccount, a pull secret or the user's ConfigMap failed.
    Api(ApiError),
}

impl From<Failure> for PlanError {
    fn from(failure: Failure) -> Self {
        Self::Blocked(failure)
    }
}

impl From<ApiError> for PlanError {
    fn from(error: ApiError) -> Self {
        Self::Api(error)
    }
}

/// Why no config could be planned: the condition reason and message, and the image resolved.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) reason: Reason,
    pub(super) message: String,
    pub(super) image: Option<String>,
}

/// The embedded config of a name stands in for the image's own only until the stack runs a
/// pinned image. Once it does, a registry outage must never replace the pinned image and its
/// config with the catalog's tag and the embedded config (after an operator restart the
/// resolver's last known good result is gone): what runs is kept until the registry answers, and
/// the status says why. A stack that runs the unpinned fallback already keeps using it.
fn keep_pinned_over_fallback(
    running: Option<&str>,
    resolution: &llama_stack_resolver::Resolution,
) -> Result<(), Failure> {
    let runs_pinned = running.is_some_and(is_pinned);
    let Some(error) = resolution
        .stale
        .as_ref()
        .filter(|_| runs_pinned && !resolution.pinned)
    else {
        return Ok(());
    };
    Err(Failure {
        reason: Reason::RegistryError,
        message: format!(
            "{error}; keeping the running image and config until the registry answers (the embedded config of a distribution is used only for a first deployment)"
        ),
        image: None,
    })
}

/// A resolution failure, for the status.
fn resolve_failure(error: &llama_stack_resolver::ResolveError) -> Failure {
    Failure {
        reason: resolve_failure_reason(error.kind()),
        message: error.to_string(),
        image: None,
    }
}

/// The pinned image to keep instead of looking the tag up again: the one deployed, while the
/// distribution still resolves from the same reference, no re-pin was asked for with
/// [`REPIN_ANNOTATION`], and the operator's `repin-interval` (default: never) has not passed
/// since the image last changed.
/// So a tag pushed again upstream rolls nothing until the user says so. A pin from
/// [`DELETED_ORGANISATION`] also stands when the catalog moved its name elsewhere.
fn pin_to_keep<'a>(stack: &Stack<'a>, resolver: &Resolver, reference: &str) -> Option<Kept<'a>> {
    let resolved = stack
        .resource
        .status
        .as_ref()?
        .resolved_distribution
        .as_ref()?;
    let image = resolved.image.as_deref().filter(|i| is_pinned(i))?;
    let from = resolved.reference.as_deref()?;
    if from != reference && !pinned_in_deleted_organisation(stack, from) {
        return None;
    }
    let requested = stack.resource.annotations().get(REPIN_ANNOTATION);
    if requested.is_some() && requested != resolved.repin_request.as_ref() {
        return None;
    }
    if let Some(after) = resolver.repin_after() {
        let pinned_at = resolved.pinned_at.as_ref()?.0;
        let age = jiff::Timestamp::now().duration_since(pinned_at);
        if age.unsigned_abs() >= after {
            return None;
        }
    }
    Some(Kept { image, from })
}

/// The organisation Docker Hub no longer has (June 2026), where every llama-stack distribution
/// image and the upstream operator's catalog lived.
const DELETED_ORGANISATION: &str = "docker.io/llamastack/";

/// Whether a named stack runs a pin taken from its name's image in [`DELETED_ORGANISATION`]
/// (`docker.io/llamastack/distribution-<name>:…`). The catalog now names the OGX image of that
/// name, a major server release later: the running pin stands (a cluster whose nodes or mirror
/// still hold it keeps running what it ran) until the user asks with [`REPIN_ANNOTATION`] or the
/// operator's `repin-interval` passes.
fn pinned_in_deleted_organisation(stack: &Stack<'_>, pinned_from: &str) -> bool {
    let llama_stack_resolver::Distribution::Name(name) = &stack.distribution else {
        return false;
    };
    pinned_from
        .strip_prefix(DELETED_ORGANISATION)
        .and_then(|rest| rest.split([':', '@']).next())
        .is_some_and(|repository| repository == format!("distribution-{name}"))
}

/// What a stack kept on a pin from [`DELETED_ORGANISATION`] should know.
fn superseded_warning(pin: &Pin) -> Option<String> {
    let now = pin.superseded_by.as_deref()?;
    let from = &pin.reference;
    Some(format!(
        "keeps running {from} (pinned), from docker.io/llamastack, which Docker Hub no longer has; the catalog now names {now}, an OGX release: annotate {REPIN_ANNOTATION}=<any new value> to move to it"
    ))
}

/// Whether an image reference is pinned by digest (`repo@sha256:…`), as the status records it.
fn is_pinned(image: &str) -> bool {
    image.contains("@sha256:") || image.contains("@sha512:")
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

/// Resolve + generate. `deployed`: a Deployment of this resource runs already.
pub(super) async fn plan(
    stack: &Stack<'_>,
    ctx: &Context,
    deployed: bool,
) -> Result<Planned, PlanError> {
    // What runs, as the status recorded it when it was applied.
    let running = stack
        .resource
        .status
        .as_ref()
        .and_then(|s| s.resolved_distribution.as_ref())
        .and_then(|r| r.image.as_deref())
        .filter(|_| deployed);
    let mut warnings = spec_warnings(stack, ctx)?;
    let (keyring, pull_secrets) = pull_keyring(stack, ctx).await?;
    let (resolved, pin) = resolve(stack, ctx, &keyring).await;
    warnings.extend(superseded_warning(&pin));
    warnings.extend(resolved.as_ref().ok().and_then(signature_audit));
    let planned = match &stack.spec.override_config {
        Some(over) => {
            // The user's config needs no base config: the image is only pinned, labels optional.
            let (image, server, stale) = match &resolved {
                Ok(resolution) => {
                    keep_pinned_over_fallback(running, resolution)?;
                    let stale = resolution.stale.as_ref().map(ToString::to_string);
                    let server = stack.server(resolution.config.server);
                    (resolution.image.clone(), server, stale)
                }
                Err(e) => match e.pinned_without_config() {
                    Some(pinned) => (pinned.to_owned(), stack.server(None), None),
                    None => return Err(resolve_failure(e).into()),
                },
            };
            override_config(stack, ctx, &over.config_map_name, image, server, stale).await?
        }
        None => match resolved {
            Ok(resolution) => {
                keep_pinned_over_fallback(running, &resolution)?;
                generate_from(stack, &resolution)?
            }
            Err(e) => match e.pinned_without_config() {
                Some(pinned) => match server_run::image_own(stack, stack.server(None)) {
                    Ok(run) => {
                        warnings.extend(image_config_warnings(stack));
                        planned(run, pinned.to_owned(), ConfigSource::Image, None)
                    }
                    Err(field) => {
                        return Err(Failure {
                            reason: Reason::BaseConfigRequired,
                            message: base_config_required(pinned, field),
                            image: None,
                        }
                        .into());
                    }
                },
                None => return Err(resolve_failure(&e).into()),
            },
        },
    };
    Ok(Planned {
        pull_secrets,
        pin,
        warnings,
        ..planned
    })
}

/// What the user should know about the spec before anything is resolved.
fn spec_warnings(stack: &Stack<'_>, ctx: &Context) -> Result<Vec<String>, Failure> {
    let mut warnings = check_external_providers(stack, ctx)?;
    warnings.extend(builders::pdb_warning(stack));
    warnings.extend(builders::exposure_warning(stack, ctx.routes_available()));
    Ok(warnings)
}

/// Why an image without a base config cannot run what the spec asks for, and the ways out.
fn base_config_required(image: &str, field: &str) -> String {
    format!(
        "image {image} has no io.llamastack.config labels and the operator has no embedded config for it, so there is no base config to generate from, and {field} asks for a generated config. Fix: remove {field} to run the image's own config, use an image labelled with its config (docs/configuration.md), or give the whole config in overrideConfig.configMapName"
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
    let workers = stack.spec.workload.as_ref().and_then(|w| w.workers);
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

/// Resolves the distribution: at the deployed pin while it stands ([`pin_to_keep`]), else from
/// its reference. Also says where the pin comes from, for the status.
async fn resolve(
    stack: &Stack<'_>,
    ctx: &Context,
    keyring: &Keyring,
) -> (
    Result<llama_stack_resolver::Resolution, std::sync::Arc<llama_stack_resolver::ResolveError>>,
    Pin,
) {
    let resolver = ctx.resolver();
    // An invalid reference keeps no pin; `resolve` reports why.
    let distribution = &stack.distribution;
    let reference = resolver.reference(distribution).unwrap_or_default();
    let kept = Some(reference.as_str())
        .filter(|r| !r.is_empty())
        .and_then(|r| pin_to_keep(stack, &resolver, r));
    let resolved = match kept {
        Some(kept) => {
            resolver
                .resolve_pinned(distribution, stack.image_config, kept.image, keyring)
                .await
        }
        None => {
            resolver
                .resolve_choosing(distribution, stack.image_config, keyring)
                .await
        }
    };
    (resolved, recorded_pin(stack, kept, reference))
}

/// What the status records of the pin: a kept pin keeps the reference it came from (so that it
/// goes on standing on the next reconcile), with the one the distribution resolves from now.
fn recorded_pin(stack: &Stack<'_>, kept: Option<Kept<'_>>, reference: String) -> Pin {
    let (reference, superseded_by) = match kept {
        Some(kept) if kept.from != reference => (kept.from.to_owned(), Some(reference)),
        _ => (reference, None),
    };
    Pin {
        reference,
        request: stack.resource.annotations().get(REPIN_ANNOTATION).cloned(),
        superseded_by,
    }
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

/// The credentials kubelet would use for the server Pod, and their Secret names: the pod template
/// has no pull secrets, so those of its ServiceAccount: the user's
/// (`workload.overrides.serviceAccountName`), else the namespace's `default`, whose list the
/// managed `<cr>-sa` copies. Missing Secrets are skipped, as kubelet does; a malformed one fails
/// like the pull would.
async fn pull_keyring(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<(Keyring, Vec<String>), PlanError> {
    use llama_stack_resolver::keyring::CredentialSource;
    use llama_stack_resolver::pull_secret::add_pull_secret;
    let ns = stack.namespace;
    let fail = |message: String| Failure {
        reason: Reason::RegistryError,
        message,
        image: None,
    };
    let sa_name = stack.user_service_account().unwrap_or("default");
    let mut keyring = Keyring::default();
    let sa = Api::<ServiceAccount>::namespaced(ctx.client.clone(), ns)
        .get_opt(sa_name)
        .await
        .map_err(api_err(format!(
            "read ServiceAccount {ns}/{sa_name} for its imagePullSecrets"
        )))?;
    let names: Vec<String> = sa
        .and_then(|sa| sa.image_pull_secrets)
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    for name in names.clone() {
        let secret = Api::<Secret>::namespaced(ctx.client.clone(), ns)
            .get_opt(&name)
            .await
            .map_err(api_err(format!("read pull secret {ns}/{name}")))?;
        let Some(secret) = secret else { continue };
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let source = CredentialSource {
            namespace: ns.to_owned(),
            name,
        };
        add_pull_secret(
            &mut keyring,
            source,
            secret.type_.as_deref().unwrap_or_default(),
            &data,
        )
        .map_err(|e| fail(e.to_string()))?;
    }
    Ok((keyring, names))
}

/// `overrideConfig` (v1alpha1 `userConfig`): the user's ConfigMap is the config, as is, mounted
/// whole as the upstream operator mounted it; the hash of all its keys rolls the Pods on edits.
async fn override_config(
    stack: &Stack<'_>,
    ctx: &Context,
    name: &str,
    image: String,
    server: ServerRelease,
    stale: Option<String>,
) -> Result<Planned, PlanError> {
    let ns = stack.namespace;
    let fail = |message: String| Failure {
        reason: Reason::ConfigGenerationFailed,
        message,
        image: Some(image.clone()),
    };
    let cm = Api::<ConfigMap>::namespaced(ctx.client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(api_err(format!("read ConfigMap {ns}/{name} (overrideConfig)")))?
        .ok_or_else(|| fail(format!("ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: spec.overrideConfig.configMapName")))?;
    let run = server_run::from_user_config(name, &cm, server).map_err(fail)?;
    Ok(Planned {
        base_hash: run.generated.hash.clone(),
        ..planned(run, image, ConfigSource::OverrideConfig, stale)
    })
}

/// What can be checked about external providers before any Pod exists: the operator knows its
/// own image (its binary runs the in-Pod steps), and no provider ID is used twice
/// ([`crate::external::ids::check_ids`], which admission applies too). Returns the warnings.
fn check_external_providers(stack: &Stack<'_>, ctx: &Context) -> Result<Vec<String>, Failure> {
    if !stack.has_external_providers() {
        return Ok(Vec::new());
    }
    let fail = |message: String| Failure {
        reason: Reason::ExternalProviderInvalid,
        message,
        image: None,
    };
    if ctx.operator_image().is_none() {
        return Err(fail("spec.externalProviders: the operator does not know its own image, which runs the provider install steps; set OPERATOR_IMAGE (or --operator-image) on the operator Deployment".to_owned()));
    }
    crate::external::ids::check_ids(stack.spec).map_err(fail)
}

#[cfg(test)]
mod tests {
    use llama_stack_resolver::{Catalog, ResolverOptions};
    use serde_json::json;

    use super::*;
    use crate::api::v1alpha2::LlamaStackDistribution;

    const OLD: &str = "docker.io/llamastack/distribution-starter:0.7.3";
    const PINNED: &str = "docker.io/llamastack/distribution-starter@sha256:1111111111111111111111111111111111111111111111111111111111111111";

    fn stack_resource(name: &str, annotations: serde_json::Value) -> LlamaStackDistribution {
        serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s", "namespace": "ns", "annotations": annotations},
            "spec": {"distribution": {"name": name}},
            "status": {"resolvedDistribution": {"image": PINNED, "reference": OLD, "repinRequest": "1"}}}))
        .unwrap()
    }

    /// A stack pinned from the deleted organisation keeps its pin when the catalog moves its name
    /// to the OGX image; a renamed distribution or a repin request moves it.
    #[test]
    fn a_pin_from_the_deleted_organisation_stands_until_the_user_asks() {
        let resolver = Resolver::new(ResolverOptions::new(Catalog::embedded().unwrap())).unwrap();
        let now = "docker.io/ogxai/distribution-starter:1.3.0";
        let kept = stack_resource("starter", json!({}));
        let stack = Stack::read(&kept).unwrap();
        let kept_pin = pin_to_keep(&stack, &resolver, now);
        assert_eq!(
            kept_pin,
            Some(Kept {
                image: PINNED,
                from: OLD
            })
        );
        // The status goes on naming the old reference, so the pin stands on the next reconcile.
        let recorded = recorded_pin(&stack, kept_pin, now.to_owned());
        assert_eq!(recorded.reference, OLD);
        assert_eq!(recorded.superseded_by.as_deref(), Some(now));
        let same = Kept {
            image: PINNED,
            from: now,
        };
        let recorded = recorded_pin(&stack, Some(same), now.to_owned());
        assert_eq!(
            (recorded.reference.as_str(), recorded.superseded_by),
            (now, None)
        );

        let renamed = stack_resource("postgres-demo", json!({}));
        let stack = Stack::read(&renamed).unwrap();
        let moved = "docker.io/ogxai/distribution-postgres-demo:1.3.0";
        assert_eq!(pin_to_keep(&stack, &resolver, moved), None);

        let asked = stack_resource("starter", json!({REPIN_ANNOTATION: "2"}));
        let stack = Stack::read(&asked).unwrap();
        assert_eq!(pin_to_keep(&stack, &resolver, now), None);

        let elsewhere = "mirror.corp/llamastack/distribution-starter:0.7.3";
        assert!(!pinned_in_deleted_organisation(
            &Stack::read(&kept).unwrap(),
            elsewhere
        ));
    }

    /// The warning names the pin kept and where the catalog points now; a pin that merely stands
    /// (same reference) warns of nothing.
    #[test]
    fn only_a_superseded_pin_warns() {
        let pin = |superseded_by: Option<&str>| Pin {
            reference: OLD.to_owned(),
            request: None,
            superseded_by: superseded_by.map(str::to_owned),
        };
        let now = "docker.io/ogxai/distribution-starter:1.3.0";
        let warning = superseded_warning(&pin(Some(now))).unwrap();
        assert!(
            warning.contains(OLD) && warning.contains(now) && warning.contains(REPIN_ANNOTATION),
            "{warning}"
        );
        assert_eq!(superseded_warning(&pin(None)), None);
    }
}
