//! Reads which optional APIs the cluster serves ([`ServedApis`], remembered in
//! `controller::memory::discovery`): when the controller starts, then again every
//! [`REDISCOVERY_PERIOD`](crate::controller::memory::discovery::REDISCOVERY_PERIOD)
//! ([`follow`]), so monitoring and `OGXServer`s installed after the operator are used without a
//! restart.

use std::time::Duration;

use crate::controller::memory::discovery::{Reading, ServedApis};

/// Asks the API server which of the optional APIs it serves. Whether it serves `OGXServer`s
/// decides which controllers run, so an unanswered question is asked again (one failed call at
/// start must not leave them off until a restart); the others fall back to "not served" and are
/// followed ([`follow`]).
pub async fn served_apis(client: &kube::Client) -> ServedApis {
    loop {
        let reading = read(client).await;
        if reading.ogx_servers.is_some() {
            return reading.over(ServedApis::default());
        }
        tracing::warn!(
            retry_in = ?START_RETRY,
            "the API server did not say whether it serves OGXServers; asking again"
        );
        tokio::time::sleep(START_RETRY).await;
    }
}

/// How soon an unanswered question at start is asked again.
const START_RETRY: Duration = Duration::from_secs(2);

/// Reads what the cluster serves every `period`, from `known` on, and calls `changed` with what
/// is served whenever that changes; returns when `changed` breaks.
pub async fn follow(
    client: &kube::Client,
    mut known: ServedApis,
    period: Duration,
    mut changed: impl FnMut(ServedApis) -> std::ops::ControlFlow<()>,
) {
    loop {
        tokio::time::sleep(period).await;
        let now = read(client).await.over(known);
        if now != known {
            if changed(now).is_break() {
                return;
            }
            known = now;
        }
    }
}

async fn read(client: &kube::Client) -> Reading {
    let monitoring = serves(
        client,
        "monitoring.coreos.com/v1",
        &["servicemonitors", "prometheusrules"],
    );
    let routes = serves(client, "route.openshift.io/v1", &["routes"]);
    let ogx = serves(client, crate::api::ogx::API_VERSION, &["ogxservers"]);
    let (routes, monitoring, ogx_servers) = tokio::join!(routes, monitoring, ogx);
    Reading {
        routes,
        monitoring,
        ogx_servers,
    }
}

/// Whether `group_version` serves every one of `resources`; `None` when the API server could
/// not say.
async fn serves(client: &kube::Client, group_version: &str, resources: &[&str]) -> Option<bool> {
    match client.list_api_group_resources(group_version).await {
        Ok(list) => Some(
            resources
                .iter()
                .all(|wanted| list.resources.iter().any(|r| r.name == *wanted)),
        ),
        Err(kube::Error::Api(status)) if status.code == 404 => Some(false),
        Err(_) => None,
    }
}
