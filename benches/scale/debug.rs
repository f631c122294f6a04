//! What the bench prints with `LLSO_SCALE_DEBUG=1`: the operator's writes as the audit log
//! recorded them (status writes with their phase and conditions), and the stacks whose status
//! lacks their server's version. For finding where an unexpected write or a lost field came from.

use kube::api::ListParams;

use crate::made::Made;
use crate::namespace_writes;
use crate::support::control_plane::ControlPlane;

/// Whether the debug output is asked for.
pub fn enabled() -> bool {
    std::env::var_os("LLSO_SCALE_DEBUG").is_some()
}

/// Prints the operator's writes in the stacks' namespace, from the `from`-th on.
pub fn print_writes(plane: &ControlPlane, from: usize) {
    for w in namespace_writes(plane).iter().skip(from) {
        let status = &w["requestObject"]["status"];
        let conditions: Vec<String> = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{}={}/{}:{}",
                    c["type"], c["status"], c["reason"], c["message"]
                )
            })
            .collect();
        // Which parts of the status the write carried (the server's version appearing, say).
        let fields: Vec<&str> = status
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys().map(String::as_str))
            .collect();
        println!(
            "{} {} {}/{} {} {} [{}] {}",
            w["requestReceivedTimestamp"],
            w["verb"],
            w["objectRef"]["resource"],
            w["objectRef"]["subresource"],
            w["objectRef"]["name"],
            status["phase"],
            fields.join(","),
            conditions.join(" ")
        );
    }
}

/// Prints the conditions of every stack whose status lacks its server's version.
pub async fn print_unanswered(client: &kube::Client) {
    let made = Made::from_env();
    let Ok(list) = made.api(client).list(&ListParams::default()).await else {
        return;
    };
    for cr in list.items {
        let status = cr.data.get("status").cloned().unwrap_or_default();
        if made.server_version(&status).is_some() {
            continue;
        }
        let name = cr.metadata.name.unwrap_or_default();
        for c in status["conditions"].as_array().into_iter().flatten() {
            println!(
                "{name}: {} {} {} {}",
                c["type"], c["status"], c["reason"], c["message"]
            );
        }
    }
}
