//! The controller: LlamaStackDistribution (v1alpha2) -> generated ConfigMap, Deployment, Service.
//!
//! One reconcile: resolve the distribution (digest-pinned image + its base config), generate the
//! config, check the referenced Secrets, then create the hash-named immutable ConfigMap and apply
//! the Deployment **once** with image, config volume, env vars and hash together. When nothing
//! changed no write is made (the Deployment carries the hash of what was applied). When anything
//! fails the Deployment is left exactly as it was and the status says why.

pub mod builders;
pub mod operator_config;
pub mod status;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use llama_stack_resolver::keyring::Keyring;
use llama_stack_resolver::{Distribution, Resolver, ResolverOptions};
use serde_json::json;

use crate::api::common::DistributionPhase;
use crate::api::v1alpha2::{
    ConfigGenerationStatus, ConfigSource, LlamaStackDistribution, ResolvedDistributionStatus,
};
use crate::cli::render::config_map_name;
use crate::config::{GenerateError, ProviderTable, generate};
use crate::webhook::references::{RefKind, references};
use builders::{DESIRED_HASH, FIELD_MANAGER};
use status::set_condition;

/// Generated ConfigMaps kept besides those a live ReplicaSet still mounts.
const KEEP_CONFIG_MAPS: usize = 2;

/// Reconcile errors (API failures; spec problems are reported in the status instead).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a call.
    #[error("{action}: {source}")]
    Api {
        /// What was attempted.
        action: String,
        /// Cause.
        source: kube::Error,
    },
    /// A builder produced an invalid object (a bug).
    #[error("cannot build {what}: {source}")]
    Build {
        /// Object.
        what: &'static str,
        /// Cause.
        source: serde_json::Error,
    },
}

fn api_err(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let action = action.into();
    move |source| Error::Api { action, source }
}

/// What the reconciler needs.
pub struct Context {
    /// API client.
    pub client: kube::Client,
    /// Distribution resolver (with the operator's catalog, mirrors, caches); replaced when the
    /// operator ConfigMap changes.
    resolver: std::sync::RwLock<Arc<Resolver>>,
    /// Where the operator ConfigMap lives, and the options it is layered on.
    operator_config: Option<(String, ResolverOptions)>,
}

impl Context {
    /// A context with a fixed resolver.
    pub fn new(client: kube::Client, resolver: Arc<Resolver>) -> Self {
        Self {
            client,
            resolver: std::sync::RwLock::new(resolver),
            operator_config: None,
        }
    }

    /// Also follow the operator ConfigMap in `namespace`: its settings are layered on `base`.
    pub fn with_operator_config(mut self, namespace: &str, base: ResolverOptions) -> Self {
        self.operator_config = Some((namespace.to_owned(), base));
        self
    }

    /// The current resolver.
    pub fn resolver(&self) -> Arc<Resolver> {
        match self.resolver.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn replace_resolver(&self, resolver: Resolver) {
        let resolver = Arc::new(resolver);
        match self.resolver.write() {
            Ok(mut slot) => *slot = resolver,
            Err(poisoned) => *poisoned.into_inner() = resolver,
        }
    }
}

/// The outcome of the config half of a reconcile.
struct Planned {
    /// ConfigMap the Pods mount: generated, or the user's (`overrideConfig`).
    config_map: String,
    /// Whether `config_map` is generated (and so created and pruned by the operator).
    generated_config_map: bool,
    image: String,
    source: ConfigSource,
    base_hash: String,
    generated: crate::config::GeneratedConfig,
    stale: Option<String>,
}

/// Reconciles one LlamaStackDistribution.
pub async fn reconcile(
    cr: Arc<LlamaStackDistribution>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let ns = cr.namespace().unwrap_or_default();
    let name = cr.name_any();
    let previous = cr.status.clone().unwrap_or_default();
    let old_conditions = previous.conditions.clone().unwrap_or_default();
    let mut status = previous.clone();
    let mut conditions: Vec<Condition> = old_conditions.clone();
    let generation = cr.metadata.generation;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ns);
    let mut current = deployments
        .get_opt(&name)
        .await
        .map_err(api_err(format!("read Deployment {ns}/{name}")))?;

    let plan = plan(&cr, &ctx).await;
    let mut requeue = Duration::from_secs(300);
    match plan {
        Err(failure) => {
            // FR-101: the image the name resolves to changed (operator upgrade) and its base config
            // does not take the spec: say so, and keep the running Deployment.
            let running = previous
                .resolved_distribution
                .as_ref()
                .and_then(|r| r.image.as_deref());
            let upgraded = failure.reason == "ConfigGenerationFailed"
                && current.is_some()
                && matches!((running, failure.image.as_deref()), (Some(old), Some(new)) if old != new);
            let (reason, message) = if upgraded {
                (
                    "UpgradeConfigFailure",
                    format!(
                        "Config generation failed after operator upgrade: {}",
                        failure.message
                    ),
                )
            } else {
                (failure.reason, failure.message)
            };
            set_condition(
                &mut conditions,
                &old_conditions,
                "ConfigGenerated",
                false,
                reason,
                message,
                generation,
            );
            requeue = Duration::from_secs(30);
        }
        Ok(planned) => {
            let refs = references(&serde_json::to_value(cr.as_ref()).unwrap_or_default());
            let missing = missing_secrets(&ctx.client, &ns, &refs).await?;
            let secret_count = refs.iter().filter(|r| r.kind == RefKind::Secret).count();
            if let Some(message) = missing {
                set_condition(
                    &mut conditions,
                    &old_conditions,
                    "SecretsResolved",
                    false,
                    "SecretNotFound",
                    message,
                    generation,
                );
                requeue = Duration::from_secs(15);
            } else {
                set_condition(
                    &mut conditions,
                    &old_conditions,
                    "SecretsResolved",
                    true,
                    "AllSecretsFound",
                    format!("Resolved {secret_count} secret references"),
                    generation,
                );
                if let Some(message) = derive_url_secrets(&cr, &ctx, &planned.generated).await? {
                    set_condition(
                        &mut conditions,
                        &old_conditions,
                        "ConfigGenerated",
                        false,
                        "ConfigGenerationFailed",
                        message,
                        generation,
                    );
                    requeue = Duration::from_secs(30);
                } else {
                    let cm_name = planned.config_map.clone();
                    if let Some(written) =
                        apply_objects(&cr, &ctx, &planned, current.as_ref()).await?
                    {
                        current = Some(written);
                    }
                    let message = match &planned.stale {
                        Some(why) => format!(
                            "Generated config.yaml with {} providers and {} models (registry unreachable, using {}: {why})",
                            planned.generated.provider_count,
                            planned.generated.resource_count,
                            planned.image
                        ),
                        None => format!(
                            "Generated config.yaml with {} providers and {} models",
                            planned.generated.provider_count, planned.generated.resource_count
                        ),
                    };
                    set_condition(
                        &mut conditions,
                        &old_conditions,
                        "ConfigGenerated",
                        true,
                        "ConfigGenerationSucceeded",
                        message,
                        generation,
                    );
                    set_condition(
                        &mut conditions,
                        &old_conditions,
                        "DeploymentUpdated",
                        true,
                        "DeploymentUpdateSucceeded",
                        format!("Deployment updated with config {cm_name}"),
                        generation,
                    );
                    let same_config = previous
                        .config_generation
                        .as_ref()
                        .and_then(|g| g.config_map_name.as_ref())
                        == Some(&cm_name);
                    status.config_generation = Some(ConfigGenerationStatus {
                        config_map_name: Some(cm_name),
                        generated_at: if same_config {
                            previous
                                .config_generation
                                .as_ref()
                                .and_then(|g| g.generated_at.clone())
                        } else {
                            Some(Time(jiff::Timestamp::now()))
                        },
                        provider_count: i32::try_from(planned.generated.provider_count).ok(),
                        resource_count: i32::try_from(planned.generated.resource_count).ok(),
                        config_version: i32::try_from(planned.generated.config_version).ok(),
                    });
                    status.resolved_distribution = Some(ResolvedDistributionStatus {
                        image: Some(planned.image.clone()),
                        config_source: Some(planned.source),
                        config_hash: Some(planned.base_hash.clone()),
                    });
                    prune_config_maps(&ctx.client, &ns, &name, &planned.config_map).await?;
                }
            }
        }
    }

    // The Deployment as read at the start, or as the apply returned it: no second read.
    let deployment = current;
    let desired = deployment
        .as_ref()
        .and_then(|d| d.spec.as_ref())
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let available = deployment
        .as_ref()
        .and_then(|d| d.status.as_ref())
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let ready = deployment.is_some() && available >= desired && desired > 0;
    set_condition(
        &mut conditions,
        &old_conditions,
        "Available",
        ready,
        if ready {
            "MinimumReplicasAvailable"
        } else {
            "ReplicasUnavailable"
        },
        format!("{available}/{desired} replicas available"),
        generation,
    );
    let failed = conditions.iter().any(|c| {
        c.status == "False" && matches!(c.type_.as_str(), "ConfigGenerated" | "SecretsResolved")
    });
    status.phase = Some(if failed {
        DistributionPhase::Failed
    } else if deployment.is_none() {
        DistributionPhase::Pending
    } else if ready {
        DistributionPhase::Ready
    } else {
        DistributionPhase::Initializing
    });
    status.available_replicas = Some(available);
    status.service_url = deployment.as_ref().map(|_| {
        format!(
            "http://{name}-service.{ns}.svc.cluster.local:{}",
            cr.spec.networking.as_ref().map_or(8321, |n| n.port)
        )
    });
    conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
    status.conditions = Some(conditions);
    if status != previous {
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(ctx.client.clone(), &ns);
        let patch = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "status": status});
        llsds
            .patch_status(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await
            .map_err(api_err(format!("update the status of {ns}/{name}")))?;
    }
    Ok(Action::requeue(requeue))
}

/// Why no config could be planned: the condition reason and message, and the image resolved.
struct Failure {
    reason: &'static str,
    message: String,
    image: Option<String>,
}

/// Resolve + generate.
async fn plan(cr: &LlamaStackDistribution, ctx: &Context) -> Result<Planned, Failure> {
    let distribution = match (&cr.spec.distribution.name, &cr.spec.distribution.image) {
        (Some(name), _) => Distribution::Name(name.clone()),
        (None, Some(image)) => Distribution::Image(image.clone()),
        (None, None) => {
            return Err(Failure {
                reason: "ConfigGenerationFailed",
                message: "spec.distribution: set name or image".to_owned(),
                image: None,
            });
        }
    };
    // External providers (spec 001) need init containers this controller does not build yet;
    // deploying without them would silently drop part of the spec.
    let external = serde_json::to_value(&cr.spec.external_providers).unwrap_or_default();
    if external.as_object().is_some_and(|apis| {
        apis.values()
            .any(|l| l.as_array().is_some_and(|l| !l.is_empty()))
    }) {
        return Err(Failure {
            reason: "ExternalProvidersUnsupported",
            message: "spec.externalProviders: installing external providers is not supported by this operator version yet; remove them to deploy without them".to_owned(),
            image: None,
        });
    }
    let keyring = pull_keyring(cr, ctx).await?;
    let resolution = ctx
        .resolver()
        .resolve(&distribution, &keyring)
        .await
        .map_err(|e| Failure {
            reason: e.reason(),
            message: e.to_string(),
            image: None,
        })?;
    if let Some(over) = &cr.spec.override_config {
        return override_config(cr, ctx, &over.config_map_name, &resolution).await;
    }
    let generated = generate(&cr.spec, &resolution.config.yaml, ProviderTable::embedded())
        .map_err(|e| {
            let (reason, message) = match e {
                GenerateError::BaseConfig(m) if m.contains("Unsupported config.yaml version") => {
                    ("UnsupportedConfigVersion", m)
                }
                other => (
                    "ConfigGenerationFailed",
                    format!("Failed to generate config.yaml: {other}"),
                ),
            };
            Failure {
                reason,
                message,
                image: Some(resolution.image.clone()),
            }
        })?;
    Ok(Planned {
        config_map: config_map_name(&cr.name_any(), &generated.hash),
        generated_config_map: true,
        image: resolution.image.clone(),
        source: match resolution.config.source {
            llama_stack_resolver::base_config::ConfigSource::Embedded => ConfigSource::Embedded,
            llama_stack_resolver::base_config::ConfigSource::OciLabel => ConfigSource::OciLabel,
        },
        base_hash: resolution.config.hash.clone(),
        generated,
        stale: resolution.stale.as_ref().map(ToString::to_string),
    })
}

/// The credentials kubelet would use for the server Pod: the pod template has no pull secrets,
/// so those of its ServiceAccount (`workload.overrides.serviceAccountName`, else `default`), in
/// order. Missing Secrets are skipped, as kubelet does; a malformed one fails like the pull would.
async fn pull_keyring(cr: &LlamaStackDistribution, ctx: &Context) -> Result<Keyring, Failure> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use llama_stack_resolver::keyring::CredentialSource;
    use llama_stack_resolver::pull_secret::add_pull_secret;
    let ns = cr.namespace().unwrap_or_default();
    let fail = |message: String| Failure {
        reason: "RegistryError",
        message,
        image: None,
    };
    let sa_name = cr
        .spec
        .workload
        .as_ref()
        .and_then(|w| w.overrides.as_ref())
        .and_then(|o| o.service_account_name.clone())
        .unwrap_or_else(|| "default".to_owned());
    let mut keyring = Keyring::default();
    let sa = Api::<ServiceAccount>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&sa_name)
        .await
        .map_err(|e| {
            fail(format!(
                "cannot read ServiceAccount {ns}/{sa_name} for its imagePullSecrets: {e}"
            ))
        })?;
    let names: Vec<String> = sa
        .and_then(|sa| sa.image_pull_secrets)
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    for name in names {
        let secret = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
            .get_opt(&name)
            .await
            .map_err(|e| fail(format!("cannot read pull secret {ns}/{name}: {e}")))?;
        let Some(secret) = secret else { continue };
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let source = CredentialSource {
            namespace: ns.clone(),
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
    Ok(keyring)
}

/// User story 6: the user's ConfigMap is the config, as is; its content hash rolls the Pods on edits.
async fn override_config(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    name: &str,
    resolution: &llama_stack_resolver::Resolution,
) -> Result<Planned, Failure> {
    let ns = cr.namespace().unwrap_or_default();
    let fail = |message: String| Failure {
        reason: "ConfigGenerationFailed",
        message,
        image: Some(resolution.image.clone()),
    };
    let cm = Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns)
        .get_opt(name)
        .await
        .map_err(|e| fail(format!("cannot read ConfigMap {ns}/{name}: {e}")))?
        .ok_or_else(|| fail(format!("ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: spec.overrideConfig.configMapName")))?;
    let yaml = cm
        .data
        .as_ref()
        .and_then(|d| d.get("config.yaml"))
        .cloned()
        .ok_or_else(|| fail(format!("ConfigMap \"{name}\" has no config.yaml key. Referenced by: spec.overrideConfig.configMapName")))?;
    let parsed: serde_json::Value = serde_saphyr::from_str(&yaml).map_err(|e| {
        fail(format!(
            "config.yaml of ConfigMap \"{name}\" is not valid YAML: {e}"
        ))
    })?;
    let provider_count = parsed
        .get("providers")
        .and_then(|p| p.as_object())
        .map(|p| p.values().filter_map(|l| l.as_array()).map(Vec::len).sum())
        .unwrap_or(0);
    let hash = llama_stack_resolver::base_config::sha256_hex(yaml.as_bytes());
    Ok(Planned {
        config_map: name.to_owned(),
        generated_config_map: false,
        image: resolution.image.clone(),
        source: ConfigSource::OverrideConfig,
        base_hash: hash.clone(),
        generated: crate::config::GeneratedConfig {
            yaml,
            hash,
            env: Vec::new(),
            provider_count,
            resource_count: 0,
            config_version: parsed
                .get("version")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(2),
            warnings: Vec::new(),
        },
        stale: resolution.stale.as_ref().map(ToString::to_string),
    })
}

/// Splits URL secrets (postgres connection strings) into the owned `<cr>-derived` Secret the
/// Deployment's env vars read. Written only when its content changed; never logged. Returns the
/// condition message when a URL cannot be split (without the URL: it holds a password).
async fn derive_url_secrets(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    generated: &crate::config::GeneratedConfig,
) -> Result<Option<String>, Error> {
    use crate::config::env::{EnvSource, split_postgres_url};
    use std::collections::BTreeMap;
    let ns = cr.namespace().unwrap_or_default();
    let mut data: BTreeMap<String, k8s_openapi::ByteString> = BTreeMap::new();
    for var in &generated.env {
        let EnvSource::SecretUrlPart {
            secret_key_ref,
            part,
        } = &var.source
        else {
            continue;
        };
        let secret = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
            .get_opt(&secret_key_ref.name)
            .await
            .map_err(api_err(format!("read Secret {ns}/{}", secret_key_ref.name)))?;
        let Some(url) = secret
            .and_then(|s| s.data)
            .and_then(|d| d.get(&secret_key_ref.key).cloned())
            .and_then(|v| String::from_utf8(v.0).ok())
        else {
            // Reported by SecretsResolved.
            return Ok(None);
        };
        let Some(parts) = split_postgres_url(&url) else {
            return Ok(Some(format!(
                "the value of key \"{}\" in Secret \"{}\" is not a PostgreSQL URL like postgres://user:password@host:5432/db (spec.storage.sql.connectionString)",
                secret_key_ref.key, secret_key_ref.name
            )));
        };
        let key = format!(
            "storage-sql-{}",
            serde_json::to_value(part)
                .ok()
                .and_then(|p| p.as_str().map(str::to_owned))
                .unwrap_or_default()
        );
        data.insert(
            key,
            k8s_openapi::ByteString(parts.get(*part).as_bytes().to_vec()),
        );
    }
    if data.is_empty() {
        return Ok(None);
    }
    let name = format!("{}-derived", cr.name_any());
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let existing = secrets
        .get_opt(&name)
        .await
        .map_err(api_err(format!("read Secret {ns}/{name}")))?;
    if existing.and_then(|s| s.data).as_ref() != Some(&data) {
        let secret: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/instance": cr.name_any(), "app.kubernetes.io/managed-by": FIELD_MANAGER},
                "ownerReferences": [cr.controller_owner_ref(&())]},
            "type": "Opaque",
            "data": data,
        }))
        .map_err(|source| Error::Build { what: "Secret", source })?;
        secrets
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&secret),
            )
            .await
            .map_err(api_err(format!("apply Secret {ns}/{name}")))?;
    }
    Ok(None)
}

async fn missing_secrets(
    client: &kube::Client,
    ns: &str,
    refs: &[crate::webhook::references::Reference],
) -> Result<Option<String>, Error> {
    for r in refs.iter().filter(|r| r.kind == RefKind::Secret) {
        let secret = Api::<Secret>::namespaced(client.clone(), ns)
            .get_opt(&r.name)
            .await
            .map_err(api_err(format!("read Secret {ns}/{}", r.name)))?;
        match secret {
            None => {
                return Ok(Some(format!(
                    "Secret \"{}\" not found in namespace \"{ns}\". Referenced by: {}",
                    r.name, r.path
                )));
            }
            Some(s) => {
                if let Some(key) = &r.key {
                    let has = s.data.as_ref().is_some_and(|d| d.contains_key(key))
                        || s.string_data.as_ref().is_some_and(|d| d.contains_key(key));
                    if !has {
                        return Ok(Some(format!(
                            "Key \"{key}\" not found in Secret \"{}/{ns}\". Referenced by: {}",
                            r.name,
                            r.path.trim_end_matches(".name")
                        )));
                    }
                }
            }
        }
    }
    Ok(None)
}

/// Creates the ConfigMap and applies what changed; returns the Deployment when it was written.
async fn apply_objects(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    planned: &Planned,
    current: Option<&Deployment>,
) -> Result<Option<Deployment>, Error> {
    let ns = cr.namespace().unwrap_or_default();
    let name = cr.name_any();
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    if planned.generated_config_map {
        let cm = builders::config_map(cr, &planned.generated).map_err(|source| Error::Build {
            what: "ConfigMap",
            source,
        })?;
        let cm_name = cm.name_any();
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
        if cms
            .get_opt(&cm_name)
            .await
            .map_err(api_err(format!("read ConfigMap {ns}/{cm_name}")))?
            .is_none()
        {
            cms.create(&PostParams::default(), &cm)
                .await
                .map_err(api_err(format!("create ConfigMap {ns}/{cm_name}")))?;
        }
    }
    if let Some(pvc) = builders::persistent_volume_claim(cr).map_err(|source| Error::Build {
        what: "PersistentVolumeClaim",
        source,
    })? {
        ensure_pvc(ctx, &ns, &pvc).await?;
    }
    let deployment =
        builders::deployment(cr, &planned.image, &planned.generated, &planned.config_map).map_err(
            |source| Error::Build {
                what: "Deployment",
                source,
            },
        )?;
    let desired_hash = deployment.annotations().get(DESIRED_HASH).cloned();
    let mut applied = None;
    if current.map(|d| d.annotations().get(DESIRED_HASH).cloned()) != Some(desired_hash) {
        applied = Some(
            Api::<Deployment>::namespaced(ctx.client.clone(), &ns)
                .patch(&name, &pp, &Patch::Apply(&deployment))
                .await
                .map_err(api_err(format!("apply Deployment {ns}/{name}")))?,
        );
    }
    let service = builders::service(cr).map_err(|source| Error::Build {
        what: "Service",
        source,
    })?;
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &ns);
    let svc_name = service.name_any();
    let existing = services
        .get_opt(&svc_name)
        .await
        .map_err(api_err(format!("read Service {ns}/{svc_name}")))?;
    let wanted_ports = service.spec.as_ref().and_then(|s| s.ports.clone());
    if existing
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.ports.clone())
        .map(|p| p.into_iter().map(|p| (p.port, p.name)).collect::<Vec<_>>())
        != wanted_ports.map(|p| p.into_iter().map(|p| (p.port, p.name)).collect())
    {
        services
            .patch(&svc_name, &pp, &Patch::Apply(&service))
            .await
            .map_err(api_err(format!("apply Service {ns}/{svc_name}")))?;
    }
    Ok(applied)
}

/// Creates the data PVC, or grows it; a PVC is never shrunk (that would lose data, and the API
/// server refuses it anyway).
async fn ensure_pvc(
    ctx: &Context,
    ns: &str,
    desired: &k8s_openapi::api::core::v1::PersistentVolumeClaim,
) -> Result<(), Error> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let name = desired.name_any();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), ns);
    let size = |p: &PersistentVolumeClaim| -> Option<Quantity> {
        p.spec
            .as_ref()?
            .resources
            .as_ref()?
            .requests
            .as_ref()?
            .get("storage")
            .cloned()
    };
    match api
        .get_opt(&name)
        .await
        .map_err(api_err(format!("read PersistentVolumeClaim {ns}/{name}")))?
    {
        None => {
            api.create(&PostParams::default(), desired)
                .await
                .map_err(api_err(format!("create PersistentVolumeClaim {ns}/{name}")))?;
        }
        Some(current) => {
            let (Some(have), Some(want)) = (
                size(&current).and_then(|q| bytes(&q.0)),
                size(desired).and_then(|q| bytes(&q.0)),
            ) else {
                return Ok(());
            };
            // The API server lets a claim grow only once it is bound (and its class allows it).
            let bound = current.status.as_ref().and_then(|st| st.phase.as_deref()) == Some("Bound");
            if want > have && bound {
                let patch = json!({"spec": {"resources": {"requests": {"storage": size(desired).map(|q| q.0)}}}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(api_err(format!("grow PersistentVolumeClaim {ns}/{name}")))?;
            }
        }
    }
    Ok(())
}

/// Bytes of a storage quantity (`10Gi`, `500M`, `1073741824`); `None` when not understood.
fn bytes(quantity: &str) -> Option<u128> {
    let split = quantity
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor: f64 = match suffix {
        "" => 1.0,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        _ => return None,
    };
    Some((number * factor) as u128)
}

/// Deletes generated ConfigMaps beyond the current one and the newest other, except those a
/// ReplicaSet still mounts (a rollout in progress).
async fn prune_config_maps(
    client: &kube::Client,
    ns: &str,
    name: &str,
    current: &str,
) -> Result<(), Error> {
    let selector =
        format!("app.kubernetes.io/instance={name},app.kubernetes.io/managed-by={FIELD_MANAGER}");
    let lp = ListParams::default().labels(&selector);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let mut generated: Vec<ConfigMap> = cms
        .list(&lp)
        .await
        .map_err(api_err(format!("list ConfigMaps of {ns}/{name}")))?
        .items
        .into_iter()
        .filter(|c| c.name_any().starts_with(&format!("{name}-config-")))
        .collect();
    if generated.len() <= KEEP_CONFIG_MAPS {
        return Ok(());
    }
    let in_use: Vec<String> = Api::<ReplicaSet>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .map_err(api_err(format!("list ReplicaSets of {ns}/{name}")))?
        .items
        .iter()
        .filter(|rs| rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0) > 0)
        .flat_map(|rs| {
            rs.spec
                .iter()
                .flat_map(|s| s.template.iter())
                .flat_map(|t| t.spec.iter())
                .flat_map(|p| p.volumes.iter().flatten())
        })
        .filter_map(|v| v.config_map.as_ref().map(|c| c.name.clone()))
        .collect();
    // The current one first, then newest first (creation timestamps have one-second resolution).
    generated.sort_by_key(|c| {
        (
            c.name_any() != current,
            std::cmp::Reverse(c.metadata.creation_timestamp.clone().map(|t| t.0)),
        )
    });
    for old in generated.iter().skip(KEEP_CONFIG_MAPS) {
        let old_name = old.name_any();
        if !in_use.contains(&old_name) {
            cms.delete(&old_name, &DeleteParams::default())
                .await
                .map_err(api_err(format!("delete ConfigMap {ns}/{old_name}")))?;
        }
    }
    Ok(())
}

/// Watches the operator ConfigMap; on every change rebuilds the resolver and asks for a
/// reconcile of every LlamaStackDistribution (a changed image-override rolls image and config
/// together).
async fn follow_operator_config(
    ctx: Arc<Context>,
    namespace: String,
    base: ResolverOptions,
    trigger: tokio::sync::mpsc::Sender<()>,
) {
    use kube::runtime::watcher::Event;
    let embedded = base.catalog.clone();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let config = watcher::Config::default().fields(&format!(
        "metadata.name={}",
        operator_config::OPERATOR_CONFIG_MAP
    ));
    let mut events = std::pin::pin!(watcher::watcher(api, config));
    let mut last: Option<std::collections::BTreeMap<String, String>> = None;
    while let Some(event) = events.next().await {
        let data = match event {
            Ok(Event::Apply(cm) | Event::InitApply(cm)) => cm.data.unwrap_or_default(),
            Ok(Event::Delete(_)) => Default::default(),
            Ok(Event::Init | Event::InitDone) => continue,
            Err(error) => {
                tracing::warn!(%error, "watching the operator ConfigMap");
                continue;
            }
        };
        if last.as_ref() == Some(&data) {
            continue;
        }
        let (options, problems) = operator_config::resolver_options(&base, &embedded, &data);
        for problem in &problems {
            tracing::warn!(problem = %problem, "operator ConfigMap");
        }
        match Resolver::new(options) {
            Ok(resolver) => {
                ctx.replace_resolver(resolver);
                last = Some(data);
                let _ = trigger.try_send(());
            }
            Err(error) => {
                tracing::warn!(%error, "operator ConfigMap: keeping the previous settings")
            }
        }
    }
}

fn error_policy(_: Arc<LlamaStackDistribution>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(10))
}

/// Runs the controller until the stream ends (shutdown signal).
pub async fn run(ctx: Arc<Context>) {
    let client = ctx.client.clone();
    let controller = Controller::new(
        Api::<LlamaStackDistribution>::all(client.clone()),
        watcher::Config::default(),
    );
    let store = controller.store();
    // Referenced Secrets and ConfigMaps are watched by metadata only (no values are read here) and
    // mapped back to the LlamaStackDistributions that refer to them: users label nothing.
    let referrers = move |kind: RefKind, meta: &kube::core::ObjectMeta| {
        let (ns, name) = (
            meta.namespace.clone(),
            meta.name.clone().unwrap_or_default(),
        );
        store
            .state()
            .into_iter()
            .filter(|cr| cr.metadata.namespace == ns)
            .filter(|cr| {
                let object = serde_json::to_value(cr.as_ref()).unwrap_or_default();
                let own_ns = cr.metadata.namespace.clone().unwrap_or_default();
                references(&object).iter().any(|r| {
                    r.kind == kind
                        && r.name == name
                        && r.namespace.as_deref().unwrap_or(&own_ns) == own_ns
                })
            })
            .map(|cr| ObjectRef::from_obj(cr.as_ref()))
            .collect::<Vec<_>>()
    };
    let for_configmaps = referrers.clone();
    let (trigger, triggered) = tokio::sync::mpsc::channel::<()>(1);
    if let Some((namespace, base)) = ctx.operator_config.clone() {
        tokio::spawn(follow_operator_config(
            ctx.clone(),
            namespace,
            base,
            trigger,
        ));
    }
    let reconcile_all = futures_util::stream::unfold(triggered, |mut rx| async move {
        rx.recv().await.map(|()| ((), rx))
    });
    controller
        .reconcile_all_on(reconcile_all)
        .owns(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .owns(
            Api::<ConfigMap>::all(client.clone()),
            watcher::Config::default(),
        )
        .owns(
            Api::<Service>::all(client.clone()),
            watcher::Config::default(),
        )
        .watches(
            Api::<PartialObjectMeta<Secret>>::all(client.clone()),
            watcher::Config::default(),
            move |s| referrers(RefKind::Secret, &s.metadata),
        )
        .watches(
            Api::<PartialObjectMeta<ConfigMap>>::all(client),
            watcher::Config::default(),
            move |c| for_configmaps(RefKind::ConfigMap, &c.metadata),
        )
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile error");
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn storage_quantities_compare_in_bytes() {
        assert_eq!(bytes("10Gi"), Some(10 * 1024 * 1024 * 1024));
        assert_eq!(bytes("500M"), Some(500_000_000));
        assert_eq!(bytes("1073741824"), Some(1 << 30));
        assert!(bytes("1.5Gi") > bytes("1Gi"));
        assert_eq!(bytes("10Zz"), None);
    }
}
