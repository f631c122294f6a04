//! A LlamaStackDistribution (the model, v1alpha2) as the `OGXServer` of the same name: what
//! `convert --to ogx.io/v1beta1` prints, and what a stack moved in place runs as. Refuses, naming
//! the field, what `OGXServer` cannot say (a distribution outside OGX's, `safety`, shields, tool
//! groups, a cross-namespace CA bundle, external providers).
//!
//! Providers become `custom` providers (`type` and config keys as the server names them), which
//! carry every provider type and setting; the generated config is the same either way.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::NetworkPolicyIngressRule;
use serde_json::{Map, Value, json};

use super::Untranslatable;
use crate::api::apis;
use crate::api::common::AllowedFromSpec;
use crate::api::network_peers;
use crate::api::ogx::{self, OGXServer, OGXServerSpec};
use crate::api::polymorphic::{BoolOrObject, NameOrObject};
use crate::api::v1alpha2::{
    GatewaySpec, KvStorageType, LlamaStackDistribution, LlamaStackDistributionSpec, ProviderConfig,
    SecretValue, SqlStorageType,
};
use crate::stack_config::ProviderTable;

/// Annotations that describe the old object, not the stack.
const DROPPED_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    crate::convert::V1ALPHA1_FIELDS,
    crate::convert::V1ALPHA2_FIELDS,
];

/// APIs OGX 1.x does not have: disabling them there changes nothing, so they are left out.
const ABSENT_IN_OGX: &[&str] = &[
    "safety",
    "datasetIo",
    "scoring",
    "eval",
    "agents",
    "telemetry",
    "postTraining",
];

/// The converted object, and what was left out because it changes nothing on OGX.
#[derive(Debug)]
pub struct Converted {
    /// The `OGXServer`.
    pub server: OGXServer,
    /// One line per field left out.
    pub notes: Vec<String>,
}

/// `llsd` as an `OGXServer` of the same name and namespace.
pub fn to_ogx_server(llsd: &LlamaStackDistribution) -> Result<Converted, Untranslatable> {
    let mut notes = Vec::new();
    let spec = spec(&llsd.spec, &mut notes)?;
    let mut server = OGXServer::new(llsd.metadata.name.as_deref().unwrap_or_default(), spec);
    server.metadata.namespace = llsd.metadata.namespace.clone();
    server.metadata.labels = llsd.metadata.labels.clone();
    server.metadata.annotations = llsd.metadata.annotations.clone().map(|mut a| {
        a.retain(|k, _| !DROPPED_ANNOTATIONS.contains(&k.as_str()));
        a
    });
    let ours = super::annotations::of(&llsd.spec);
    if !ours.is_empty() {
        server
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .extend(ours);
    }
    if server
        .metadata
        .annotations
        .as_ref()
        .is_some_and(BTreeMap::is_empty)
    {
        server.metadata.annotations = None;
    }
    Ok(Converted { server, notes })
}

fn refuse<T>(field: &str, why: &str) -> Result<T, Untranslatable> {
    Err(Untranslatable::new(field, why))
}

fn spec(
    spec: &LlamaStackDistributionSpec,
    notes: &mut Vec<String>,
) -> Result<OGXServerSpec, Untranslatable> {
    if spec.distribution.image_config.is_some() {
        return refuse(
            "spec.distribution.imageConfig",
            "OGXServer has no way to choose another of the image's configs",
        );
    }
    if spec.distribution.server_version.is_some() {
        return refuse(
            "spec.distribution.serverVersion",
            "OGXServer has no way to declare the release of an unlabelled image",
        );
    }
    if spec.distribution.name.as_deref() == Some("rh-dev") {
        notes.push(
            "spec.distribution.name: rh-dev names Open Data Hub's OGX image on an OGXServer (as the ODH and RHOAI builds of the OGX operator do), where the LlamaStackDistribution ran its llama-stack image: the server moves from llama-stack 0.x to OGX, and a config written for llama-stack must be written again"
                .to_owned(),
        );
    }
    let networking = spec.networking.clone().unwrap_or_default();
    Ok(OGXServerSpec {
        praxis_mode: spec.gateway.as_deref().map(praxis_mode).map(Box::new),
        distribution: ogx::DistributionSpec {
            name: spec.distribution.name.clone(),
            image: spec.distribution.image.clone(),
        },
        providers: providers(spec)?.map(Box::new),
        resources: resources(spec)?.map(Box::new),
        storage: spec.storage.as_ref().map(|s| Box::new(ogx::StateStorageSpec {
            kv: s.kv.as_ref().map(|kv| ogx::KvStorageSpec {
                type_: match kv.type_ {
                    KvStorageType::Sqlite => ogx::KvStorageType::Sqlite,
                    KvStorageType::Redis => ogx::KvStorageType::Redis,
                },
                endpoint: kv.endpoint.clone(),
                password: kv.password.as_ref().map(secret),
            }),
            sql: s.sql.as_ref().map(|sql| ogx::SqlStorageSpec {
                type_: match sql.type_ {
                    SqlStorageType::Sqlite => ogx::SqlStorageType::Sqlite,
                    SqlStorageType::Postgres => ogx::SqlStorageType::Postgres,
                },
                connection_string: sql.connection_string.as_ref().map(secret),
            }),
            backends: s.backends.clone(),
            stores: s.stores.clone(),
        })),
        disabled_apis: disabled(spec, notes)?,
        registry_refresh_interval_seconds: None,
        network: Some(Box::new(network(&networking, spec.gateway.is_some())?)),
        tls: trust(&networking)?.map(Box::new),
        workload: workload(spec)?.map(Box::new),
        monitoring: None,
        base_config: spec.base_config.as_ref().map(|b| {
            Box::new(ogx::ConfigMapKeyRef {
                name: b.config_map_name.clone(),
                key: b.key.clone().unwrap_or_else(|| "config.yaml".to_owned()),
            })
        }),
        override_config: spec.override_config.as_ref().map(|o| {
            let key = o.key.clone().unwrap_or_else(|| {
                notes.push(format!("spec.overrideConfig.key: OGXServer names the key; config.yaml is assumed (the LlamaStackDistribution took config.yaml, else run.yaml, else the ConfigMap's only key): check ConfigMap {}", o.config_map_name));
                "config.yaml".to_owned()
            });
            Box::new(ogx::ConfigMapKeyRef {
                name: o.config_map_name.clone(),
                key,
            })
        }),
    })
}

fn secret(value: &SecretValue) -> ogx::SecretKeyRef {
    ogx::SecretKeyRef {
        name: value.secret_key_ref.name.clone(),
        key: value.secret_key_ref.key.clone(),
    }
}

/// Every provider as a `custom` one under its API and side.
fn providers(
    spec: &LlamaStackDistributionSpec,
) -> Result<Option<ogx::ProvidersSpec>, Untranslatable> {
    let Some(providers) = &spec.providers else {
        return Ok(None);
    };
    let table = ProviderTable::ogx();
    let mut sections: Map<String, Value> = Map::new();
    for (api, provider) in providers.all() {
        let field = format!("spec.providers.{api}");
        if matches!(api, "safety" | "telemetry") {
            return refuse(
                &field,
                "OGX 1.x has no such API (safety was removed in 1.0; telemetry is OpenTelemetry's variables)",
            );
        }
        let config_api = apis::stack_name(api).unwrap_or(api);
        let (side, entry) = custom(provider, config_api, table, &field)?;
        let list = sections
            .entry(api.to_owned())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .and_then(|s| {
                s.entry(side)
                    .or_insert_with(|| json!({"custom": []}))
                    .get_mut("custom")
            })
            .and_then(Value::as_array_mut);
        if let Some(list) = list {
            list.push(entry);
        }
    }
    serde_json::from_value(Value::Object(sections))
        .map(Some)
        .map_err(|e| Untranslatable::new("spec.providers", e.to_string()))
}

/// One provider as a `custom` entry: its full type, its endpoint under the key the server reads
/// it from, its Secrets as `secretRefs`, the rest of its settings as they are.
fn custom(
    provider: &ProviderConfig,
    api: &str,
    table: &ProviderTable,
    field: &str,
) -> Result<(&'static str, Value), Untranslatable> {
    let candidates = match provider.provider.contains("::") {
        true => vec![provider.provider.clone()],
        false => vec![
            format!("remote::{}", provider.provider),
            format!("inline::{}", provider.provider),
        ],
    };
    let Some((provider_type, info)) = candidates
        .iter()
        .find_map(|t| table.get(api, t).map(|info| (t.clone(), info)))
    else {
        return refuse(
            &format!("{field}.provider"),
            &format!(
                "{:?} is not a {api} provider of {}",
                provider.provider,
                table.server_name()
            ),
        );
    };
    let side = match provider_type.starts_with("inline::") {
        true => "inline",
        false => "remote",
    };
    let mut settings = Map::new();
    let mut secret_refs = BTreeMap::new();
    if let Some(endpoint) = &provider.endpoint {
        let Some(url_field) = &info.url_field else {
            return refuse(
                &format!("{field}.endpoint"),
                &format!(
                    "{provider_type} takes its address in settings (host, port, ...); move it there first"
                ),
            );
        };
        settings.insert(url_field.clone(), json!(endpoint));
    }
    if let Some(key) = &provider.api_key {
        let Some(secret_field) = &info.secret_field else {
            return refuse(
                &format!("{field}.apiKey"),
                &format!("{provider_type} takes no API key"),
            );
        };
        secret_refs.insert(secret_field.clone(), json!(secret(key)));
    }
    for (key, value) in provider.settings.iter().flatten() {
        match value.get("secretKeyRef") {
            Some(reference) => {
                secret_refs.insert(key.clone(), reference.clone());
            }
            None => {
                settings.insert(key.clone(), value.clone());
            }
        }
    }
    let mut entry = json!({"id": provider.config_id(), "type": provider_type});
    if !secret_refs.is_empty() {
        entry["secretRefs"] = json!(secret_refs);
    }
    if !settings.is_empty() {
        entry["settings"] = Value::Object(settings);
    }
    Ok((side, entry))
}

fn resources(
    spec: &LlamaStackDistributionSpec,
) -> Result<Option<ogx::ResourcesSpec>, Untranslatable> {
    let Some(resources) = &spec.resources else {
        return Ok(None);
    };
    if resources.shields.as_ref().is_some_and(|s| !s.is_empty()) {
        return refuse(
            "spec.resources.shields",
            "OGX 1.x has no shields (the safety API is gone)",
        );
    }
    if resources.tools.as_ref().is_some_and(|t| !t.is_empty()) {
        return refuse(
            "spec.resources.tools",
            "OGXServer registers no tool groups; register them in an overrideConfig",
        );
    }
    let models = resources.models.as_ref().map(|models| {
        models
            .iter()
            .map(|m| match m {
                NameOrObject::Name(name) => ogx::ModelConfig {
                    name: name.clone(),
                    ..ogx::ModelConfig::default()
                },
                NameOrObject::Object(m) => ogx::ModelConfig {
                    name: m.name.clone(),
                    provider: m.provider.clone(),
                    context_length: m.context_length,
                    model_type: m.model_type.clone(),
                    quantization: m.quantization.clone(),
                },
            })
            .collect::<Vec<_>>()
    });
    Ok(models
        .filter(|m| !m.is_empty())
        .map(|models| ogx::ResourcesSpec {
            models: Some(models),
        }))
}

/// `gateway.praxis` as the OGX operator's Praxis mode; its selector needs both halves, so a
/// half left to its default is written out.
fn praxis_mode(gateway: &GatewaySpec) -> ogx::PraxisModeSpec {
    let praxis = &gateway.praxis;
    let selector = (praxis.namespace.is_some() || praxis.pod_selector.is_some()).then(|| {
        ogx::PraxisSelector {
            namespace: praxis.namespace().to_owned(),
            pod_selector: praxis.pods(),
        }
    });
    ogx::PraxisModeSpec {
        enabled: Some(true),
        praxis_selector: selector,
        migration_job: praxis.migration.as_ref().map(|m| ogx::MigrationJobSpec {
            enabled: None,
            target_connection_string: ogx::SecretKeyRef {
                name: m.target_connection_string.secret_key_ref.name.clone(),
                key: m.target_connection_string.secret_key_ref.key.clone(),
            },
            fallback_tenant: m.fallback_tenant.clone(),
            fallback_owner_subject: m.fallback_owner_subject.clone(),
        }),
    }
}

fn disabled(
    spec: &LlamaStackDistributionSpec,
    notes: &mut Vec<String>,
) -> Result<Option<Vec<ogx::DisabledApi>>, Untranslatable> {
    let Some(list) = &spec.disabled else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for api in list {
        if ABSENT_IN_OGX.contains(&api.as_str()) {
            notes.push(format!(
                "spec.disabled: {api} is left out: OGX 1.x has no such API"
            ));
            continue;
        }
        let name = apis::stack_name(api).unwrap_or(api);
        let parsed: ogx::DisabledApi = serde_json::from_value(json!(name)).map_err(|_| {
            Untranslatable::new(
                "spec.disabled",
                format!("{api} cannot be disabled in OGXServer"),
            )
        })?;
        out.push(parsed);
    }
    Ok((!out.is_empty()).then_some(out))
}

/// `networking` as `network`. Behind a gateway (`guarded`) the policy stays on (the server
/// trusts whoever reaches it) and `allowedFrom`'s `*`, which the gateway's policy does not honour,
/// is not written as a rule that would.
fn network(
    networking: &crate::api::v1alpha2::NetworkingSpec,
    guarded: bool,
) -> Result<ogx::NetworkSpec, Untranslatable> {
    let expose = exposure(networking)?;
    let policy = policy(networking, guarded);
    let tls = networking.tls.as_ref().filter(|t| t.enabled);
    Ok(ogx::NetworkSpec {
        port: Some(networking.port),
        tls: tls.map(|t| ogx::TlsSpec {
            secret_name: t.secret_name.clone().unwrap_or_default(),
        }),
        external_access: expose,
        policy,
    })
}

/// `networking.expose` as OGXServer's external access; an ingress class it cannot say is refused.
fn exposure(
    networking: &crate::api::v1alpha2::NetworkingSpec,
) -> Result<Option<ogx::ExternalAccessConfig>, Untranslatable> {
    Ok(match &networking.expose {
        None | Some(BoolOrObject::Bool(false)) => None,
        Some(BoolOrObject::Bool(true)) => Some(ogx::ExternalAccessConfig {
            enabled: Some(true),
            hostname: None,
            tls: None,
        }),
        Some(BoolOrObject::Object(o)) => {
            if o.ingress_class_name.as_ref().is_some_and(|c| !c.is_empty()) {
                return refuse(
                    "spec.networking.expose.ingressClassName",
                    "OGXServer has no ingress class",
                );
            }
            (o.enabled != Some(false)).then(|| ogx::ExternalAccessConfig {
                enabled: Some(true),
                hostname: o.hostname.clone().filter(|h| !h.is_empty()),
                tls: o
                    .tls_secret_name
                    .clone()
                    .filter(|c| !c.is_empty())
                    .map(|secret_name| ogx::TlsSpec { secret_name }),
            })
        }
    })
}

/// `networking.allowedFrom` and `networking.policy` as OGXServer's network policy. `None` leaves
/// OGXServer's default (a policy it makes); with neither given and not `guarded`, the policy is
/// turned off.
fn policy(
    networking: &crate::api::v1alpha2::NetworkingSpec,
    guarded: bool,
) -> Option<ogx::NetworkPolicySpec> {
    match (&networking.allowed_from, &networking.policy) {
        // No policy: OGXServer makes one unless told not to.
        (None, None) if guarded => None,
        (None, None) => Some(ogx::NetworkPolicySpec {
            enabled: Some(false),
            ..ogx::NetworkPolicySpec::default()
        }),
        (allowed, own) => {
            // OGXServer's default rule is allowedFrom's without namespaces or labels; those
            // become an ingress rule of their own, which OGXServer adds to the default.
            let honoured = allowed.as_ref().map(|a| {
                if guarded {
                    network_peers::named_only(a)
                } else {
                    (**a).clone()
                }
            });
            let mut ingress = honoured
                .as_ref()
                .and_then(|a| allowed_from_rule(a, networking.port))
                .into_iter()
                .collect::<Vec<_>>();
            ingress.extend(
                own.as_ref()
                    .and_then(|p| p.ingress.clone())
                    .unwrap_or_default(),
            );
            let policy_types = own
                .as_ref()
                .and_then(|p| p.policy_types.as_ref())
                .map(|types| {
                    types
                        .iter()
                        .map(|t| match t.as_str() {
                            "Egress" => ogx::PolicyType::Egress,
                            _ => ogx::PolicyType::Ingress,
                        })
                        .collect()
                });
            let rules = ogx::NetworkPolicySpec {
                enabled: None,
                policy_types,
                ingress: (!ingress.is_empty()).then_some(ingress),
                egress: own.as_ref().and_then(|p| p.egress.clone()),
            };
            (rules != ogx::NetworkPolicySpec::default()).then_some(rules)
        }
    }
}

fn trust(
    networking: &crate::api::v1alpha2::NetworkingSpec,
) -> Result<Option<ogx::TlsClientConfig>, Untranslatable> {
    let identity = networking
        .tls
        .as_ref()
        .and_then(|t| t.client_identity.as_ref())
        .map(|identity| ogx::IdentityConfig {
            cert: ogx::ConfigMapKeyRef {
                name: identity.certificate.name.clone(),
                key: identity.certificate.key.clone(),
            },
            key: ogx::SecretKeyRef {
                name: identity.private_key.name.clone(),
                key: identity.private_key.key.clone(),
            },
        });
    let tls = networking.tls.as_ref();
    let Some(first) = tls.and_then(|t| t.ca_bundle.as_ref()) else {
        return Ok(identity.map(|identity| ogx::TlsClientConfig {
            trust: None,
            identity: Some(identity),
        }));
    };
    let more = tls
        .and_then(|t| t.additional_ca_bundles.as_deref())
        .unwrap_or_default();
    let bundles = std::iter::once(("spec.networking.tls.caBundle".to_owned(), first)).chain(
        more.iter()
            .enumerate()
            .map(|(i, b)| (format!("spec.networking.tls.additionalCaBundles[{i}]"), b)),
    );
    let mut certificates = Vec::new();
    for (field, bundle) in bundles {
        if bundle.config_map_namespace.is_some() {
            return refuse(
                &format!("{field}.configMapNamespace"),
                "OGXServer reads CA certificates from its own namespace only; copy the ConfigMap there",
            );
        }
        let keys = bundle
            .config_map_keys
            .clone()
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| vec![crate::naming::CA_BUNDLE_KEY.to_owned()]);
        certificates.extend(keys.into_iter().map(|key| ogx::ConfigMapKeyRef {
            name: bundle.config_map_name.clone(),
            key,
        }));
    }
    Ok(Some(ogx::TlsClientConfig {
        trust: Some(ogx::TrustConfig {
            ca_certificates: Some(certificates),
        }),
        identity,
    }))
}

/// `workload`: the same fields, minus what OGXServer lacks.
fn workload(
    spec: &LlamaStackDistributionSpec,
) -> Result<Option<ogx::WorkloadSpec>, Untranslatable> {
    let Some(workload) = &spec.workload else {
        return Ok(None);
    };
    // `rollback` and `progressDeadlineSeconds` travel as annotations (`super::annotations`).
    if workload
        .overrides
        .as_ref()
        .is_some_and(|o| o.termination_grace_period_seconds.is_some())
    {
        return refuse(
            "spec.workload.overrides.terminationGracePeriodSeconds",
            "OGXServer has no termination grace period",
        );
    }
    let json = serde_json::to_value(workload)
        .map_err(|e| Untranslatable::new("spec.workload", e.to_string()))?;
    let converted: ogx::WorkloadSpec = serde_json::from_value(json)
        .map_err(|e| Untranslatable::new("spec.workload", e.to_string()))?;
    Ok(Some(converted).filter(|w| *w != ogx::WorkloadSpec::default()))
}

/// `allowedFrom`'s namespaces and labels as one ingress rule on the server port (its own
/// namespace and the operator's are OGXServer's default rule); `None` when it names none.
fn allowed_from_rule(allowed: &AllowedFromSpec, port: i32) -> Option<NetworkPolicyIngressRule> {
    let peers = network_peers::listed_namespaces(allowed)
        .unwrap_or_else(|| vec![network_peers::every_namespace()]);
    (!peers.is_empty()).then(|| NetworkPolicyIngressRule {
        from: Some(peers),
        ports: Some(vec![network_peers::tcp_port(port)]),
    })
}
