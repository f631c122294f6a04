//! `spec.storage` of an `OGXServer`: the named PostgreSQL backends and the stores that point at
//! them (the OGX operator's API after v0.14), and the older `kv`/`sql` pair it keeps as a
//! deprecated form. The v1alpha2 model carries the named form as it is (`backends`, `stores`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::SecretKeyRef;

/// Backend of the key-value store.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum KvStorageType {
    /// A file on the data volume.
    #[default]
    Sqlite,
    /// A Redis server.
    Redis,
}

/// Backend of the SQL store.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SqlStorageType {
    /// A file on the data volume.
    #[default]
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// The key-value store (the deprecated form).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[x_kube(validation = Rule::new("self.type != 'redis' || has(self.endpoint)").message("endpoint is required when type is redis").reason(Reason::FieldValueRequired))]
#[x_kube(validation = Rule::new("!has(self.endpoint) || self.type == 'redis'").message("endpoint is only valid when type is redis"))]
#[x_kube(validation = Rule::new("!has(self.password) || self.type == 'redis'").message("password is only valid when type is redis"))]
pub struct KvStorageSpec {
    /// `sqlite` (default) or `redis`.
    #[serde(rename = "type", default)]
    #[schemars(extend("default" = "sqlite"))]
    pub type_: KvStorageType,
    /// The Redis URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The Redis password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretKeyRef>,
}

/// The SQL store (the deprecated form).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.type != 'postgres' || has(self.connectionString)").message("connectionString is required when type is postgres").reason(Reason::FieldValueRequired))]
#[x_kube(validation = Rule::new("!has(self.connectionString) || self.type == 'postgres'").message("connectionString is only valid when type is postgres"))]
pub struct SqlStorageSpec {
    /// `sqlite` (default) or `postgres`.
    #[serde(rename = "type", default)]
    #[schemars(extend("default" = "sqlite"))]
    pub type_: SqlStorageType,
    /// The PostgreSQL connection string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_string: Option<SecretKeyRef>,
}

/// The server's storage: named backends and the stores on them, or the deprecated `kv`/`sql`.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Default)]
#[x_kube(validation = Rule::new("!(has(self.backends)||has(self.stores))||!(has(self.kv)||has(self.sql))").message("named and deprecated storage fields cannot be mixed"))]
pub struct StateStorageSpec {
    /// Named PostgreSQL backends, by the name stores and providers refer to them with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = MAX_BACKENDS))]
    pub backends: Option<BTreeMap<String, StorageBackendSpec>>,
    /// Which backend each of the server's stores uses. Without it, one `kv_postgres` and one
    /// `sql_postgres` backend hold every store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<StorageStoresSpec>,
    /// Key-value store (deprecated: use `backends`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv: Option<KvStorageSpec>,
    /// SQL store (deprecated: use `backends`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<SqlStorageSpec>,
}

/// The kind of a named backend.
#[derive(
    Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum StorageBackendType {
    /// A key-value store in a PostgreSQL table.
    KvPostgres,
    /// SQL stores in a PostgreSQL database.
    SqlPostgres,
}

impl StorageBackendType {
    /// The `type` the server's config names.
    pub fn config_name(self) -> &'static str {
        match self {
            StorageBackendType::KvPostgres => "kv_postgres",
            StorageBackendType::SqlPostgres => "sql_postgres",
        }
    }
}

/// The longest `tableName` of a backend. The OGX operator's CRD leaves it unbounded, and the API
/// server then refuses the CRD: the cost of the rule matching it against a pattern, over a string
/// as long as a request, is past the budget. 128 holds any PostgreSQL identifier (63) and a
/// substitution around one.
pub const TABLE_NAME_MAX_LENGTH: u32 = 128;

/// The most named backends a server has. The OGX operator's CRD leaves the map unbounded, and
/// the API server then refuses the CRD: each backend's rules count once per possible entry.
pub const MAX_BACKENDS: u32 = 16;

/// A named PostgreSQL backend. Host, port, database and user are written into the config; the
/// password is read from its Secret by the server, never copied.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.tableName) || self.type == 'kv_postgres'").message("tableName is only valid for kv_postgres backends"))]
#[x_kube(validation = Rule::new("!has(self.tableName)||self.tableName.startsWith('${env.')||self.tableName.matches('^[A-Za-z_][A-Za-z0-9_]{0,62}$')").message("invalid"))]
#[x_kube(validation = Rule::new("!has(self.commandTimeout) || self.type == 'kv_postgres'").message("commandTimeout is only valid for kv_postgres backends"))]
#[x_kube(validation = Rule::new("!has(self.poolRecycle) || self.type == 'sql_postgres'").message("poolRecycle is only valid for sql_postgres backends"))]
#[x_kube(validation = Rule::new("!has(self.poolPrePing) || self.type == 'sql_postgres'").message("poolPrePing is only valid for sql_postgres backends"))]
#[x_kube(validation = Rule::new("!has(self.poolPrePingEnv) || self.type == 'sql_postgres'").message("poolPrePingEnv is only valid for sql_postgres backends"))]
#[x_kube(validation = Rule::new("!(has(self.poolPrePing) && has(self.poolPrePingEnv))").message("set only one of poolPrePing and poolPrePingEnv"))]
#[x_kube(validation = Rule::new("!has(self.poolPrePingEnv) || self.poolPrePingEnv.startsWith('${env.')").message("poolPrePingEnv must be an OGX environment substitution"))]
#[x_kube(validation = Rule::new("self.type != 'sql_postgres' || !has(self.sslMode) || self.sslMode.startsWith('${env.') || self.sslMode in ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']").message("sslMode for sql_postgres must be a supported SSL mode or an OGX environment substitution"))]
pub struct StorageBackendSpec {
    /// `kv_postgres` or `sql_postgres`.
    #[serde(rename = "type")]
    pub type_: StorageBackendType,
    /// Server host (default `localhost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), extend("default" = "localhost"))]
    pub host: Option<String>,
    /// Server port (default 5432), or an `${env.…}` substitution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 5432))]
    pub port: Option<IntOrString>,
    /// Database (default `ogx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), extend("default" = "ogx"))]
    pub db: Option<String>,
    /// Database user.
    #[schemars(length(min = 1))]
    pub user: String,
    /// The password, read from a Secret; without it the server connects without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretKeyRef>,
    /// libpq SSL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_mode: Option<String>,
    /// A CA certificate file in the server's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_cert_path: Option<String>,
    /// The key-value table (`kv_postgres` only): a PostgreSQL identifier or an `${env.…}`
    /// substitution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = TABLE_NAME_MAX_LENGTH))]
    pub table_name: Option<String>,
    /// Persistent connections (the server's default: 5 for KV, 10 for SQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<IntOrString>,
    /// Connections beyond the pool (the server's default: 10 for KV, 20 for SQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_overflow: Option<IntOrString>,
    /// Seconds a statement may take (`kv_postgres` only; the server's default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_timeout: Option<IntOrString>,
    /// Seconds before a connection is renewed, -1 never (`sql_postgres` only; default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_recycle: Option<IntOrString>,
    /// Test connections before use (`sql_postgres` only; default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_pre_ping: Option<bool>,
    /// `poolPrePing` as an `${env.…}` substitution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_pre_ping_env: Option<String>,
}

/// A key-value store on a backend.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
pub struct KvStoreMappingSpec {
    /// The backend's name in `backends`.
    #[schemars(length(min = 1))]
    pub backend: String,
    /// The key prefix.
    #[schemars(length(min = 1))]
    pub namespace: String,
}

/// A SQL store on a backend.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SqlStoreMappingSpec {
    /// The backend's name in `backends`.
    #[schemars(length(min = 1))]
    pub backend: String,
    /// The table.
    #[schemars(length(min = 1))]
    pub table_name: String,
}

/// The inference store.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct InferenceStoreMappingSpec {
    /// The backend's name in `backends`.
    #[schemars(length(min = 1))]
    pub backend: String,
    /// The table.
    #[schemars(length(min = 1))]
    pub table_name: String,
    /// Writes queued before callers wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_write_queue_size: Option<i32>,
    /// Concurrent writers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_writers: Option<i32>,
    /// Whether inference calls are recorded (OGX 1.5 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// The responses store.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ResponsesStoreMappingSpec {
    /// The backend's name in `backends`.
    #[schemars(length(min = 1))]
    pub backend: String,
    /// The table (the server's default `openai_responses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_name: Option<String>,
    /// Writes queued before callers wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_write_queue_size: Option<i32>,
    /// Concurrent writers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_writers: Option<i32>,
}

/// Which backend each of the server's stores uses; a store left out is not configured.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct StorageStoresSpec {
    /// The registry (a key-value store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KvStoreMappingSpec>,
    /// Recorded inference calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference: Option<InferenceStoreMappingSpec>,
    /// Conversations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<SqlStoreMappingSpec>,
    /// Responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<ResponsesStoreMappingSpec>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<SqlStoreMappingSpec>,
    /// Connectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connectors: Option<SqlStoreMappingSpec>,
    /// Vector store metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_stores: Option<SqlStoreMappingSpec>,
}
