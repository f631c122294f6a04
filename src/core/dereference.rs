//! What a LlamaStackDistribution refers to besides its spec, judged (pure; the reads are
//! the gather step's, `controller::read::gather`): Secrets are checked and hashed, connection strings split into the parts
//! the server reads, and the CA bundle ConfigMap validated. Secret values are read only to hash
//! or split them; none is ever logged or put in the status.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::builders::collect_certificates;
use super::conditions::Blocked;
use super::observed::{Observed, Reach};
use super::plan::Planned;
use super::stack::Stack;
use crate::api::conditions::{ConditionType, Reason};
use crate::api::object_refs::{RefKind, Reference};
use crate::naming::{CA_BUNDLE_KEY, derived_secret_key, derived_secret_name};
use crate::ownership::controlled_by;
use crate::stack_config::GeneratedConfig;

/// The Secrets an object references, all found.
pub(crate) struct SecretCheck<'a> {
    /// How many Secret references there are.
    pub(crate) count: usize,
    /// Hash of the referenced values, salted with the object's uid (rolls the Pods when a value
    /// changes; a plain hash of a short password in an annotation would invite guessing).
    pub(crate) hash: Option<String>,
    /// The Secrets as read (`None`: absent), for the steps that need values.
    fetched: &'a BTreeMap<String, Option<Secret>>,
}

impl SecretCheck<'_> {
    /// The value of `key` in the referenced Secret `name`.
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

/// The first 16 hex digits of the SHA-256 of `material`: what a Pod template annotation carries.
fn short_hash(material: &[u8]) -> String {
    let full = llama_stack_resolver::sha256_hex(material);
    full.chars().take(16).collect()
}

/// The referenced Secrets (`fetched`, as read): the hash of their values, or the first one
/// (or key) missing.
pub(crate) fn secrets<'a>(
    stack: &Stack<'_>,
    fetched: &'a BTreeMap<String, Option<Secret>>,
) -> Result<SecretCheck<'a>, Blocked> {
    let ns = stack.namespace();
    let mut missing = None;
    let mut material: Vec<u8> = stack.uid().as_bytes().to_vec();
    let secret_refs: Vec<&Reference> = stack
        .references
        .iter()
        .filter(|r| r.kind == RefKind::Secret)
        .collect();
    for r in &secret_refs {
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
    if let Some(message) = missing {
        return Err(Blocked::reference(
            ConditionType::SecretsResolved,
            Reason::SecretNotFound,
            message,
        ));
    }
    let hash = (!secret_refs.is_empty()).then(|| short_hash(&material));
    Ok(SecretCheck {
        count: secret_refs.len(),
        hash,
        fetched,
    })
}

/// The validated PEM of `networking.tls.caBundle` and `additionalCaBundles`, joined in that
/// order (`None` when none is configured), or why it cannot be used. `read`: the ConfigMap of
/// each, in the stack's order, as read (`None`: absent).
pub(crate) fn ca_bundle(
    stack: &Stack<'_>,
    read: &[Option<ConfigMap>],
) -> Result<Option<String>, Blocked> {
    let invalid = |message| {
        Blocked::reference(
            ConditionType::ConfigGenerated,
            Reason::CABundleInvalid,
            message,
        )
    };
    if stack.networking.ca_bundles.is_empty() {
        return Ok(None);
    }
    let own = stack.namespace();
    let empty = BTreeMap::new();
    let mut sources = Vec::new();
    for (i, (field, config)) in stack.networking.ca_bundles.iter().enumerate() {
        let ns = config.config_map_namespace.as_deref().unwrap_or(own);
        let name = &config.config_map_name;
        let Some(cm) = read.get(i).and_then(Option::as_ref) else {
            return Err(invalid(format!(
                "ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: {field}.configMapName"
            )));
        };
        let keys = config
            .config_map_keys
            .clone()
            .unwrap_or_else(|| vec![CA_BUNDLE_KEY.to_owned()]);
        let data = cm.data.as_ref().unwrap_or(&empty);
        let mut these = Vec::new();
        for key in keys {
            match data.get(&key) {
                Some(text) => these.push((key, text.clone())),
                None => {
                    return Err(invalid(format!(
                        "CA bundle: key \"{key}\" not found in ConfigMap {ns}/{name}: add it or remove it from {field}.configMapKeys"
                    )));
                }
            }
        }
        // Checked per ConfigMap, so an error names the one to fix.
        collect_certificates(&these)
            .map_err(|e| invalid(format!("CA bundle in ConfigMap {ns}/{name}: {e}")))?;
        sources.extend(these);
    }
    collect_certificates(&sources)
        .map(Some)
        .map_err(|e| invalid(format!("CA bundle: {e}")))
}

/// The PEM certificate of `networking.tls.clientIdentity` (`None` when none is configured),
/// validated as the CA bundle's are, or why it cannot be used. `cm`: its ConfigMap, as read.
pub(crate) fn client_certificate(
    stack: &Stack<'_>,
    cm: Option<&ConfigMap>,
) -> Result<Option<String>, Blocked> {
    let Some(identity) = stack.networking.client_identity else {
        return Ok(None);
    };
    let (ns, name, key) = (
        stack.namespace(),
        &identity.certificate.name,
        &identity.certificate.key,
    );
    let field = "spec.networking.tls.clientIdentity.certificate";
    let invalid = |message| {
        Blocked::reference(
            ConditionType::ConfigGenerated,
            Reason::ClientCertificateInvalid,
            message,
        )
    };
    let Some(cm) = cm else {
        return Err(invalid(format!(
            "ConfigMap \"{name}\" not found in namespace \"{ns}\". Referenced by: {field}.name"
        )));
    };
    let Some(text) = cm.data.as_ref().and_then(|d| d.get(key)) else {
        return Err(invalid(format!(
            "Key \"{key}\" not found in ConfigMap \"{ns}/{name}\". Referenced by: {field}"
        )));
    };
    collect_certificates(&[(key.clone(), text.clone())])
        .map(Some)
        .map_err(|e| invalid(format!("client certificate in ConfigMap {ns}/{name}: {e}")))
}

/// The hash that rolls the Pods when a referenced value changes: the Secrets', and the client
/// certificate's (mounted from its ConfigMap, read by the server when it starts).
pub(crate) fn rollout_hash(
    secrets: Option<&str>,
    client_certificate: Option<&str>,
) -> Option<String> {
    match client_certificate {
        None => secrets.map(str::to_owned),
        Some(pem) => {
            let mut material = Vec::new();
            absorb(
                &mut material,
                [
                    secrets.unwrap_or_default().as_bytes(),
                    b"client-certificate",
                    pem.as_bytes(),
                ],
            );
            Some(short_hash(&material))
        }
    }
}

/// The parts of the connection strings the config reads from separate variables (PostgreSQL
/// host, port, user, password, database), keyed as the `<name>-derived` Secret holds them; or
/// why a value cannot be split (without the value: it holds a password). Pure.
pub(crate) fn url_parts(
    generated: &GeneratedConfig,
    secrets: &SecretCheck,
) -> Result<BTreeMap<String, ByteString>, Blocked> {
    use crate::stack_config::env::{EnvSource, UrlPart, split_postgres_url};
    let mut data = BTreeMap::new();
    for var in &generated.env {
        let EnvSource::SecretUrlPart {
            secret_key_ref,
            part,
        } = &var.source
        else {
            continue;
        };
        // Read by `secrets`: the connection string is one of the references, so it is there.
        let url = secrets
            .value(&secret_key_ref.name, &secret_key_ref.key)
            .and_then(|v| std::str::from_utf8(v).ok());
        let Some(parts) = url.and_then(split_postgres_url) else {
            return Err(Blocked::spec(
                ConditionType::ConfigGenerated,
                Reason::ConfigGenerationFailed,
                format!(
                    "the value of key \"{}\" in Secret \"{}\" is not a PostgreSQL URL like postgres://user:password@host:5432/db (spec.storage.sql.connectionString)",
                    secret_key_ref.key, secret_key_ref.name
                ),
            ));
        };
        if let Some(option) = parts.unsupported_options().first() {
            return Err(Blocked::spec(
                ConditionType::ConfigGenerated,
                Reason::ConfigGenerationFailed,
                format!(
                    "the PostgreSQL URL in key \"{}\" of Secret \"{}\" has the query option {option:?}, which llama-stack 0.7.3's PostgreSQL store cannot pass on (it would be dropped); remove it. Supported: {} (spec.storage.sql.connectionString)",
                    secret_key_ref.key,
                    secret_key_ref.name,
                    UrlPart::QUERY_OPTIONS.map(|(_, name, _)| name).join(", ")
                ),
            ));
        }
        if part.optional() && parts.get(*part).is_empty() {
            continue;
        }
        data.insert(
            derived_secret_key(*part),
            ByteString(parts.get(*part).as_bytes().to_vec()),
        );
    }
    Ok(data)
}

/// Whether the stack may write its derived Secret: the name is free, or the Secret there is this
/// stack's (controlled by it). A Secret of that name the stack does not control (a user's, or
/// another tool's) is never overwritten: the stack is blocked and the status says what to do.
/// `occupant`: the metadata of what holds the name, as read.
pub(crate) fn derived_secret_free(
    stack: &Stack<'_>,
    derived: &BTreeMap<String, ByteString>,
    secrets_hash: Option<&str>,
    occupant: Option<&ObjectMeta>,
) -> Result<(), Blocked> {
    if derived.is_empty() {
        return Ok(());
    }
    let name = derived_secret_name(stack.name(), secrets_hash.unwrap_or_default());
    match occupant {
        Some(meta) if !controlled_by(meta, stack.uid()) => Err(Blocked::spec(
            ConditionType::ConfigGenerated,
            Reason::ConfigGenerationFailed,
            format!(
                "Secret \"{name}\" exists and is not this stack's (no controller reference to it); the operator keeps the parts of spec.storage.sql.connectionString there and will not overwrite it: rename or delete that Secret"
            ),
        )),
        _ => Ok(()),
    }
}

/// What the spec's references give the objects, once judged.
#[derive(Default)]
pub(crate) struct Dereferenced {
    /// How many Secrets are referenced, all found (`None` offline: not read).
    pub(crate) secrets_found: Option<usize>,
    /// The hash that rolls the Pods when a referenced value changes.
    pub(crate) rollout_hash: Option<String>,
    /// The parts of connection strings, for the `<name>-derived` Secret.
    pub(crate) derived: BTreeMap<String, ByteString>,
    /// The CA bundle's certificates.
    pub(crate) ca_bundle: Option<String>,
}

/// The references of `stack` judged from what was read, or what blocks it (with how many
/// Secrets were found, when that far). Offline ([`Reach::Manifests`]) none was read, so none
/// gives anything.
pub(crate) fn referenced(
    stack: &Stack<'_>,
    observed: &Observed,
    planned: &Planned,
) -> Result<Dereferenced, (Option<usize>, Blocked)> {
    if observed.reach == Reach::Manifests {
        return Ok(Dereferenced::default());
    }
    let secrets = secrets(stack, &observed.secrets).map_err(|missing| (None, missing))?;
    let found = Some(secrets.count);
    let derived = url_parts(&planned.generated, &secrets).map_err(|e| (found, e))?;
    let client_certificate =
        client_certificate(stack, observed.client_certificate.as_ref()).map_err(|e| (found, e))?;
    let rollout_hash = rollout_hash(secrets.hash.as_deref(), client_certificate.as_deref());
    let occupant = observed.derived_secret.as_ref();
    derived_secret_free(stack, &derived, rollout_hash.as_deref(), occupant)
        .map_err(|taken| (found, taken))?;
    let ca_bundle = ca_bundle(stack, &observed.ca_bundles).map_err(|e| (found, e))?;
    Ok(Dereferenced {
        secrets_found: found,
        rollout_hash,
        derived,
        ca_bundle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack_config::env::{EnvSource, EnvVarSpec, UrlPart};

    fn connection(url: &str) -> (GeneratedConfig, BTreeMap<String, Option<Secret>>) {
        let reference = crate::api::v1alpha2::SecretKeyRef {
            name: "pg".into(),
            key: "url".into(),
        };
        let env = [
            UrlPart::Host,
            UrlPart::Password,
            UrlPart::SslMode,
            UrlPart::SslRootCert,
        ]
        .into_iter()
        .map(|part| EnvVarSpec {
            name: format!("{part:?}"),
            source: EnvSource::SecretUrlPart {
                secret_key_ref: reference.clone(),
                part,
            },
        })
        .collect();
        let generated = GeneratedConfig {
            yaml: String::new(),
            hash: String::new(),
            env,
            provider_count: 0,
            resource_count: 0,
            config_version: 2,
            warnings: Vec::new(),
        };
        let secret = Secret {
            data: Some(BTreeMap::from([(
                "url".to_owned(),
                ByteString(url.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        let fetched = BTreeMap::from([("pg".to_owned(), Some(secret))]);
        (generated, fetched)
    }

    #[test]
    fn tls_options_are_split_out_and_other_options_refused_without_the_url() {
        let check = |fetched| SecretCheck {
            count: 1,
            hash: None,
            fetched,
        };
        let (generated, fetched) = connection("postgres://u:pw@db:5432/kv?sslmode=verify-full");
        let data = url_parts(&generated, &check(&fetched)).unwrap();
        let text = |k: &str| {
            data.get(k)
                .map(|v| String::from_utf8_lossy(&v.0).into_owned())
        };
        assert_eq!(text("storage-sql-sslmode").as_deref(), Some("verify-full"));
        assert_eq!(
            text("storage-sql-sslrootcert"),
            None,
            "an option the URL lacks stays unset (the variable is optional)"
        );
        assert_eq!(text("storage-sql-host").as_deref(), Some("db"));
        let (generated, fetched) = connection("postgres://u:pw@db/kv?target_session_attrs=any");
        let blocked = url_parts(&generated, &check(&fetched)).unwrap_err();
        let message = format!("{blocked:?}");
        assert!(
            message.contains("target_session_attrs") && message.contains("sslmode"),
            "{message}"
        );
        assert!(!message.contains("pw@"), "never the URL: {message}");
    }
}
