//! Which optional APIs the cluster serves: OpenShift Routes (exposure), the Prometheus
//! Operator's ServiceMonitor and PrometheusRule (an `OGXServer`'s `monitoring`), and
//! `OGXServer` itself (the second controller). Read when the controller starts; a group the
//! API server does not serve, or cannot list, counts as not served.

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

/// Asks the API server which of the optional APIs it serves.
pub async fn served_apis(client: &kube::Client) -> ServedApis {
    let monitoring = serves(
        client,
        "monitoring.coreos.com/v1",
        &["servicemonitors", "prometheusrules"],
    );
    let routes = serves(client, "route.openshift.io/v1", &["routes"]);
    let ogx = serves(client, crate::api::ogx::API_VERSION, &["ogxservers"]);
    let (routes, monitoring, ogx_servers) = tokio::join!(routes, monitoring, ogx);
    ServedApis {
        routes,
        monitoring,
        ogx_servers,
    }
}

/// Whether `group_version` serves every one of `resources`.
async fn serves(client: &kube::Client, group_version: &str, resources: &[&str]) -> bool {
    client
        .list_api_group_resources(group_version)
        .await
        .is_ok_and(|list| {
            resources
                .iter()
                .all(|wanted| list.resources.iter().any(|r| r.name == *wanted))
        })
}
