//! Kubernetes image pull secrets (`kubernetes.io/dockerconfigjson`, `kubernetes.io/dockercfg`)
//! read into a [`Keyring`] with kubelet's rules.
//!
//! Only `username`, `password` and `auth` are read; `auth` (base64 `user:password`) wins over the
//! other two. `identitytoken`, `registrytoken`, `credsStore` and `credHelpers` are ignored: a
//! credential helper named in a secret is never executed. Errors never contain secret values.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use serde_json::{Map, Value};

use crate::keyring::{Credential, CredentialSource, Keyring};

/// Secret type of a `~/.docker/config.json`-shaped pull secret.
pub const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// Secret type of the legacy `~/.dockercfg`-shaped pull secret.
pub const DOCKER_CFG: &str = "kubernetes.io/dockercfg";

/// Why a pull secret could not be read. kubelet fails the pull in all these cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PullSecretError {
    /// The data key the type requires is absent.
    #[error("pull secret {secret} of type {secret_type} has no {key:?} key")]
    MissingKey {
        /// The secret.
        secret: CredentialSource,
        /// Its type.
        secret_type: String,
        /// The missing data key.
        key: &'static str,
    },
    /// The data is not valid JSON of the expected shape (position only, never the content).
    #[error("pull secret {secret}: {key} is not a valid docker config: {problem}")]
    Malformed {
        /// The secret.
        secret: CredentialSource,
        /// The data key.
        key: &'static str,
        /// What is wrong, without secret content.
        problem: String,
    },
    /// An `auth` field is not base64 of `user:password`.
    #[error(
        "pull secret {secret}: the auth field for registry {registry:?} must be base64 of \"username:password\""
    )]
    BadAuth {
        /// The secret.
        secret: CredentialSource,
        /// The registry key of the entry.
        registry: String,
    },
}

/// What reading one secret did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretOutcome {
    /// Credentials for this many registry keys were added.
    Added(usize),
    /// The secret is not a pull secret type; kubelet ignores it too.
    IgnoredType(String),
}

fn json_problem(err: &serde_json::Error) -> String {
    // serde_json's Display can quote the offending value; keep position and category only.
    format!(
        "{:?} error at line {} column {}",
        err.classify(),
        err.line(),
        err.column()
    )
    .to_lowercase()
}

fn decode_auth(field: &str) -> Option<(String, String)> {
    let trimmed = field.trim();
    let decoded = if trimmed.ends_with('=') {
        STANDARD.decode(field)
    } else {
        STANDARD_NO_PAD.decode(field)
    }
    .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

fn string_field(entry: &Map<String, Value>, name: &str) -> String {
    entry
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Adds the credentials of one secret (its `type` and decoded `data`) to the keyring.
pub fn add_pull_secret(
    keyring: &mut Keyring,
    source: CredentialSource,
    secret_type: &str,
    data: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Result<SecretOutcome, PullSecretError> {
    let (key, wrapped) = match secret_type {
        DOCKER_CONFIG_JSON => (".dockerconfigjson", true),
        DOCKER_CFG => (".dockercfg", false),
        other => return Ok(SecretOutcome::IgnoredType(other.to_owned())),
    };
    let Some(bytes) = data.get(key) else {
        return Err(PullSecretError::MissingKey {
            secret: source,
            secret_type: secret_type.to_owned(),
            key,
        });
    };
    let malformed = |problem: String| PullSecretError::Malformed {
        secret: source.clone(),
        key,
        problem,
    };
    let document: Value = serde_json::from_slice(bytes).map_err(|e| malformed(json_problem(&e)))?;
    let entries = if wrapped {
        match document.get("auths") {
            Some(Value::Object(auths)) => auths,
            // kubelet: `{}` or a config without auths yields no credentials.
            None | Some(Value::Null) => return Ok(SecretOutcome::Added(0)),
            Some(_) => return Err(malformed("\"auths\" must be an object".to_owned())),
        }
    } else {
        match &document {
            Value::Object(entries) => entries,
            _ => return Err(malformed("the document must be an object".to_owned())),
        }
    };
    let mut added = 0;
    for (registry, entry) in entries {
        let Value::Object(entry) = entry else {
            return Err(malformed(format!(
                "the entry for registry {registry:?} must be an object"
            )));
        };
        let mut username = string_field(entry, "username");
        let mut password = string_field(entry, "password");
        let auth = string_field(entry, "auth");
        if !auth.is_empty() {
            let Some((user, pass)) = decode_auth(&auth) else {
                return Err(PullSecretError::BadAuth {
                    secret: source,
                    registry: registry.clone(),
                });
            };
            username = user;
            password = pass;
        }
        let credential = Credential {
            username,
            password,
            source: source.clone(),
        };
        if keyring.add(registry, credential) {
            added += 1;
        }
    }
    Ok(SecretOutcome::Added(added))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn source() -> CredentialSource {
        CredentialSource {
            namespace: "team".to_owned(),
            name: "pull".to_owned(),
        }
    }

    fn data(key: &str, json: &str) -> BTreeMap<String, Vec<u8>> {
        BTreeMap::from([(key.to_owned(), json.as_bytes().to_vec())])
    }

    #[test]
    fn dockerconfigjson_auth_overrides_username_and_password() {
        let mut keyring = Keyring::default();
        let json = r#"{"auths": {"quay.io": {"username": "u", "password": "p", "auth": "cGluZzpwb25n"},
                       "https://index.docker.io/v1/": {"auth": "Zm9vOmJhcg=="}}}"#;
        let outcome = add_pull_secret(
            &mut keyring,
            source(),
            DOCKER_CONFIG_JSON,
            &data(".dockerconfigjson", json),
        )
        .unwrap();
        assert_eq!(outcome, SecretOutcome::Added(2));
        let quay = keyring.lookup("quay.io/org/app");
        assert_eq!(
            (quay[0].username.as_str(), quay[0].password.as_str()),
            ("ping", "pong")
        );
        let hub = keyring.lookup("docker.io/library/nginx");
        assert_eq!(
            (hub[0].username.as_str(), hub[0].password.as_str()),
            ("foo", "bar")
        );
    }

    #[test]
    fn dockercfg_is_the_unwrapped_form_and_auth_may_be_unpadded() {
        let mut keyring = Keyring::default();
        // base64("a:b:c") without padding; the password keeps its colon.
        let json = r#"{"registry.example.com:5000": {"auth": "YTpiOmM"}}"#;
        add_pull_secret(
            &mut keyring,
            source(),
            DOCKER_CFG,
            &data(".dockercfg", json),
        )
        .unwrap();
        let found = keyring.lookup("registry.example.com:5000/app");
        assert_eq!(
            (found[0].username.as_str(), found[0].password.as_str()),
            ("a", "b:c")
        );
    }

    #[test]
    fn helpers_and_tokens_in_a_secret_are_ignored() {
        let mut keyring = Keyring::default();
        let json = r#"{"auths": {"quay.io": {"identitytoken": "t"}}, "credsStore": "evil", "credHelpers": {"quay.io": "evil"}}"#;
        add_pull_secret(
            &mut keyring,
            source(),
            DOCKER_CONFIG_JSON,
            &data(".dockerconfigjson", json),
        )
        .unwrap();
        let found = keyring.lookup("quay.io/x");
        assert_eq!(
            (found[0].username.as_str(), found[0].password.as_str()),
            ("", "")
        );
    }

    #[test]
    fn other_secret_types_are_ignored() {
        let mut keyring = Keyring::default();
        let outcome = add_pull_secret(&mut keyring, source(), "Opaque", &BTreeMap::new()).unwrap();
        assert_eq!(outcome, SecretOutcome::IgnoredType("Opaque".to_owned()));
        assert!(keyring.is_empty());
    }

    #[test]
    fn errors_name_the_secret_and_never_the_value() {
        let mut keyring = Keyring::default();
        let err = add_pull_secret(&mut keyring, source(), DOCKER_CONFIG_JSON, &BTreeMap::new())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "pull secret team/pull of type kubernetes.io/dockerconfigjson has no \".dockerconfigjson\" key"
        );

        let err = add_pull_secret(
            &mut keyring,
            source(),
            DOCKER_CONFIG_JSON,
            &data(
                ".dockerconfigjson",
                r#"{"auths": {"quay.io": {"password": 12345678, "auth": "c2VjcmV0cGFzcw=="}}}"#,
            ),
        )
        .unwrap_err();
        assert!(matches!(err, PullSecretError::BadAuth { .. }), "{err}");
        assert!(
            !err.to_string().contains("secretpass") && !err.to_string().contains("c2VjcmV0"),
            "{err}"
        );

        let err = add_pull_secret(
            &mut keyring,
            source(),
            DOCKER_CONFIG_JSON,
            &data(
                ".dockerconfigjson",
                r#"{"auths": {"quay.io": {"auth": "hunter2-not-json"#,
            ),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "pull secret team/pull: .dockerconfigjson is not a valid docker config"
            ),
            "{err}"
        );
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
