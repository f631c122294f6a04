//! A gateway in front of the server (`spec.gateway`): Praxis, as the OGX operator's Praxis mode
//! configures OGX. The server trusts the identity Praxis puts in two headers, keeps each tenant's
//! resources apart, and leaves the APIs Praxis serves itself; vector stores get a table of their
//! own when the spec leaves the stores to the base config.

use super::*;

/// The APIs Praxis serves itself: they leave the server's config.
pub(super) const PRAXIS_SERVED: &[&str] = &["responses", "conversations"];
/// The header Praxis names the caller in.
pub const PRINCIPAL_HEADER: &str = "x-user-id";
/// The header Praxis names the caller's tenant in.
pub const TENANT_HEADER: &str = "x-tenant-id";
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
    let stores_given = spec.storage.as_ref().is_some_and(|s| s.stores.is_some());
    if !stores_given && hosts_vector_stores(config) {
        vector_stores_table(config);
    }
}

fn hosts_vector_stores(config: &Map<String, Value>) -> bool {
    providers_of(config, "vector_io").next().is_some()
}

/// `storage.stores.vector_stores` in `sql_default`, else the first SQL backend by name, unless
/// the config already has one.
fn vector_stores_table(config: &mut Map<String, Value>) {
    let Some(storage) = config.get_mut("storage").and_then(Value::as_object_mut) else {
        return;
    };
    let backend = {
        let Some(backends) = storage.get("backends").and_then(Value::as_object) else {
            return;
        };
        let sql = |(name, backend): (&String, &Value)| {
            backend
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.starts_with("sql_"))
                .then(|| name.clone())
        };
        if backends.get("sql_default").is_some() {
            Some("sql_default".to_owned())
        } else {
            let mut names: Vec<String> = backends.iter().filter_map(sql).collect();
            names.sort();
            names.into_iter().next()
        }
    };
    let Some(backend) = backend else {
        return;
    };
    let stores = storage
        .entry("stores")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(stores) = stores.as_object_mut() else {
        return;
    };
    if stores.get("vector_stores").is_none_or(Value::is_null) {
        stores.insert(
            "vector_stores".to_owned(),
            json!({"backend": backend, "table_name": VECTOR_STORES_TABLE}),
        );
    }
}
