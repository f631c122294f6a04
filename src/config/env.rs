//! Environment variables carrying secrets into the server: named deterministically, referenced
//! from the config as `${env.NAME}`, filled by the Pod from Secrets. No secret value is ever
//! written into a config.

use serde::Serialize;

use crate::api::v1alpha2::SecretKeyRef;

/// A part of a URL kept in a Secret (for backends that take host/port/db/user/password).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UrlPart {
    /// Host name.
    Host,
    /// Port.
    Port,
    /// Database (the URL path).
    Db,
    /// User name.
    User,
    /// Password.
    Password,
}

/// Where an environment variable's value comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum EnvSource {
    /// A Secret key, as is.
    SecretKeyRef(SecretKeyRef),
    /// One part of a URL stored in a Secret key; the reconciler splits it into an owned Secret,
    /// because the Pod cannot parse a URL from an env var.
    SecretUrlPart {
        /// The Secret key holding the URL.
        secret_key_ref: SecretKeyRef,
        /// Which part.
        part: UrlPart,
    },
    /// A literal (non-secret) value.
    Value(String),
}

/// One environment variable of the server container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvVarSpec {
    /// Name (`[A-Z0-9_]`).
    pub name: String,
    /// Value source.
    #[serde(flatten)]
    pub source: EnvSource,
}

/// `LLSD_<ID>_<FIELD>`, upper-cased, every character outside `[A-Z0-9_]` mapped to `_`
/// (llama-stack leaves `${env.x}` with other characters unexpanded, silently).
pub fn env_name(id: &str, field: &str) -> String {
    let sanitize = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("LLSD_{}_{}", sanitize(id), sanitize(field))
}

/// `${env.NAME}`: required, the server refuses to start when it is unset.
pub fn env_ref(name: &str) -> String {
    format!("${{env.{name}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised() {
        assert_eq!(
            env_name("vllm-primary", "apiKey"),
            "LLSD_VLLM_PRIMARY_APIKEY"
        );
        assert_eq!(
            env_name("vllm-primary", "api_key"),
            "LLSD_VLLM_PRIMARY_API_KEY"
        );
        assert_eq!(env_name("my.db", "host"), "LLSD_MY_DB_HOST");
        assert_eq!(env_ref("LLSD_X_API_KEY"), "${env.LLSD_X_API_KEY}");
    }
}
