//! Which optional APIs the cluster serves: OpenShift Routes (exposure), the Prometheus
//! Operator's ServiceMonitor and PrometheusRule (an `OGXServer`'s `monitoring`), and
//! `OGXServer` itself (the second controller). Read when the controller starts, then again every
//! [`REDISCOVERY_PERIOD`] ([`follow`]), so monitoring and `OGXServer`s installed after the
//! operator are used without a restart. A group the API server says it does not serve counts as not served; one
//! it cannot answer for keeps what was known (not served, at start).

use std::time::Duration;

/// How often what the cluster serves is read again.
pub const REDISCOVERY_PERIOD: Duration = Duration::from_secs(60);

/// What the cluster serves beyond the core APIs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServedApis {
    /// `route.openshift.io/v1` routes.
    pub routes: bool,
    /// `monitoring.coreos.com/v1` servicemonitors and prometheusrules, both.
    pub monitoring: bool,
    /// `ogx.io/v1beta1` ogxservers.
    pub ogx_servers: bool,
}

/// One reading of discovery: for each API, served or not, or `None` when the API server could
/// not say (an error other than "not found").
#[derive(Clone, Copy, Debug)]
struct Reading {
    routes: Option<bool>,
    monitoring: Option<bool>,
    ogx_servers: Option<bool>,
}

impl Reading {
    /// What is served, after this reading, on what was `known` before it.
    fn over(self, known: ServedApis) -> ServedApis {
        ServedApis {
            routes: self.routes.unwrap_or(known.routes),
            monitoring: self.monitoring.unwrap_or(known.monitoring),
            ogx_servers: self.ogx_servers.unwrap_or(known.ogx_servers),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// An API server that cannot answer for a group (a hiccup) changes nothing: monitoring
    /// found once is not dropped by one failed read, and only a "not served" answer removes it.
    #[test]
    fn a_reading_that_cannot_say_keeps_what_was_known() {
        let known = ServedApis {
            routes: false,
            monitoring: true,
            ogx_servers: true,
        };
        let hiccup = Reading {
            routes: None,
            monitoring: None,
            ogx_servers: Some(true),
        };
        assert_eq!(hiccup.over(known), known);
        let removed = Reading {
            monitoring: Some(false),
            ..hiccup
        };
        assert!(!removed.over(known).monitoring);
        assert_eq!(
            hiccup.over(ServedApis::default()),
            ServedApis {
                ogx_servers: true,
                ..ServedApis::default()
            }
        );
    }
}
