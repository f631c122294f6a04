//! `networking.tls.clientIdentity`: the client certificate the server presents, set as
//! `network.tls.client_cert` and `client_key` of every provider whose config takes `network`
//! (OGX 1.x's remote inference providers). The files are the ones the Pod mounts at
//! [`CLIENT_IDENTITY_DIR`]; a provider's own `network.tls` settings are kept beside them.

use super::*;

/// Where the client certificate and its key are mounted (`tls.crt`, `tls.key`).
pub const CLIENT_IDENTITY_DIR: &str = "/etc/llama-stack-client-identity";

/// Adds the identity to every provider that takes one; an error when none does (the user asked
/// for mutual TLS and would get none).
pub(super) fn client_identity(
    ctx: &mut Ctx<'_>,
    spec: &LlamaStackDistributionSpec,
    config: &mut Map<String, Value>,
) {
    let asked = spec
        .networking
        .as_ref()
        .and_then(|n| n.tls.as_ref())
        .is_some_and(|t| t.client_identity.is_some());
    if !asked {
        return;
    }
    let table = ctx.table;
    let mut given = 0;
    if let Some(Value::Object(providers)) = config.get_mut("providers") {
        for (api, list) in providers.iter_mut() {
            for provider in list.as_array_mut().into_iter().flatten() {
                let takes_network = provider
                    .get("provider_type")
                    .and_then(Value::as_str)
                    .and_then(|t| table.get(api, t))
                    .is_some_and(|info| info.config_keys.iter().any(|k| k == "network"));
                if !takes_network {
                    continue;
                }
                let Some(Value::Object(config)) = provider.get_mut("config") else {
                    continue;
                };
                let network = config.entry("network").or_insert_with(|| json!({}));
                let Value::Object(network) = network else {
                    continue;
                };
                let tls = network.entry("tls").or_insert_with(|| json!({}));
                if let Value::Object(tls) = tls {
                    tls.entry("client_cert")
                        .or_insert_with(|| json!(format!("{CLIENT_IDENTITY_DIR}/tls.crt")));
                    tls.entry("client_key")
                        .or_insert_with(|| json!(format!("{CLIENT_IDENTITY_DIR}/tls.key")));
                    given += 1;
                }
            }
        }
    }
    if given == 0 {
        ctx.error(
            "spec.networking.tls.clientIdentity",
            format!(
                "no provider of the config takes a client certificate in {} (OGX 1.x's remote inference providers do, under network.tls)",
                table.server_name()
            ),
        );
    }
}
