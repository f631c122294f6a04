//! The `OGXServer` front door: an `ogx.io/v1beta1` `OGXServer`'s spec and status mapped into
//! the operator's own model of a stack (the spec and status of the `llamastack.io/v1alpha2`
//! hub; the server keeps its own metadata), and the status the core reports mapped back
//! (`status`). Pure.
//!
//! What the model cannot carry yet is refused with the field that asks for it
//! ([`Untranslatable`]), before anything runs: a stack that silently ran without the client
//! certificate or resource claims its spec names would be worse than one that says why it does
//! not run.

pub mod annotations;
pub mod from_llsd;
pub mod providers;
pub mod status;

use k8s_openapi::api::core::v1::EnvVar;
use serde_json::Value;

use crate::api::apis;
use crate::api::common::{AllowedFromSpec, CaBundleConfig, DistributionType};
use crate::api::ogx::{self, OGXServer, OGXServerSpec};
use crate::api::polymorphic::{BoolOrObject, NameOrObject};
use crate::api::v1alpha2::{
    BaseConfigSpec, ClientIdentity, ConfigMapKey, ExposeOptions, GatewaySpec, KvStorageSpec,
    KvStorageType, LlamaStackDistributionSpec, LlamaStackDistributionStatus, ModelConfig,
    NetworkingSpec, OverrideConfigSpec, PolicyRules, PraxisGateway, PraxisMigration, ResourcesSpec,
    SecretKeyRef, SecretValue, SqlStorageSpec, SqlStorageType, StateStorageSpec, TlsSpec,
    WorkloadSpec,
};
use crate::core::stack::Model;

/// The metrics port when `monitoring.metricsPort` is not set (OpenTelemetry's Prometheus
/// exporter default, which the OGX server uses).
pub const DEFAULT_METRICS_PORT: i32 = 9464;
/// The server port when `network.port` is not set.
pub const DEFAULT_PORT: i32 = 8321;
/// The variable the OGX server reads its model-registry refresh interval from.
pub const REGISTRY_REFRESH_VAR: &str = "OGX_REGISTRY_REFRESH_INTERVAL_SECONDS";

/// A field of an `OGXServer` the operator cannot serve yet, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {why}")]
pub struct Untranslatable {
    /// The field, as a path from the object (`spec.tls.identity`).
    pub field: String,
    /// Why, and what to do instead.
    pub why: String,
}

impl Untranslatable {
    fn new(field: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            why: why.into(),
        }
    }
}

/// An `OGXServer`'s spec and status in the model the core reconciles; its metadata is its own
/// ([`Modelled::model`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Modelled {
    /// The spec in the model, with what the server's annotations ask for.
    pub spec: LlamaStackDistributionSpec,
    /// The status it recorded, read back into the model.
    pub status: Option<LlamaStackDistributionStatus>,
}

impl Modelled {
    /// The stack as the core reads it: `server`'s metadata (name, namespace, uid, generation,
    /// annotations) with this spec and status.
    pub fn model<'a>(&'a self, server: &'a OGXServer) -> Model<'a> {
        Model {
            meta: &server.metadata,
            spec: &self.spec,
            status: self.status.as_ref(),
        }
    }
}

/// An `OGXServer`'s spec and status in the model, or the field the model cannot carry yet.
pub fn to_model(server: &OGXServer) -> Result<Modelled, Untranslatable> {
    let mut spec = spec(&server.spec)?;
    annotations::apply(server.metadata.annotations.as_ref(), &mut spec)?;
    Ok(Modelled {
        spec,
        status: recorded(server),
    })
}

/// The status `server` recorded, in the model. One it cannot read (a defect: both types hold the
/// same fields) is logged and read as none: the stack then resolves and reports afresh.
pub fn recorded(server: &OGXServer) -> Option<LlamaStackDistributionStatus> {
    let status = server.status.as_ref()?;
    Some(status::into_model(status).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the OGXServer's status cannot be read into the model");
        Default::default()
    }))
}

/// The spec in the model.
pub fn spec(spec: &OGXServerSpec) -> Result<LlamaStackDistributionSpec, Untranslatable> {
    let gateway = gateway(spec.praxis_mode.as_deref())?;
    let unguarded = spec
        .network
        .as_ref()
        .and_then(|n| n.policy.as_ref())
        .is_some_and(|p| p.enabled == Some(false));
    if gateway.is_some() && unguarded {
        return Err(Untranslatable::new(
            "spec.network.policy.enabled",
            "behind Praxis the server trusts the identity headers of whoever reaches it, so the NetworkPolicy that admits only Praxis and the operator is not turned off here (the OGX operator does, with a warning); remove enabled: false, or turn praxisMode off",
        ));
    }
    let providers = match &spec.providers {
        Some(p) => {
            let json = serde_json::to_value(p)
                .map_err(|e| Untranslatable::new("spec.providers", e.to_string()))?;
            Some(providers::providers(&json)?)
        }
        None => None,
    };
    Ok(LlamaStackDistributionSpec {
        distribution: DistributionType {
            name: spec
                .distribution
                .name
                .as_deref()
                .map(|name| llama_stack_resolver::ogx_server_name(name).to_owned()),
            image: spec.distribution.image.clone(),
            ..DistributionType::default()
        },
        providers: providers.map(Box::new),
        resources: spec.resources.as_deref().map(resources),
        storage: spec.storage.as_deref().map(storage).map(Box::new),
        disabled: spec.disabled_apis.as_ref().map(|list| {
            list.iter()
                .map(|api| spec_api_name(api.config_name()))
                .collect()
        }),
        networking: Some(Box::new(networking(spec)?)),
        workload: Some(Box::new(workload(spec)?)),
        external_providers: None,
        override_config: spec.override_config.as_ref().map(|o| {
            Box::new(OverrideConfigSpec {
                config_map_name: o.name.clone(),
                key: Some(o.key.clone()),
            })
        }),
        base_config: spec.base_config.as_ref().map(|b| {
            Box::new(BaseConfigSpec {
                config_map_name: b.name.clone(),
                key: Some(b.key.clone()),
            })
        }),
        gateway: gateway.map(Box::new),
    })
}

/// `praxisMode`, on: Praxis as the server's gateway, its Pods by `praxisSelector` (else the
/// model's defaults, which are the OGX operator's), and the migration Job unless it is turned
/// off (`migrationJob.enabled: false`).
fn gateway(praxis: Option<&ogx::PraxisModeSpec>) -> Result<Option<GatewaySpec>, Untranslatable> {
    let Some(praxis) = praxis.filter(|p| p.is_on()) else {
        return Ok(None);
    };
    let migration = praxis
        .migration_job
        .as_ref()
        .filter(|job| job.enabled != Some(false))
        .map(|job| PraxisMigration {
            target_connection_string: secret(&job.target_connection_string),
            fallback_tenant: job.fallback_tenant.clone(),
            fallback_owner_subject: job.fallback_owner_subject.clone(),
        });
    Ok(Some(GatewaySpec {
        praxis: PraxisGateway {
            namespace: praxis.praxis_selector.as_ref().map(|s| s.namespace.clone()),
            pod_selector: praxis
                .praxis_selector
                .as_ref()
                .map(|s| s.pod_selector.clone()),
            migration,
        },
    }))
}

/// `vector_io` → `vectorIo`: the model's name of a config API.
fn spec_api_name(config_name: &str) -> String {
    apis::APIS
        .iter()
        .find(|(_, config)| *config == config_name)
        .map_or_else(|| config_name.to_owned(), |(spec, _)| (*spec).to_owned())
}

fn resources(resources: &ogx::ResourcesSpec) -> ResourcesSpec {
    ResourcesSpec {
        models: resources.models.as_ref().map(|models| {
            models
                .iter()
                .map(|m| {
                    NameOrObject::Object(ModelConfig {
                        name: m.name.clone(),
                        provider: m.provider.clone(),
                        context_length: m.context_length,
                        model_type: m.model_type.clone(),
                        quantization: m.quantization.clone(),
                    })
                })
                .collect()
        }),
        tools: None,
        shields: None,
    }
}

fn secret(secret: &ogx::SecretKeyRef) -> SecretValue {
    SecretValue {
        secret_key_ref: crate::api::v1alpha2::SecretKeyRef {
            name: secret.name.clone(),
            key: secret.key.clone(),
        },
    }
}

fn storage(storage: &ogx::StateStorageSpec) -> StateStorageSpec {
    StateStorageSpec {
        kv: storage.kv.as_ref().map(|kv| KvStorageSpec {
            type_: match kv.type_ {
                ogx::KvStorageType::Sqlite => KvStorageType::Sqlite,
                ogx::KvStorageType::Redis => KvStorageType::Redis,
            },
            endpoint: kv.endpoint.clone(),
            password: kv.password.as_ref().map(secret),
        }),
        sql: storage.sql.as_ref().map(|sql| SqlStorageSpec {
            type_: match sql.type_ {
                ogx::SqlStorageType::Sqlite => SqlStorageType::Sqlite,
                ogx::SqlStorageType::Postgres => SqlStorageType::Postgres,
            },
            connection_string: sql.connection_string.as_ref().map(secret),
        }),
        backends: storage.backends.clone(),
        stores: storage.stores.clone(),
    }
}

/// `network` and `tls.trust`: the port, HTTPS, exposure, the default NetworkPolicy, the CA
/// bundle.
fn networking(spec: &OGXServerSpec) -> Result<NetworkingSpec, Untranslatable> {
    let network = spec.network.clone().unwrap_or_default();
    let ca_bundle = match spec
        .tls
        .as_ref()
        .and_then(|t| t.trust.as_ref())
        .and_then(|t| t.ca_certificates.as_deref())
    {
        Some(certificates) => Some(ca_bundles(certificates)?),
        None => None,
    };
    let (ca_bundle, additional_ca_bundles) = match ca_bundle {
        Some((first, more)) => (Some(first), Some(more).filter(|m| !m.is_empty())),
        None => (None, None),
    };
    let serving = network.tls.as_ref().map(|t| t.secret_name.clone());
    let client_identity = spec
        .tls
        .as_ref()
        .and_then(|t| t.identity.as_ref())
        .map(|identity| ClientIdentity {
            certificate: ConfigMapKey {
                name: identity.cert.name.clone(),
                key: identity.cert.key.clone(),
            },
            private_key: SecretKeyRef {
                name: identity.key.name.clone(),
                key: identity.key.key.clone(),
            },
        });
    let tls =
        (serving.is_some() || ca_bundle.is_some() || client_identity.is_some()).then(|| TlsSpec {
            enabled: serving.is_some(),
            secret_name: serving,
            ca_bundle,
            additional_ca_bundles,
            client_identity,
        });
    let expose = network
        .external_access
        .as_ref()
        .filter(|e| e.enabled == Some(true))
        .map(|e| {
            BoolOrObject::Object(ExposeOptions {
                enabled: Some(true),
                hostname: e.hostname.clone(),
                tls_secret_name: e.tls.as_ref().map(|t| t.secret_name.clone()),
                ..ExposeOptions::default()
            })
        });
    let policy = network.policy.as_ref().filter(|p| p.enabled != Some(false));
    let rules = policy
        .filter(|p| p.policy_types.is_some() || p.ingress.is_some() || p.egress.is_some())
        .map(|p| PolicyRules {
            policy_types: p.policy_types.as_ref().map(|types| {
                types
                    .iter()
                    .map(|t| match t {
                        ogx::PolicyType::Ingress => "Ingress".to_owned(),
                        ogx::PolicyType::Egress => "Egress".to_owned(),
                    })
                    .collect()
            }),
            ingress: p.ingress.clone(),
            egress: p.egress.clone(),
        });
    let enabled = network.policy.as_ref().and_then(|p| p.enabled) != Some(false);
    Ok(NetworkingSpec {
        port: network.port.unwrap_or(DEFAULT_PORT),
        tls: tls.map(Box::new),
        expose,
        // The OGX operator's default policy: the server's namespace and the operator's.
        allowed_from: enabled.then(Box::<AllowedFromSpec>::default),
        policy: rules.map(Box::new),
    })
}

/// `tls.trust.caCertificates`: the keys grouped by ConfigMap, in the order each ConfigMap first
/// appears; the first is the model's `caBundle`, the others its `additionalCaBundles`.
fn ca_bundles(
    certificates: &[ogx::ConfigMapKeyRef],
) -> Result<(CaBundleConfig, Vec<CaBundleConfig>), Untranslatable> {
    let mut groups: Vec<CaBundleConfig> = Vec::new();
    for certificate in certificates {
        match groups
            .iter_mut()
            .find(|g| g.config_map_name == certificate.name)
        {
            Some(group) => group
                .config_map_keys
                .get_or_insert_with(Vec::new)
                .push(certificate.key.clone()),
            None => groups.push(CaBundleConfig {
                config_map_name: certificate.name.clone(),
                config_map_namespace: None,
                config_map_keys: Some(vec![certificate.key.clone()]),
            }),
        }
    }
    let mut groups = groups.into_iter();
    let first = groups.next().ok_or_else(|| {
        Untranslatable::new("spec.tls.trust.caCertificates", "name at least one key")
    })?;
    let more: Vec<CaBundleConfig> = groups.collect();
    if more.len() > MAX_ADDITIONAL_CA_BUNDLES {
        return Err(Untranslatable::new(
            "spec.tls.trust.caCertificates",
            format!(
                "certificates from {} ConfigMaps; at most {} are served",
                more.len() + 1,
                MAX_ADDITIONAL_CA_BUNDLES + 1
            ),
        ));
    }
    Ok((first, more))
}

/// The model's limit on `additionalCaBundles`.
const MAX_ADDITIONAL_CA_BUNDLES: usize = 8;

/// `workload`, with the variables `registryRefreshIntervalSeconds` and `monitoring` set (the
/// user's own variables of the same name win, as in the OGX operator).
fn workload(spec: &OGXServerSpec) -> Result<WorkloadSpec, Untranslatable> {
    let json = match &spec.workload {
        Some(w) => serde_json::to_value(w)
            .map_err(|e| Untranslatable::new("spec.workload", e.to_string()))?,
        None => Value::Object(Default::default()),
    };
    let mut workload: WorkloadSpec = serde_json::from_value(json.clone())
        .map_err(|e| Untranslatable::new("spec.workload", e.to_string()))?;
    let carried = serde_json::to_value(&workload)
        .map_err(|e| Untranslatable::new("spec.workload", e.to_string()))?;
    if let Some(field) = first_dropped(&json, &carried) {
        return Err(Untranslatable::new(
            format!("spec.workload.{field}"),
            "the operator's model of a stack has no place for this field yet, so it would be dropped; remove it to run without it",
        ));
    }
    let mut ours = Vec::new();
    if let Some(seconds) = spec.registry_refresh_interval_seconds {
        ours.push(literal(REGISTRY_REFRESH_VAR, seconds.to_string()));
    }
    if let Some(port) = metrics_port(spec) {
        ours.push(literal("OGX_METRICS_ENDPOINT_ENABLED", "1"));
        ours.push(literal("OGX_METRICS_HOST", "0.0.0.0"));
        ours.push(literal("OGX_METRICS_PORT", port.to_string()));
    }
    if !ours.is_empty() {
        let overrides = workload.overrides.get_or_insert_with(Default::default);
        let user = overrides.env.take().unwrap_or_default();
        ours.retain(|o| !user.iter().any(|u| u.name == o.name));
        ours.extend(user);
        overrides.env = Some(ours);
    }
    Ok(workload)
}

/// The first field of `given` (by its path below it) that `carried` lacks: a value set in the
/// `OGXServer` that the model's type has no field for, and serde would drop without a word.
fn first_dropped(given: &Value, carried: &Value) -> Option<String> {
    match (given, carried) {
        (Value::Object(given), Value::Object(carried)) => given
            .iter()
            .filter(|(_, value)| !value.is_null())
            .find_map(|(key, value)| match carried.get(key) {
                None => Some(key.clone()),
                Some(kept) => first_dropped(value, kept).map(|below| format!("{key}.{below}")),
            }),
        (Value::Array(given), Value::Array(carried)) => given
            .iter()
            .zip(carried)
            .enumerate()
            .find_map(|(i, (value, kept))| {
                first_dropped(value, kept).map(|below| format!("{i}.{below}"))
            }),
        _ => None,
    }
}

/// The door an `OGXServer` comes through, with its metrics port.
pub fn door(server: &crate::api::ogx::OGXServer) -> crate::core::door::Door {
    crate::core::door::Door::OgxServer {
        metrics_port: metrics_port(&server.spec),
    }
}

/// The port the server exports its metrics on: `monitoring.metricsPort` (default 9464) unless
/// `monitoring.enabled` is false.
pub fn metrics_port(spec: &OGXServerSpec) -> Option<i32> {
    let monitoring = spec.monitoring.clone().unwrap_or_default();
    (monitoring.enabled != Some(false))
        .then(|| monitoring.metrics_port.unwrap_or(DEFAULT_METRICS_PORT))
}

fn literal(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        value_from: None,
    }
}

#[cfg(test)]
mod configgen_cases;
#[cfg(test)]
mod tests;
