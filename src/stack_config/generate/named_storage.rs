//! Stage 5, named form: `spec.storage.backends` and `spec.storage.stores` replace the whole
//! `storage` section, as the OGX operator writes it. A provider's store that still names a
//! backend the section no longer has (the base config's `kv_default`, `sql_default`) is moved to
//! the backend of its kind that holds the server's own stores, with a warning: left alone, the
//! server would stop at start-up on the unknown backend.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use llama_stack_resolver::server_line::ServerVersion;

use super::*;
use crate::api::ogx::{StorageBackendSpec, StorageBackendType, StorageStoresSpec};

/// The stores of a config, in the order the server's `ServerStoresConfig` lists them.
const STORES: [&str; 7] = [
    "metadata",
    "inference",
    "conversations",
    "responses",
    "prompts",
    "connectors",
    "vector_stores",
];

pub(super) fn named_storage(
    ctx: &mut Ctx<'_>,
    backends: &BTreeMap<String, StorageBackendSpec>,
    stores: Option<&StorageStoresSpec>,
    config: &mut Map<String, Value>,
) {
    let mut section = Map::new();
    for (name, backend) in backends {
        section.insert(name.clone(), backend_config(ctx, name, backend));
    }
    let kind_of = |name: &str| backends.get(name).map(|b| b.type_);
    let line = ctx.table.line();
    let stores = match stores {
        Some(stores) => given_stores(ctx, stores, &kind_of),
        None => default_stores(ctx, backends),
    }
    .map(|stores| for_line(stores, line));
    let Some(stores) = stores.transpose().unwrap_or_else(|(field, why)| {
        ctx.error(field, why);
        None
    }) else {
        return;
    };
    let defaults = DefaultBackends::of(&stores, backends);
    repoint_provider_stores(ctx, config, backends, &defaults);
    config.insert(
        "storage".to_owned(),
        json!({"backends": Value::Object(section), "stores": Value::Object(stores)}),
    );
}

/// `OGX_STORAGE_BACKEND_<NAME>_PASSWORD`: the OGX operator's variable for a backend's password
/// (upper case; each run of other characters one `_`, none at either end; a leading digit
/// prefixed with `_`), so a config moved between the operators reads the same variable.
pub(crate) fn password_variable(backend: &str) -> String {
    let mut field = String::new();
    for c in backend.chars() {
        if c.is_ascii_alphanumeric() {
            field.push(c.to_ascii_uppercase());
        } else if !field.is_empty() && !field.ends_with('_') {
            field.push('_');
        }
    }
    let mut field = field.trim_end_matches('_').to_owned();
    if field.is_empty() {
        field.push('_');
    } else if field.starts_with(|c: char| c.is_ascii_digit()) {
        field.insert(0, '_');
    }
    format!("OGX_STORAGE_BACKEND_{field}_PASSWORD")
}

/// The first OGX release whose `sql_postgres` backend reads `ssl_mode` and `ca_cert_path`;
/// earlier ones, and llama-stack 0.x, drop them without a word.
const SQL_TLS_SETTINGS: ServerVersion = ServerVersion::new(1, 4, 1);

/// The first OGX release that reads `stores.inference.enabled`; earlier ones record every call.
const INFERENCE_STORE_SWITCH: ServerVersion = ServerVersion::new(1, 5, 0);

/// Settings of a backend the image's server would drop without a word. TLS settings it would
/// drop are refused (the server would connect without the TLS asked for); pool settings are named
/// in a warning.
fn check_settings_read(ctx: &mut Ctx<'_>, name: &str, backend: &StorageBackendSpec) {
    let release = ctx.release;
    let server = release.describe();
    let path = |field: &str| format!("spec.storage.backends.{name}.{field}");
    if backend.type_ == StorageBackendType::SqlPostgres {
        let tls = [
            ("sslMode", backend.ssl_mode.is_some()),
            ("caCertPath", backend.ca_cert_path.is_some()),
        ];
        let reads = release.told_ogx_since(SQL_TLS_SETTINGS);
        for (field, _) in tls.iter().filter(|(_, set)| *set) {
            match reads {
                Some(true) => {}
                Some(false) => ctx.error(
                    path(field),
                    format!("{server} does not read it on a sql_postgres backend (OGX {SQL_TLS_SETTINGS} and later do): the server would connect without it; use an image of OGX {SQL_TLS_SETTINGS} or later, or set libpq's PGSSLMODE and PGSSLROOTCERT in workload.overrides.env"),
                ),
                None => ctx.warnings.push(format!(
                    "{}: the image's server release is not known here, and OGX before {SQL_TLS_SETTINGS} (and llama-stack 0.x) does not read it on a sql_postgres backend",
                    path(field)
                )),
            }
        }
    }
    if release.line == ServerLine::LlamaStack && backend.type_ == StorageBackendType::KvPostgres {
        for (field, set) in [
            ("poolSize", backend.pool_size.is_some()),
            ("maxOverflow", backend.max_overflow.is_some()),
            ("commandTimeout", backend.command_timeout.is_some()),
        ] {
            if set {
                ctx.warnings.push(format!(
                    "{}: {server} has no such setting on a kv_postgres backend; its own default applies",
                    path(field)
                ));
            }
        }
    }
}

/// Refuses the numbers the server would refuse at start-up (its own bounds), naming the field:
/// an `${env.…}` substitution is taken as it is, the server reads it.
fn check_numbers(ctx: &mut Ctx<'_>, name: &str, backend: &StorageBackendSpec) {
    let checks: [(&str, &Option<IntOrString>, f64, bool, &str); 5] = [
        ("port", &backend.port, 1.0, true, "a port from 1 to 65535"),
        ("poolSize", &backend.pool_size, 1.0, true, "at least 1"),
        (
            "maxOverflow",
            &backend.max_overflow,
            0.0,
            true,
            "at least 0",
        ),
        (
            "poolRecycle",
            &backend.pool_recycle,
            -1.0,
            true,
            "-1 or more",
        ),
        (
            "commandTimeout",
            &backend.command_timeout,
            0.0,
            false,
            "more than 0 seconds",
        ),
    ];
    for (field, value, least, inclusive, wanted) in checks {
        let Some(value) = value else { continue };
        let number = match value {
            IntOrString::Int(n) => Some(f64::from(*n)),
            IntOrString::String(s) if s.trim().starts_with("${env.") => continue,
            IntOrString::String(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        };
        let whole = field != "commandTimeout";
        let fits = number.is_some_and(|n| {
            (if inclusive { n >= least } else { n > least })
                && (!whole || n.fract() == 0.0)
                && (field != "port" || n <= 65535.0)
        });
        if !fits {
            ctx.error(
                format!("spec.storage.backends.{name}.{field}"),
                format!("{value:?} is not {wanted} (or an ${{env.…}} substitution)"),
            );
        }
    }
    for (field, value) in [
        ("host", &backend.host),
        ("db", &backend.db),
        ("user", &Some(backend.user.clone())),
    ] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            ctx.error(format!("spec.storage.backends.{name}.{field}"), "is blank");
        }
    }
}

fn backend_config(ctx: &mut Ctx<'_>, name: &str, backend: &StorageBackendSpec) -> Value {
    check_settings_read(ctx, name, backend);
    check_numbers(ctx, name, backend);
    let mut out = Map::new();
    out.insert("type".into(), json!(backend.type_.config_name()));
    out.insert(
        "host".into(),
        json!(backend.host.as_deref().unwrap_or("localhost")),
    );
    out.insert(
        "port".into(),
        backend.port.as_ref().map_or(json!(5432), int_or_string),
    );
    out.insert("db".into(), json!(backend.db.as_deref().unwrap_or("ogx")));
    out.insert("user".into(), json!(backend.user));
    if let Some(password) = &backend.password {
        let variable = password_variable(name);
        let path = format!("spec.storage.backends.{name}.password");
        let secret = SecretKeyRef {
            name: password.name.clone(),
            key: password.key.clone(),
        };
        let reference = ctx.secret_env(variable, &secret, &path);
        out.insert("password".into(), json!(reference));
    }
    let strings = [
        ("ssl_mode", &backend.ssl_mode),
        ("ca_cert_path", &backend.ca_cert_path),
        ("table_name", &backend.table_name),
    ];
    for (key, value) in strings {
        if let Some(value) = value {
            out.insert(key.into(), json!(value));
        }
    }
    let numbers = [
        ("pool_size", &backend.pool_size),
        ("max_overflow", &backend.max_overflow),
        ("command_timeout", &backend.command_timeout),
        ("pool_recycle", &backend.pool_recycle),
    ];
    for (key, value) in numbers {
        if let Some(value) = value {
            out.insert(key.into(), int_or_string(value));
        }
    }
    match (&backend.pool_pre_ping_env, backend.pool_pre_ping) {
        (Some(env), _) => {
            out.insert("pool_pre_ping".into(), json!(env));
        }
        (None, Some(ping)) => {
            out.insert("pool_pre_ping".into(), json!(ping));
        }
        (None, None) => {}
    }
    Value::Object(out)
}

/// A number as a number; a string as written (an `${env.…}` substitution, or digits the server
/// parses), a number in a string as a number.
fn int_or_string(value: &IntOrString) -> Value {
    match value {
        IntOrString::Int(n) => json!(n),
        IntOrString::String(s) => {
            let s = s.trim();
            if let Ok(n) = s.parse::<i64>() {
                json!(n)
            } else if let Some(n) = s.parse::<f64>().ok().filter(|n| n.is_finite()) {
                json!(n)
            } else {
                json!(s)
            }
        }
    }
}

/// Warns that `inference.enabled` is read only by OGX releases since the switch, when the image's
/// release is older or not known.
fn warn_of_the_inference_switch(ctx: &mut Ctx<'_>, stores: &StorageStoresSpec) {
    if stores
        .inference
        .as_ref()
        .is_none_or(|i| i.enabled.is_none())
    {
        return;
    }
    let first = INFERENCE_STORE_SWITCH;
    let field = "spec.storage.stores.inference.enabled";
    match ctx.release.told_ogx_since(first) {
        Some(true) => {}
        Some(false) => ctx.warnings.push(format!(
            "{field}: read by OGX {first} and later; {} records inference calls whatever it says",
            ctx.release.describe()
        )),
        None => ctx.warnings.push(format!(
            "{field}: read by OGX {first} and later; the image's server release is not known here, and earlier ones record inference calls whatever it says"
        )),
    }
}

/// Whether store `store`'s `backend` names a backend of the `wanted` kind (`kind_of`); the
/// error on the store's field otherwise.
fn backend_is(
    ctx: &mut Ctx<'_>,
    kind_of: &dyn Fn(&str) -> Option<StorageBackendType>,
    store: &str,
    backend: &str,
    wanted: StorageBackendType,
) -> bool {
    let field = format!("spec.storage.stores.{}.backend", spec_store_name(store));
    match kind_of(backend) {
        Some(kind) if kind == wanted => true,
        Some(_) => {
            let kind = wanted.config_name();
            ctx.error(
                field,
                format!("backend {backend:?} must reference a {kind} backend"),
            );
            false
        }
        None => {
            ctx.error(field, format!("references unknown backend {backend:?}"));
            false
        }
    }
}

/// Every store, the ones not given as `null` (the server then keeps none): the map the user
/// wrote is the whole map, as with the OGX operator.
fn given_stores(
    ctx: &mut Ctx<'_>,
    stores: &StorageStoresSpec,
    kind_of: &dyn Fn(&str) -> Option<StorageBackendType>,
) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    let keyed = prompts_kind(ctx.table.line());
    warn_of_the_inference_switch(ctx, stores);
    let mut ok = true;
    let mut check = |store: &str, backend: &str, wanted: StorageBackendType| {
        backend_is(ctx, kind_of, store, backend, wanted)
    };
    let kv = StorageBackendType::KvPostgres;
    let sql = StorageBackendType::SqlPostgres;
    let metadata = stores.metadata.as_ref().map(|m| {
        ok &= check("metadata", &m.backend, kv);
        json!({"backend": m.backend, "namespace": m.namespace})
    });
    let inference = stores.inference.as_ref().map(|i| {
        ok &= check("inference", &i.backend, sql);
        let mut v = json!({"backend": i.backend, "table_name": i.table_name});
        optional(
            &mut v,
            "max_write_queue_size",
            i.max_write_queue_size.map(|n| json!(n)),
        );
        optional(&mut v, "num_writers", i.num_writers.map(|n| json!(n)));
        optional(&mut v, "enabled", i.enabled.map(|b| json!(b)));
        v
    });
    let responses = stores.responses.as_ref().map(|r| {
        ok &= check("responses", &r.backend, sql);
        let mut v = json!({"backend": r.backend});
        optional(
            &mut v,
            "table_name",
            r.table_name.as_ref().map(|t| json!(t)),
        );
        optional(
            &mut v,
            "max_write_queue_size",
            r.max_write_queue_size.map(|n| json!(n)),
        );
        optional(&mut v, "num_writers", r.num_writers.map(|n| json!(n)));
        v
    });
    let mut table_store = |store: &str,
                           mapping: &Option<crate::api::ogx::storage::SqlStoreMappingSpec>,
                           wanted: StorageBackendType| {
        mapping.as_ref().map(|m| {
            ok &= check(store, &m.backend, wanted);
            json!({"backend": m.backend, "table_name": m.table_name})
        })
    };
    let conversations = table_store("conversations", &stores.conversations, sql);
    let prompts = table_store("prompts", &stores.prompts, keyed);
    let connectors = table_store("connectors", &stores.connectors, keyed);
    let vector_stores = table_store("vector_stores", &stores.vector_stores, sql);
    for (key, value) in STORES.into_iter().zip([
        metadata,
        inference,
        conversations,
        responses,
        prompts,
        connectors,
        vector_stores,
    ]) {
        out.insert(key.to_owned(), value.unwrap_or(Value::Null));
    }
    ok.then_some(out)
}

fn optional(object: &mut Value, key: &str, value: Option<Value>) {
    if let (Some(map), Some(value)) = (object.as_object_mut(), value) {
        map.insert(key.to_owned(), value);
    }
}

/// The stores as the line's server names them. OGX 1.x keeps prompts and connectors in SQL
/// tables and has a vector store metadata store; llama-stack 0.x keeps prompts and connectors in
/// the key-value store (a table name there becomes the namespace, and the backend must be a
/// `kv_postgres` one) and has no vector store metadata store.
fn for_line(
    mut stores: Map<String, Value>,
    line: ServerLine,
) -> Result<Map<String, Value>, (String, String)> {
    if line == ServerLine::Ogx {
        return Ok(stores);
    }
    if stores.remove("vector_stores").is_some_and(|v| !v.is_null()) {
        return Err((
            "spec.storage.stores.vectorStores".to_owned(),
            "llama-stack 0.x has no vector store metadata store (OGX 1.x does)".to_owned(),
        ));
    }
    for store in ["prompts", "connectors"] {
        if let Some(Value::Object(mapping)) = stores.get_mut(store)
            && let Some(table) = mapping.remove("table_name")
        {
            mapping.insert("namespace".to_owned(), table);
        }
    }
    Ok(stores)
}

/// The kind of backend prompts and connectors live on: SQL tables on OGX 1.x, the key-value store
/// on llama-stack 0.x.
fn prompts_kind(line: ServerLine) -> StorageBackendType {
    match line {
        ServerLine::Ogx => StorageBackendType::SqlPostgres,
        ServerLine::LlamaStack => StorageBackendType::KvPostgres,
    }
}

/// `vector_stores` → `vectorStores`: a store's name in the spec.
fn spec_store_name(store: &str) -> &str {
    if store == "vector_stores" {
        "vectorStores"
    } else {
        store
    }
}

/// Without `stores`: the one `kv_postgres` backend holds the registry, the one `sql_postgres`
/// backend the SQL stores, under the server's default names.
fn default_stores(
    ctx: &mut Ctx<'_>,
    backends: &BTreeMap<String, StorageBackendSpec>,
) -> Option<Map<String, Value>> {
    let mut single = |kind: StorageBackendType| {
        let named: Vec<&String> = backends
            .iter()
            .filter(|(_, b)| b.type_ == kind)
            .map(|(n, _)| n)
            .collect();
        match named.as_slice() {
            [one] => Some((*one).clone()),
            _ => {
                ctx.error(
                    "spec.storage.stores",
                    format!(
                        "expected exactly one {} backend, found {}; set spec.storage.stores or configure one backend of that type",
                        kind.config_name(),
                        named.len()
                    ),
                );
                None
            }
        }
    };
    let kv = single(StorageBackendType::KvPostgres);
    let sql = single(StorageBackendType::SqlPostgres);
    let (kv, sql) = (kv?, sql?);
    let mut out = Map::new();
    out.insert(
        "metadata".into(),
        json!({"backend": kv, "namespace": "registry"}),
    );
    for (store, table) in [
        ("inference", "inference_store"),
        ("conversations", "openai_conversations"),
    ] {
        out.insert(store.into(), json!({"backend": sql, "table_name": table}));
    }
    // On the key-value backend, `for_line` makes the table a namespace (llama-stack).
    let keyed = match prompts_kind(ctx.table.line()) {
        StorageBackendType::SqlPostgres => &sql,
        StorageBackendType::KvPostgres => &kv,
    };
    for store in ["prompts", "connectors"] {
        out.insert(store.into(), json!({"backend": keyed, "table_name": store}));
    }
    Some(out)
}

/// The backend of each kind the server's own stores use: the first store's of that kind, in the
/// order of [`STORES`] (the registry's for key-value stores), else the only backend of that kind.
struct DefaultBackends {
    kv: Option<String>,
    sql: Option<String>,
}

impl DefaultBackends {
    fn of(stores: &Map<String, Value>, backends: &BTreeMap<String, StorageBackendSpec>) -> Self {
        let first = |kind: StorageBackendType| {
            STORES.iter().find_map(|store| {
                let name = stores.get(*store)?.get("backend")?.as_str()?;
                (backends.get(name)?.type_ == kind).then(|| name.to_owned())
            })
        };
        // No store names one: the only backend of that kind, if there is one.
        let only = |kind: StorageBackendType| {
            let mut of_kind = backends.iter().filter(|(_, b)| b.type_ == kind);
            match (of_kind.next(), of_kind.next()) {
                (Some((name, _)), None) => Some(name.clone()),
                _ => None,
            }
        };
        let kv = StorageBackendType::KvPostgres;
        let sql = StorageBackendType::SqlPostgres;
        Self {
            kv: first(kv).or_else(|| only(kv)),
            sql: first(sql).or_else(|| only(sql)),
        }
    }
}

/// Moves every provider store (`{backend, namespace}` or `{backend, table_name}` in a provider's
/// config) that names a backend outside `backends` to the default backend of its kind.
fn repoint_provider_stores(
    ctx: &mut Ctx<'_>,
    config: &mut Map<String, Value>,
    backends: &BTreeMap<String, StorageBackendSpec>,
    defaults: &DefaultBackends,
) {
    let Some(Value::Object(providers)) = config.get_mut("providers") else {
        return;
    };
    for (api, list) in providers.iter_mut() {
        let Some(list) = list.as_array_mut() else {
            continue;
        };
        for provider in list {
            let id = provider
                .get("provider_id")
                .and_then(Value::as_str)
                .map(effective_id)
                .unwrap_or("?")
                .to_owned();
            if let Some(settings) = provider.get_mut("config") {
                let path = format!("providers.{api}[{id}].config");
                repoint(ctx, settings, &path, backends, defaults);
            }
        }
    }
}

fn repoint(
    ctx: &mut Ctx<'_>,
    value: &mut Value,
    path: &str,
    backends: &BTreeMap<String, StorageBackendSpec>,
    defaults: &DefaultBackends,
) {
    let Value::Object(map) = value else { return };
    let named = map
        .get("backend")
        .and_then(Value::as_str)
        .filter(|b| !backends.contains_key(*b))
        .map(str::to_owned);
    if let Some(named) = named {
        let (kind, default) = if map.contains_key("namespace") {
            ("key-value", &defaults.kv)
        } else {
            ("SQL", &defaults.sql)
        };
        match default {
            Some(default) => {
                ctx.warnings.push(format!(
                    "{path}: its {kind} store named backend {named:?}, which spec.storage.backends replaces; it uses {default:?}"
                ));
                map.insert("backend".to_owned(), json!(default));
            }
            None => ctx.error(
                "spec.storage.stores",
                format!("{path} keeps a {kind} store on backend {named:?}, which spec.storage.backends replaces, and no store names a {kind} backend to move it to"),
            ),
        }
        return;
    }
    for (key, child) in map.iter_mut() {
        repoint(ctx, child, &format!("{path}.{key}"), backends, defaults);
    }
}
