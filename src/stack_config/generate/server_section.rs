//! The server section: TLS, workers, and the plain-HTTP opt-out of the servers that need it.

use super::*;

/// Where the serving certificate Secret is mounted (`kubernetes.io/tls` keys).
pub const TLS_DIR: &str = "/etc/llama-stack-tls";

/// `networking.tls` and `workload.workers` in the server section, and, for a server that refuses
/// plain HTTP unless told (OGX from 1.2), `insecure: true` when the operator serves no TLS (the
/// key is ignored by the servers before it, and only images built after ogx-ai/ogx#6288 pass
/// `--insecure` themselves). Returns whether anything was set. (The port is passed in the
/// environment: `llama stack run` ignores `server.port`.)
pub(super) fn server(
    spec: &LlamaStackDistributionSpec,
    release: ServerRelease,
    config: &mut Map<String, Value>,
) -> bool {
    let tls = spec
        .networking
        .as_ref()
        .and_then(|n| n.tls.as_ref())
        .is_some_and(|t| t.enabled && t.secret_name.is_some());
    let workers = spec.workload.as_ref().and_then(|w| w.workers);
    let insecure = !tls && release.requires_tls_opt_out();
    if !tls && workers.is_none() && !insecure {
        return false;
    }
    let server = config
        .entry("server")
        .or_insert_with(|| Value::Object(Map::new()));
    if !server.is_object() {
        *server = Value::Object(Map::new());
    }
    if tls {
        server["tls_certfile"] = Value::String(format!("{TLS_DIR}/tls.crt"));
        server["tls_keyfile"] = Value::String(format!("{TLS_DIR}/tls.key"));
    }
    if let Some(workers) = workers {
        server["workers"] = Value::from(workers);
    }
    if insecure {
        server["insecure"] = Value::Bool(true);
    }
    true
}
