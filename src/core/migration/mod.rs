//! The Praxis migration (an `OGXServer`'s `praxisMode.migrationJob`): whether it can start
//! (the preflight), and the attempt it starts, keyed so that the same inputs never run twice.
//! Pure: the Secrets are those gather read.
//!
//! What differs from the OGX operator on purpose: the source is read from named
//! `storage.backends` as well as from `storage.sql`; "the same database" is decided on the
//! parsed address (host, port, database), not on the bytes of the two strings; and the attempt
//! key is made of the Secrets' uid and resource version, never of their values, so that the
//! status carries no hash of a password.

pub mod plan;
pub mod said;
pub mod server_line;
pub mod step;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;

use crate::api::v1alpha2::{PraxisMigration, SecretValue, SqlStorageType, StateStorageSpec};

/// The Job's name after the server's.
pub const JOB_SUFFIX: &str = "-praxis-migration";
/// The annotation on the Job naming the attempt it runs.
pub const ATTEMPT_ANNOTATION: &str = "ogx.io/migration-attempt";
/// The field the migration is asked for by, in an `OGXServer`.
pub const FIELD: &str = "spec.praxisMode.migrationJob";

/// The migration Job of the server `name`.
pub fn job_name(name: &str) -> String {
    format!("{name}{JOB_SUFFIX}")
}

/// A PostgreSQL database, as far as "the same one" goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Database {
    /// The host, lower-cased.
    pub host: String,
    /// The port (5432 when not given).
    pub port: u16,
    /// The database's name.
    pub name: String,
}

/// The database a PostgreSQL URI (`postgresql://` or `postgres://`) names, or `None` for any
/// other form (a keyword/value string, a socket path): such a string is not compared.
pub fn database_of(url: &str) -> Option<Database> {
    let rest = url
        .strip_prefix("postgresql://")
        .or_else(|| url.strip_prefix("postgres://"))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host_port.starts_with('[') => {
            (host, port.parse().ok()?)
        }
        _ => (host_port, 5432),
    };
    let name = path.split(['?', '#']).next().unwrap_or_default();
    (!host.is_empty() && !name.is_empty() && !host.contains(',')).then(|| Database {
        host: host.trim_matches(['[', ']']).to_ascii_lowercase(),
        port,
        name: name.to_owned(),
    })
}

/// One migration to run: its key (what it migrates) and its Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// 16 hex characters over what the attempt migrates.
    pub key: String,
    /// The Job that runs it.
    pub job_name: String,
}

/// Where the server keeps what the migration reads: the `storage.sql` connection string, or
/// the PostgreSQL backends named in `storage.backends`.
enum Source<'a> {
    ConnectionString(&'a SecretValue),
    Backends(Vec<(&'a str, Option<Database>, Option<&'a str>)>),
}

fn source(storage: Option<&StateStorageSpec>) -> Result<Source<'_>, String> {
    let storage = storage.ok_or_else(no_source)?;
    if let Some(sql) = &storage.sql {
        return match (&sql.type_, &sql.connection_string) {
            (SqlStorageType::Postgres, Some(url)) => Ok(Source::ConnectionString(url)),
            _ => Err(no_source()),
        };
    }
    let backends: Vec<_> = storage
        .backends
        .iter()
        .flatten()
        .filter(|(_, b)| b.type_.config_name() == "sql_postgres")
        .map(|(name, b)| {
            let port = b.port.as_ref().and_then(|p| match p {
                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => {
                    u16::try_from(*n).ok()
                }
                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => {
                    s.parse().ok()
                }
            });
            let database = match (&b.host, &b.db) {
                (Some(host), Some(db)) if !host.contains("${") && !db.contains("${") => {
                    Some(Database {
                        host: host.to_ascii_lowercase(),
                        port: port.unwrap_or(5432),
                        name: db.clone(),
                    })
                }
                _ => None,
            };
            (
                name.as_str(),
                database,
                b.password.as_ref().map(|p| p.name.as_str()),
            )
        })
        .collect();
    if backends.is_empty() {
        return Err(no_source());
    }
    Ok(Source::Backends(backends))
}

fn no_source() -> String {
    "the migration reads the server's responses and conversations from PostgreSQL: set spec.storage.sql (type postgres, with connectionString) or a sql_postgres backend in spec.storage.backends".to_owned()
}

/// The value of `reference` among the Secrets read, with the Secret itself.
fn value<'a>(
    reference: &SecretValue,
    secrets: &'a BTreeMap<String, Option<Secret>>,
) -> Option<(&'a Secret, String)> {
    let r = &reference.secret_key_ref;
    let secret = secrets.get(&r.name)?.as_ref()?;
    let bytes = secret.data.as_ref()?.get(&r.key)?;
    Some((secret, String::from_utf8_lossy(&bytes.0).into_owned()))
}

/// A Secret's identity and version: what the key is made of instead of its values.
fn version_of(secret: &Secret) -> String {
    let meta = &secret.metadata;
    format!(
        "{}@{}",
        meta.uid.as_deref().unwrap_or_default(),
        meta.resource_version.as_deref().unwrap_or_default()
    )
}

/// Whether the migration can start, and the attempt it starts: the source found, the target's
/// Secret read, the two not the same database. `image` is the image the server runs (pinned),
/// `config` the config it reads (the hash-named ConfigMap, or the image's own).
pub fn preflight(
    migration: &PraxisMigration,
    storage: Option<&StateStorageSpec>,
    secrets: &BTreeMap<String, Option<Secret>>,
    (server, image, config): (&str, &str, &str),
) -> Result<Attempt, String> {
    let source = source(storage)?;
    let target_ref = &migration.target_connection_string;
    let (target_secret, target_url) = value(target_ref, secrets).ok_or_else(|| {
        format!(
            "{FIELD}.targetConnectionString: Secret {:?} key {:?} was not found",
            target_ref.secret_key_ref.name, target_ref.secret_key_ref.key
        )
    })?;
    let target = database_of(&target_url);
    let mut parts = vec![format!("dst={}", version_of(target_secret))];
    match source {
        Source::ConnectionString(url) => {
            if url.secret_key_ref == target_ref.secret_key_ref {
                return Err(format!(
                    "{FIELD}.targetConnectionString names the same Secret key as spec.storage.sql.connectionString: Praxis's database must not be the server's"
                ));
            }
            let (secret, source_url) = value(url, secrets).ok_or_else(|| {
                "spec.storage.sql.connectionString: its Secret key was not found".to_owned()
            })?;
            if target.is_some() && database_of(&source_url) == target {
                return Err(same_database("spec.storage.sql.connectionString"));
            }
            parts.push(format!("src={}", version_of(secret)));
        }
        Source::Backends(backends) => {
            for (name, database, password) in backends {
                if target.is_some() && database == target {
                    return Err(same_database(&format!("spec.storage.backends.{name}")));
                }
                let secret = password
                    .and_then(|p| secrets.get(p))
                    .and_then(Option::as_ref)
                    .map_or_else(String::new, version_of);
                parts.push(format!("src.{name}={secret}"));
            }
        }
    }
    parts.push(format!("cfg={config}"));
    parts.push(format!("image={image}"));
    if let Some(tenant) = &migration.fallback_tenant {
        parts.push(format!("fallbackTenant={tenant:?}"));
    }
    if let Some(owner) = &migration.fallback_owner_subject {
        parts.push(format!("fallbackOwnerSubject={owner:?}"));
    }
    let digest = llama_stack_resolver::sha256_hex(parts.join(";").as_bytes());
    Ok(Attempt {
        key: digest.chars().take(16).collect(),
        job_name: job_name(server),
    })
}

fn same_database(source: &str) -> String {
    format!(
        "{FIELD}.targetConnectionString names the same database as {source}: Praxis's database must not be the server's"
    )
}

/// The variable the Job passes `fallbackTenant` in.
pub const FALLBACK_TENANT_VAR: &str = "PRAXIS_FALLBACK_TENANT";
/// The variable the Job passes `fallbackOwnerSubject` in.
pub const FALLBACK_OWNER_VAR: &str = "PRAXIS_FALLBACK_OWNER_SUBJECT";

/// The migration's shell script: a dry run, then the run, on the config the server reads
/// (`$OGX_CONFIG`). The fallbacks come in as variables ([`FALLBACK_TENANT_VAR`],
/// [`FALLBACK_OWNER_VAR`]), never as text of the script: what a user writes is not code.
pub fn script(migration: &PraxisMigration) -> String {
    let mut flags = String::new();
    if migration.fallback_tenant.is_some() {
        flags.push_str(&format!(" --fallback-tenant \"${FALLBACK_TENANT_VAR}\""));
    }
    if migration.fallback_owner_subject.is_some() {
        flags.push_str(&format!(
            " --fallback-owner-subject \"${FALLBACK_OWNER_VAR}\""
        ));
    }
    format!(
        "set -eu; ogx migrate praxis --dry-run{flags} \"$OGX_CONFIG\" && ogx migrate praxis{flags} \"$OGX_CONFIG\""
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::ByteString;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_postgres_uri_names_its_database() {
        let db = |host: &str, port, name: &str| {
            Some(Database {
                host: host.to_owned(),
                port,
                name: name.to_owned(),
            })
        };
        for (url, expected) in [
            (
                "postgresql://u:p@DB.example:5433/ogx",
                db("db.example", 5433, "ogx"),
            ),
            ("postgres://u@db/ogx?sslmode=require", db("db", 5432, "ogx")),
            (
                "postgresql://u:p%40x@[::1]:6543/praxis",
                db("::1", 6543, "praxis"),
            ),
            (
                "postgresql://db.example/praxis#x",
                db("db.example", 5432, "praxis"),
            ),
            ("host=db dbname=ogx", None),
            ("postgresql://db.example", None),
            ("postgresql://a,b/ogx", None),
            ("mysql://db/ogx", None),
        ] {
            assert_eq!(database_of(url), expected, "{url}");
        }
    }

    fn secret(name: &str, version: &str, key: &str, value: &str) -> (String, Option<Secret>) {
        let secret: Secret = serde_json::from_value(json!({"metadata": {"name": name,
            "uid": format!("uid-{name}"), "resourceVersion": version}}))
        .unwrap();
        let mut secret = secret;
        secret.data = Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(value.as_bytes().to_vec()),
        )]));
        (name.to_owned(), Some(secret))
    }

    fn migration(tenant: Option<&str>) -> PraxisMigration {
        serde_json::from_value(json!({
            "targetConnectionString": {"secretKeyRef": {"name": "praxis-pg", "key": "url"}},
            "fallbackTenant": tenant}))
        .unwrap()
    }

    fn storage(value: serde_json::Value) -> StateStorageSpec {
        serde_json::from_value(value).unwrap()
    }

    fn sql_storage() -> StateStorageSpec {
        storage(json!({"sql": {"type": "postgres",
            "connectionString": {"secretKeyRef": {"name": "ogx-pg", "key": "url"}}}}))
    }

    const AT: (&str, &str, &str) = ("demo", "registry/ogx@sha256:aa", "demo-config-1234");

    #[test]
    fn the_attempt_is_keyed_on_what_it_migrates_and_never_on_a_value() {
        let secrets = BTreeMap::from([
            secret("ogx-pg", "1", "url", "postgresql://u:secret@ogx-db/ogx"),
            secret(
                "praxis-pg",
                "7",
                "url",
                "postgresql://u:secret@praxis-db/praxis",
            ),
        ]);
        let attempt = preflight(&migration(None), Some(&sql_storage()), &secrets, AT).unwrap();
        assert_eq!(attempt.job_name, "demo-praxis-migration");
        assert_eq!(attempt.key.len(), 16);
        let again = preflight(&migration(None), Some(&sql_storage()), &secrets, AT).unwrap();
        assert_eq!(attempt, again, "the same inputs make the same attempt");

        let mut rotated = secrets.clone();
        rotated.extend([secret(
            "praxis-pg",
            "8",
            "url",
            "postgresql://u:secret@praxis-db/praxis",
        )]);
        let changed = |secrets: &BTreeMap<String, Option<Secret>>, m: &PraxisMigration, at| {
            preflight(m, Some(&sql_storage()), secrets, at).unwrap().key
        };
        for (what, key) in [
            (
                "the target Secret changed",
                changed(&rotated, &migration(None), AT),
            ),
            (
                "another image",
                changed(
                    &secrets,
                    &migration(None),
                    ("demo", "registry/ogx@sha256:bb", AT.2),
                ),
            ),
            (
                "another config",
                changed(
                    &secrets,
                    &migration(None),
                    ("demo", AT.1, "demo-config-5678"),
                ),
            ),
            (
                "a fallback tenant",
                changed(&secrets, &migration(Some("t")), AT),
            ),
        ] {
            assert_ne!(key, attempt.key, "{what}");
        }
    }

    #[test]
    fn the_target_is_never_the_servers_own_database() {
        let secrets = BTreeMap::from([
            secret("ogx-pg", "1", "url", "postgresql://a:x@DB:5432/ogx"),
            secret(
                "praxis-pg",
                "1",
                "url",
                "postgres://b:y@db/ogx?sslmode=require",
            ),
            secret("other", "1", "url", "postgresql://b:y@db/praxis"),
        ]);
        let why = preflight(&migration(None), Some(&sql_storage()), &secrets, AT).unwrap_err();
        assert!(
            why.contains("same database as spec.storage.sql.connectionString"),
            "{why}"
        );

        let mut same_key: PraxisMigration = migration(None);
        same_key.target_connection_string.secret_key_ref.name = "ogx-pg".to_owned();
        let why = preflight(&same_key, Some(&sql_storage()), &secrets, AT).unwrap_err();
        assert!(why.contains("same Secret key"), "{why}");

        let backends = storage(
            json!({"backends": {"pg": {"type": "sql_postgres", "host": "DB",
            "db": "ogx", "user": "u", "password": {"name": "ogx-pg", "key": "pw"}}}}),
        );
        let why = preflight(&migration(None), Some(&backends), &secrets, AT).unwrap_err();
        assert!(
            why.contains("same database as spec.storage.backends.pg"),
            "{why}"
        );

        let mut elsewhere = migration(None);
        elsewhere.target_connection_string.secret_key_ref.name = "other".to_owned();
        assert!(preflight(&elsewhere, Some(&backends), &secrets, AT).is_ok());
        assert!(preflight(&elsewhere, Some(&sql_storage()), &secrets, AT).is_ok());
    }

    #[test]
    fn without_a_postgres_source_or_its_target_nothing_starts() {
        let secrets = BTreeMap::from([secret("praxis-pg", "1", "url", "postgresql://db/praxis")]);
        for storage in [
            None,
            Some(storage(json!({"sql": {"type": "sqlite"}}))),
            Some(storage(json!({"kv": {"type": "redis"}}))),
        ] {
            let why = preflight(&migration(None), storage.as_ref(), &secrets, AT).unwrap_err();
            assert!(why.contains("from PostgreSQL"), "{why}");
        }
        let why =
            preflight(&migration(None), Some(&sql_storage()), &BTreeMap::new(), AT).unwrap_err();
        assert!(why.contains("targetConnectionString"), "{why}");
    }

    #[test]
    fn the_script_runs_a_dry_run_then_the_migration_and_names_no_users_text() {
        let mut m = migration(Some("acme"));
        m.fallback_owner_subject = Some("o'brien; rm -rf /".to_owned());
        let with = script(&m);
        assert_eq!(
            with,
            r#"set -eu; ogx migrate praxis --dry-run --fallback-tenant "$PRAXIS_FALLBACK_TENANT" --fallback-owner-subject "$PRAXIS_FALLBACK_OWNER_SUBJECT" "$OGX_CONFIG" && ogx migrate praxis --fallback-tenant "$PRAXIS_FALLBACK_TENANT" --fallback-owner-subject "$PRAXIS_FALLBACK_OWNER_SUBJECT" "$OGX_CONFIG""#
        );
        assert!(!with.contains("acme") && !with.contains("brien"));
        assert_eq!(
            script(&migration(None)),
            r#"set -eu; ogx migrate praxis --dry-run "$OGX_CONFIG" && ogx migrate praxis "$OGX_CONFIG""#
        );
    }
}
