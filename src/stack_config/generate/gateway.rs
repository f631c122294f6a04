//! A gateway in front of the server (`spec.gateway`): Praxis, as the OGX operator's Praxis mode
//! configures OGX. The server trusts the identity Praxis puts in two headers, keeps each tenant's
//! resources apart, and leaves the APIs Praxis serves itself; vector stores get a table of their
//! own when the spec leaves the stores to the base config.

use llama_stack_resolver::server_line::ServerVersion;

use super::*;

/// The APIs Praxis serves itself: they leave the server's config.
pub(super) const PRAXIS_SERVED: &[&str] = &["responses", "conversations"];
/// The header Praxis names the caller in.
pub const PRINCIPAL_HEADER: &str = "x-user-id";
/// The header Praxis names the caller's tenant in.
pub const TENANT_HEADER: &str = "x-tenant-id";
/// Who the operator says it is to a server behind Praxis, as Praxis would name a caller: a
/// principal and a tenant of its own (OGX's tenant ids are `[a-z0-9][a-z0-9-_]{0,127}`). It reads
/// only the public `/v1/version` and the unowned `/v1/providers`.
pub const OPERATOR_CALLER: &[(&str, &str)] = &[
    (PRINCIPAL_HEADER, "system:llama-stack-operator"),
    (TENANT_HEADER, "llama-stack-operator"),
];
/// The first OGX release that reads `server.tenancy` (1.0 and 1.1 ignore the key: checked in
/// their wheels).
const TENANCY: ServerVersion = ServerVersion::new(1, 2, 0);
/// The table vector store metadata goes to in Praxis mode (the OGX operator's name).
const VECTOR_STORES_TABLE: &str = "openai_vector_stores";

/// Whether the spec puts the server behind Praxis.
pub(super) fn behind_praxis(spec: &LlamaStackDistributionSpec) -> bool {
    spec.gateway.is_some()
}

/// The APIs Praxis serves, out of the config (after the user's own `disabled`); a provider the
/// spec gives one of them is an error (it would never be called).
pub(super) fn leave_praxis_apis(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    configured: &BTreeSet<String>,
    config: &mut Map<String, Value>,
) {
    if !behind_praxis(spec) {
        return;
    }
    if ctx.release.line != ServerLine::Ogx {
        ctx.error(
            "spec.gateway.praxis",
            format!(
                "Praxis fronts OGX servers; {} has no upstream-header authentication or tenancy: run an OGX image, or remove gateway",
                ctx.release.describe()
            ),
        );
        return;
    }
    if ctx.release.told_ogx_since(TENANCY) == Some(false) {
        ctx.error(
            "spec.gateway.praxis",
            format!(
                "Praxis needs tenancy (server.tenancy, read by OGX {TENANCY} and later); {} ignores it, so every tenant's resources would share one partition: run OGX {TENANCY} or later, or remove gateway",
                ctx.release.describe()
            ),
        );
        return;
    }
    for api in PRAXIS_SERVED {
        if configured.contains(*api) {
            ctx.error(
                format!("spec.providers.{api}"),
                format!("behind Praxis the gateway serves {api} itself, so this provider would never be called; remove it or the gateway"),
            );
        }
    }
    let off = PRAXIS_SERVED.iter().map(|a| (*a).to_owned()).collect();
    remove_apis(config, &off);
}

/// The server section Praxis needs: callers named by its headers (every resource owned by its
/// creator, unowned ones readable by all), tenancy `multi`; and the vector stores' table when
/// the spec leaves the stores to the base config and the server hosts vector stores. Runs after
/// storage, whose backends the table is put in.
pub(super) fn trust_praxis(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    config: &mut Map<String, Value>,
) {
    if !behind_praxis(spec) || ctx.release.line != ServerLine::Ogx {
        return;
    }
    let server = config
        .entry("server")
        .or_insert_with(|| Value::Object(Map::new()));
    if !server.is_object() {
        *server = Value::Object(Map::new());
    }
    if server
        .get("auth")
        .is_some_and(|auth| !auth.is_null() && auth != &json!({}))
    {
        ctx.warnings.push(
            "spec.gateway.praxis: the base config's server.auth is replaced: Praxis authenticates every caller and names them in its headers".to_owned(),
        );
    }
    server["auth"] = json!({
        "provider_config": {
            "type": "upstream_header",
            "principal_header": PRINCIPAL_HEADER,
            "tenant_header": TENANT_HEADER,
        },
        "access_policy": [
            {"permit": {"actions": ["read"]}, "when": "resource is unowned",
             "description": "All users can read system resources"},
            {"permit": {"actions": ["create"]},
             "description": "Authenticated users can create resources"},
            {"permit": {"actions": ["read", "update", "delete"]}, "when": "user is owner",
             "description": "Owners can manage their own resources"},
        ],
    });
    server["tenancy"] = json!({"mode": "multi"});
    if !hosts_vector_stores(config) {
        return;
    }
    // OGX refuses to start a vector store provider without a metadata table when tenancy is
    // `multi` (`initialize_openai_vector_stores`, 1.3.0).
    let stores = spec.storage.as_ref().and_then(|s| s.stores.as_ref());
    match stores {
        Some(stores) if stores.vector_stores.is_none() => ctx.error(
            "spec.storage.stores.vectorStores",
            "behind Praxis (tenancy multi) OGX starts a vector store provider only with a table for its metadata: name one (backend and tableName), or remove the vector store providers",
        ),
        Some(_) => {}
        None if !vector_stores_table(config) => ctx.error(
            "spec.gateway.praxis",
            "behind Praxis (tenancy multi) OGX starts a vector store provider only with a table for its metadata, and the config has no SQL backend to put it in: add one under spec.storage, or remove the vector store providers",
        ),
        None => {}
    }
}

fn hosts_vector_stores(config: &Map<String, Value>) -> bool {
    providers_of(config, "vector_io").next().is_some()
}

/// `storage.stores.vector_stores` in `sql_default`, else the first SQL backend by name, unless
/// the config already has one; whether the config has one now.
fn vector_stores_table(config: &mut Map<String, Value>) -> bool {
    let Some(storage) = config.get_mut("storage").and_then(Value::as_object_mut) else {
        return false;
    };
    let has_table = |storage: &Map<String, Value>| {
        storage
            .get("stores")
            .and_then(|s| s.get("vector_stores"))
            .is_some_and(|t| !t.is_null())
    };
    if has_table(storage) {
        return true;
    }
    let backend = {
        let Some(backends) = storage.get("backends").and_then(Value::as_object) else {
            return false;
        };
        let mut sql: Vec<&String> = backends
            .iter()
            .filter(|(_, backend)| {
                backend
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.starts_with("sql_"))
            })
            .map(|(name, _)| name)
            .collect();
        sql.sort_by_key(|name| (name.as_str() != "sql_default", name.as_str()));
        match sql.first() {
            Some(name) => (*name).clone(),
            None => return false,
        }
    };
    let stores = storage
        .entry("stores")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(stores) = stores.as_object_mut() else {
        return false;
    };
    stores.insert(
        "vector_stores".to_owned(),
        json!({"backend": backend, "table_name": VECTOR_STORES_TABLE}),
    );
    true
}
