//! Which optional APIs the cluster serves: OpenShift Routes (exposure), the Prometheus
//! Operator's ServiceMonitor and PrometheusRule (an `OGXServer`'s `monitoring`), and
//! `OGXServer` itself (the second controller), as last read (the reads are the watches':
//! `controller::watches::discovery`, every [`REDISCOVERY_PERIOD`]). A group the API server says
//! it does not serve counts as not served; one it cannot answer for keeps what was known (not
//! served, at start: [`Reading::over`]).

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
pub(in crate::controller) struct Reading {
    /// Routes.
    pub(in crate::controller) routes: Option<bool>,
    /// ServiceMonitors and PrometheusRules.
    pub(in crate::controller) monitoring: Option<bool>,
    /// `OGXServer`s.
    pub(in crate::controller) ogx_servers: Option<bool>,
}

impl Reading {
    /// What is served, after this reading, on what was `known` before it.
    pub(in crate::controller) fn over(self, known: ServedApis) -> ServedApis {
        ServedApis {
            routes: self.routes.unwrap_or(known.routes),
            monitoring: self.monitoring.unwrap_or(known.monitoring),
            ogx_servers: self.ogx_servers.unwrap_or(known.ogx_servers),
        }
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
