//! What a LlamaStackDistribution references besides its spec: Secrets (checked, hashed, URL
//! secrets split into the owned `<cr>-derived` Secret) and the CA bundle ConfigMap. Secret
//! values are read only to hash or split them; none is ever logged or put in the status.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::builders::{CA_BUNDLE_KEY, FIELD_MANAGER, collect_certificates};
use super::{Context, Error, api_err};
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::webhook::references::{RefKind, Reference};

/// The Secrets an object references.
pub(super) struct SecretCheck {
    /// The condition message of the first missing Secret or key.
    pub(super) missing: Option<String>,
    /// How many Secret references there are.
    pub(super) count: usize,
    /// Hash of the referenced values, salted with the object's uid (rolls the Pods when a value
    /// changes; a plain hash of a short password in an annotation would invite guessing).
    pub(super) hash: Option<String>,
    /// The Secrets as read (`None`: absent), for the steps that need values.
    fetched: BTreeMap<String, Option<Secret>>,
}

impl SecretCheck {
    /// The value of `key` in the referenced Secret `name`, as read by [`check_secrets`].
    fn value(&self, name: &str, key: &str) -> Option<&[u8]> {
        let secret = self.fetched.get(name)?.as_ref()?;
        secret.data.as_ref()?.get(key).map(|v| v.0.as_slice())
    }
}

/// Adds length-prefixed `parts` to the hash material (no two inputs share an encoding).
fn absorb(material: &mut Vec<u8>, parts: [&[u8]; 3]) {
    for part in parts {
        material.extend_from_slice(&(part.len() as u64).to_le_bytes());
        material.extend_from_slice(part);
    }
}

/// Reads every referenced Secret once: what is missing, and the hash of what is there.
pub(super) async fn check_secrets(
    client: &kube::Client,
    cr: &LlamaStackDistribution,
    refs: &[Reference],
) -> Result<SecretCheck, Error> {
    let ns = cr.namespace().unwrap_or_default();
    let api = Api::<Secret>::namespaced(client.clone(), &ns);
    let mut fetched: BTreeMap<String, Option<Secret>> = BTreeMap::new();
    let mut missing = None;
    let mut material: Vec<u8> = cr.uid().unwrap_or_default().into_bytes();
    let secret_refs: Vec<&Reference> = refs.iter().filter(|r| r.kind == RefKind::Secret).collect();
    for r in &secret_refs {
        if !fetched.contains_key(&r.name) {
            let secret = api
                .get_opt(&r.name)
                .await
                .map_err(api_err(format!("read Secret {ns}/{}", r.name)))?;
            fetched.insert(r.name.clone(), secret);
        }
        let Some(secret) = fetched.get(&r.name).and_then(Option::as_ref) else {
            missing.get_or_insert_with(|| {
                format!(
                    "Secret \"{}\" not found in namespace \"{ns}\". Referenced by: {}",
                    r.name, r.path
                )
            });
            continue;
        };
        let Some(key) = &r.key else {
            // A whole Secret (the serving certificate): every key counts, so a renewal rolls.
            for (k, v) in secret.data.iter().flatten() {
                absorb(&mut material, [r.name.as_bytes(), k.as_bytes(), &v.0]);
            }
            continue;
        };
        match secret.data.as_ref().and_then(|d| d.get(key)) {
            Some(value) => absorb(&mut material, [r.name.as_bytes(), key.as_bytes(), &value.0]),
            None => {
                missing.get_or_insert_with(|| {
                    format!(
                        "Key \"{key}\" not found in Secret \"{ns}/{}\". Referenced by: {}",
                        r.name,
                        r.path.trim_end_matches(".name")
                    )
                });
            }
        }
    }
    let hash = (!secret_refs.is_empty()).then(|| {
        let full = llama_stack_resolver::base_config::sha256_hex(&material);
        full.chars().take(16).collect()
    });
    Ok(SecretCheck {
        missing,
        count: secret_refs.len(),
        hash,
        fetched,
    })
}

/// The validated PEM of `networking.tls.caBundle`: `None` when none is configured, `Some(Err)`
/// with the condition message when it cannot be used.
pub(super) async fn read_ca_bundle(
    client: &kube::Client,
    cr: &LlamaStackDistribution,
) -> Result<Option<Result<String, String>>, Error> {
    let Some(config) = cr
        .spec
        .networking
        .as_ref()
        .and_then(|n| n.tls.as_ref())
        .and_then(|t| t.ca_bundle.as_ref())
    else {
        return Ok(None);
    };
    let own = cr.namespace().unwrap_or_default();
    let ns = config.config_map_namespace.clone().unwrap_or(own);
    let name = &config.config_map_name;
    let cm = Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .get_opt(name)
        .await
        .map_err(api_err(format!("read ConfigMap {ns}/{name}")))?;
    let Some(cm) = cm else {
        return Ok(Some(Err(format!(
            "ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: spec.networking.tls.caBundle.configMapName"
        ))));
    };
    let keys = config
        .config_map_keys
        .clone()
        .unwrap_or_else(|| vec![CA_BUNDLE_KEY.to_owned()]);
    let data = cm.data.unwrap_or_default();
    let mut sources = Vec::new();
    for key in keys {
        match data.get(&key) {
            Some(text) => sources.push((key, text.clone())),
            None => {
                return Ok(Some(Err(format!(
                    "CA bundle: key \"{key}\" not found in ConfigMap {ns}/{name}: add it or remove it from spec.networking.tls.caBundle.configMapKeys"
                ))));
            }
        }
    }
    Ok(Some(collect_certificates(&sources).map_err(|e| {
        format!("CA bundle in ConfigMap {ns}/{name}: {e}")
    })))
}

/// Splits URL secrets (postgres connection strings) into the owned `<cr>-derived` Secret the
/// Deployment's env vars read. Written only when its content changed; never logged. Returns the
/// condition message when a URL cannot be split (without the URL: it holds a password).
pub(super) async fn derive_url_secrets(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    generated: &crate::config::GeneratedConfig,
    secrets: &SecretCheck,
) -> Result<Option<String>, Error> {
    use crate::config::env::{EnvSource, split_postgres_url};
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
        // Read by `check_secrets`: the connection string is one of the references.
        let Some(url) = secrets
            .value(&secret_key_ref.name, &secret_key_ref.key)
            .and_then(|v| std::str::from_utf8(v).ok())
        else {
            // Reported by SecretsResolved.
            return Ok(None);
        };
        let Some(parts) = split_postgres_url(url) else {
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
