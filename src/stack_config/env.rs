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
    /// Query option `sslmode` (optional: only when the URL has it).
    SslMode,
    /// Query option `sslrootcert` (optional).
    SslRootCert,
    /// Query option `sslcert` (optional).
    SslCert,
    /// Query option `sslkey` (optional).
    SslKey,
}

impl UrlPart {
    /// The query options of a PostgreSQL URL that can be honoured, each with the variable its
    /// client reads it from: llama-stack 0.7.3's `sql_postgres` backend builds its own URL
    /// without options, so asyncpg (like libpq) reads them from `PG*` variables instead.
    pub const QUERY_OPTIONS: [(UrlPart, &'static str, &'static str); 4] = [
        (UrlPart::SslMode, "sslmode", "PGSSLMODE"),
        (UrlPart::SslRootCert, "sslrootcert", "PGSSLROOTCERT"),
        (UrlPart::SslCert, "sslcert", "PGSSLCERT"),
        (UrlPart::SslKey, "sslkey", "PGSSLKEY"),
    ];

    /// Whether the part is there only when the URL has it (a query option).
    pub fn optional(self) -> bool {
        Self::QUERY_OPTIONS.iter().any(|(part, _, _)| *part == self)
    }
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

/// The parts of a connection URL (`postgres://user:password@host:5432/db?…`), percent-decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlParts {
    /// Host name.
    pub host: String,
    /// Port (`5432` when absent).
    pub port: String,
    /// Database.
    pub db: String,
    /// User.
    pub user: String,
    /// Password (empty when absent).
    pub password: String,
    /// Query options (`?sslmode=verify-full&…`), decoded, in order.
    pub options: Vec<(String, String)>,
}

impl UrlParts {
    /// The value of one part.
    pub fn get(&self, part: UrlPart) -> &str {
        match part {
            UrlPart::Host => &self.host,
            UrlPart::Port => &self.port,
            UrlPart::Db => &self.db,
            UrlPart::User => &self.user,
            UrlPart::Password => &self.password,
            optional => {
                let name = UrlPart::QUERY_OPTIONS
                    .iter()
                    .find(|(part, _, _)| *part == optional)
                    .map_or("", |(_, name, _)| *name);
                self.option(name).unwrap_or_default()
            }
        }
    }

    /// The value of a query option.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Query options that cannot be honoured (not in [`UrlPart::QUERY_OPTIONS`]).
    pub fn unsupported_options(&self) -> Vec<&str> {
        self.options
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !UrlPart::QUERY_OPTIONS.iter().any(|(_, o, _)| o == n))
            .collect()
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Splits a PostgreSQL connection URL. `None` when it is not `scheme://user[:password]@host[:port]/db`.
/// Callers must not echo the input: it holds a password.
pub fn split_postgres_url(url: &str) -> Option<UrlParts> {
    let (scheme, rest) = url.trim().split_once("://")?;
    if !matches!(scheme, "postgres" | "postgresql") {
        return None;
    }
    let rest = rest.split('#').next()?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut options = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        options.push((percent_decode(name)?, percent_decode(value)?));
    }
    let (authority, db) = rest.split_once('/')?;
    let (userinfo, hostport) = authority.rsplit_once('@')?;
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, p),
        _ => (hostport, "5432"),
    };
    if host.is_empty() || db.is_empty() || user.is_empty() {
        return None;
    }
    Some(UrlParts {
        host: host.to_owned(),
        port: port.to_owned(),
        db: percent_decode(db)?,
        user: percent_decode(user)?,
        password: percent_decode(password)?,
        options,
    })
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn postgres_urls_split_and_decode() {
        let p =
            split_postgres_url("postgres://llama:p%40ss%3Aword@pg.db:5433/stack?sslmode=require")
                .unwrap();
        assert_eq!(
            (
                p.host.as_str(),
                p.port.as_str(),
                p.db.as_str(),
                p.user.as_str(),
                p.password.as_str()
            ),
            ("pg.db", "5433", "stack", "llama", "p@ss:word")
        );
        assert_eq!(
            split_postgres_url("postgresql://u@h/d").unwrap().port,
            "5432"
        );
        let tls = split_postgres_url(
            "postgres://u:p@h/d?sslmode=verify-full&sslrootcert=%2Fetc%2Fpg%2Fca.crt&application_name=x",
        )
        .unwrap();
        assert_eq!(tls.get(UrlPart::SslMode), "verify-full");
        assert_eq!(tls.get(UrlPart::SslRootCert), "/etc/pg/ca.crt");
        assert_eq!(tls.option("sslcert"), None);
        assert_eq!(tls.unsupported_options(), ["application_name"]);
        for bad in [
            "mysql://u:p@h/d",
            "postgres://h/d",
            "postgres://u:p@h",
            "postgres://u:p@/d",
            "not a url",
            "postgres://u:%zz@h/d",
        ] {
            assert!(split_postgres_url(bad).is_none(), "{bad}");
        }
    }
}
