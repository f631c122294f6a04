//! Stage 5: storage backends and stores, per subsection of `spec.storage`.

use super::*;

pub(super) fn storage(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    config: &mut Map<String, Value>,
) {
    let Some(storage) = &spec.storage else { return };
    match (&storage.backends, &storage.stores) {
        (Some(backends), stores) => {
            if storage.kv.is_some() || storage.sql.is_some() {
                ctx.error(
                    "spec.storage",
                    "named and deprecated storage fields cannot be mixed: backends/stores replace the whole storage section, kv and sql one backend each",
                );
                return;
            }
            return super::named_storage::named_storage(ctx, backends, stores.as_ref(), config);
        }
        (None, Some(_)) => {
            ctx.error(
                "spec.storage.stores",
                "spec.storage.backends is required when spec.storage.stores is provided",
            );
            return;
        }
        (None, None) => {}
    }
    let distro = config
        .get("distro_name")
        .and_then(Value::as_str)
        .unwrap_or("llama-stack")
        .to_owned();
    let home = if ctx.table.line() == ServerLine::Ogx {
        "~/.ogx"
    } else {
        "~/.llama"
    };
    let sqlite_dir = format!("${{env.SQLITE_STORE_DIR:={home}/distributions/{distro}}}");
    let mut backends: Vec<(&str, Value)> = Vec::new();
    if let Some(kv) = &storage.kv
        && let Some(backend) = kv_backend(ctx, kv, &sqlite_dir)
    {
        backends.push(("kv_default", backend));
    }
    if let Some(sql) = &storage.sql
        && let Some(backend) = sql_backend(ctx, sql, &sqlite_dir)
    {
        backends.push(("sql_default", backend));
    }
    let storage = config.entry("storage").or_insert_with(|| json!({}));
    if !storage.is_object() {
        *storage = json!({});
    }
    if let Some(storage) = storage.as_object_mut() {
        let backends_value = storage.entry("backends").or_insert_with(|| json!({}));
        if let Some(map) = backends_value.as_object_mut() {
            for (name, backend) in backends {
                map.insert(name.to_owned(), backend);
            }
        }
    }
}

/// The `kv_default` backend; `None` (reported) when its endpoint is not a URL.
pub(super) fn kv_backend(ctx: &mut Ctx<'_>, kv: &KvStorageSpec, sqlite_dir: &str) -> Option<Value> {
    match kv.type_ {
        KvStorageType::Sqlite => {
            Some(json!({"type": "kv_sqlite", "db_path": format!("{sqlite_dir}/kvstore.db")}))
        }
        KvStorageType::Redis => {
            let endpoint = kv.endpoint.as_deref().unwrap_or_default();
            if kv.password.is_some() {
                ctx.error("spec.storage.kv.password", "llama-stack 0.7.3's redis backend has no password setting (it would connect without one); use a Redis that needs no password on the cluster network, or sqlite/postgres");
            }
            let Some(url) = parse_url(endpoint) else {
                ctx.error(
                    "spec.storage.kv.endpoint",
                    format!("{endpoint:?} is not a URL like redis://host:6379"),
                );
                return None;
            };
            let port = url.port.and_then(|p| p.parse::<u64>().ok()).unwrap_or(6379);
            Some(json!({"type": "kv_redis", "host": url.host, "port": port}))
        }
    }
}

/// The `sql_default` backend. PostgreSQL takes host, port, db, user and password separately:
/// each is an environment variable read from the `<name>-derived` Secret, which the controller
/// splits from the user's connection string.
pub(super) fn sql_backend(
    ctx: &mut Ctx<'_>,
    sql: &SqlStorageSpec,
    sqlite_dir: &str,
) -> Option<Value> {
    match sql.type_ {
        SqlStorageType::Sqlite => {
            Some(json!({"type": "sql_sqlite", "db_path": format!("{sqlite_dir}/sql_store.db")}))
        }
        SqlStorageType::Postgres => {
            let SecretValue { secret_key_ref } = sql.connection_string.as_ref()?;
            let mut backend = Map::new();
            backend.insert("type".into(), json!("sql_postgres"));
            for (key, part) in [
                ("host", UrlPart::Host),
                ("port", UrlPart::Port),
                ("db", UrlPart::Db),
                ("user", UrlPart::User),
                ("password", UrlPart::Password),
            ] {
                let name = env_name("storage_sql", key);
                backend.insert(key.into(), json!(env_ref(&name)));
                let source = EnvSource::SecretUrlPart {
                    secret_key_ref: secret_key_ref.clone(),
                    part,
                };
                ctx.env.insert(name.clone(), EnvVarSpec { name, source });
            }
            // TLS options of the URL, read by the client from its own variables (set only when
            // the URL has them: optional keys of the derived Secret).
            for (part, _, variable) in UrlPart::QUERY_OPTIONS {
                let source = EnvSource::SecretUrlPart {
                    secret_key_ref: secret_key_ref.clone(),
                    part,
                };
                ctx.env.insert(
                    variable.to_owned(),
                    EnvVarSpec {
                        name: variable.to_owned(),
                        source,
                    },
                );
            }
            Some(Value::Object(backend))
        }
    }
}
