//! What every reconcile shares: the API client, the current resolver, the Event recorder, the
//! metrics and a few facts learnt at start-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use llama_stack_resolver::{Resolver, ResolverOptions};

use super::memory::event_series::{EventRecorder, Reporter};
use super::memory::prune_marks::{PruneMarks, RolloutState};
use super::memory::recent_writes::RecentWrites;
use crate::core::plan::Operator;

/// What the reconciler needs.
pub struct Context {
    /// API client.
    pub client: kube::Client,
    /// Distribution resolver (with the operator's catalog, mirrors, caches); replaced when the
    /// operator ConfigMap changes.
    resolver: std::sync::RwLock<Arc<Resolver>>,
    /// Where the operator ConfigMap lives, and the options it is layered on.
    pub(super) operator_config: Option<(String, ResolverOptions)>,
    /// Publishes Kubernetes Events.
    pub(super) recorder: EventRecorder,
    /// Prometheus metrics.
    pub(super) metrics: Arc<crate::metrics::Metrics>,
    /// Whether the cluster serves OpenShift Routes (checked when the controller starts).
    routes: AtomicBool,
    /// Whether it serves ServiceMonitors and PrometheusRules (checked with the Routes).
    monitoring: AtomicBool,
    /// Per object uid: the Deployment generation and settledness at the last ConfigMap prune.
    prunes: PruneMarks,
    /// Status writes of the last seconds (see [`RecentWrites`]).
    pub(super) recent_writes: RecentWrites,
    /// The operator's own image, whose binary runs the external-provider steps in the Pod.
    operator_image: Option<String>,
    /// How many reconciles run at once (see [`DEFAULT_CONCURRENCY`]).
    pub(super) concurrency: u16,
    /// What running servers said about themselves, and when each is read again.
    pub(super) servers: super::memory::server_info::ServerProbe,
    /// The HTTP client the servers are read with (`None`: none could be made).
    pub(super) server_http: Option<reqwest::Client>,
    /// How often what the cluster serves is read again.
    pub(super) rediscovery: std::time::Duration,
    /// What the watches of owned objects say of each, so the apply reads only what they
    /// cannot answer for.
    pub(super) owned: super::memory::owned_index::OwnedIndex,
    /// The pull secrets of the namespaces' `default` ServiceAccounts, as their watches listed
    /// them, so a reconcile reads the account only when they cannot say.
    pub(super) default_accounts: super::memory::default_accounts::DefaultAccounts,
    /// Which stacks have server Pods, as the Pods' metadata watches see them, so a look lists
    /// the Pods only of a stack that has some.
    pub(super) server_pods: super::memory::server_pods::ServerPods,
    /// The OGXServers known to hold no Service or Ingress taken from another stack.
    pub(super) handed_back: super::memory::handed_back::HandedBack,
    /// The Secrets and ConfigMaps in scope, as their metadata watches see them, and those read
    /// by name as read at their current version.
    pub(super) secrets: super::memory::read_once::ReadOnce<k8s_openapi::api::core::v1::Secret>,
    pub(super) config_maps:
        super::memory::read_once::ReadOnce<k8s_openapi::api::core::v1::ConfigMap>,
}

/// Reconciles run at once by default. Unbounded, a full resync (an operator ConfigMap change)
/// starts every stack's reconcile together, and the peak memory is never given back: at 400
/// stacks RSS went from 40 MiB to 88–114 MiB and stayed there. With 4 it stayed at 40.5 MiB and the
/// 400 stacks became available as fast (`docs/research/scale.md`).
pub const DEFAULT_CONCURRENCY: u16 = 4;

impl Context {
    /// The operator as the core's decision takes it: its settings and what it learnt of the
    /// cluster.
    pub(super) fn operator(&self) -> Operator<'_> {
        Operator {
            image: self.operator_image(),
            namespace: self.operator_namespace(),
            routes_available: self.routes_available(),
            monitoring_available: self.monitoring_available(),
        }
    }

    /// A context with a fixed resolver.
    pub fn new(client: kube::Client, resolver: Arc<Resolver>) -> Self {
        let reporter = Reporter {
            controller: crate::naming::FIELD_MANAGER.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            metrics: Arc::new(crate::metrics::Metrics::new(resolver.stats())),
            recorder: EventRecorder::new(reporter),
            client,
            resolver: std::sync::RwLock::new(resolver),
            operator_config: None,
            routes: AtomicBool::new(false),
            monitoring: AtomicBool::new(false),
            prunes: PruneMarks::default(),
            recent_writes: RecentWrites::default(),
            operator_image: None,
            concurrency: DEFAULT_CONCURRENCY,
            servers: super::memory::server_info::ServerProbe::default(),
            server_http: server_http_client(),
            rediscovery: super::memory::discovery::REDISCOVERY_PERIOD,
            owned: super::memory::owned_index::OwnedIndex::default(),
            default_accounts: super::memory::default_accounts::DefaultAccounts::default(),
            server_pods: super::memory::server_pods::ServerPods::default(),
            handed_back: super::memory::handed_back::HandedBack::default(),
            secrets: super::memory::read_once::ReadOnce::default(),
            config_maps: super::memory::read_once::ReadOnce::default(),
        }
    }

    /// Sets the operator's own image (needed for external providers).
    pub fn with_operator_image(mut self, image: Option<String>) -> Self {
        self.operator_image = image.filter(|i| !i.is_empty());
        self
    }

    /// Sets how often what the cluster serves is read again (tests shorten it).
    pub fn with_rediscovery(mut self, period: std::time::Duration) -> Self {
        self.rediscovery = period;
        self
    }

    /// Sets how many reconciles run at once (at least one).
    pub fn with_concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// The operator's own image, when known.
    pub fn operator_image(&self) -> Option<&str> {
        self.operator_image.as_deref()
    }

    /// The operator's metrics (reconciles, rollouts, resolver and registry counters).
    pub fn metrics(&self) -> Arc<crate::metrics::Metrics> {
        self.metrics.clone()
    }

    /// Namespace of the operator (its ConfigMap's), when known.
    pub fn operator_namespace(&self) -> Option<&str> {
        self.operator_config.as_ref().map(|(ns, _)| ns.as_str())
    }

    /// Whether exposure uses OpenShift Routes.
    pub fn routes_available(&self) -> bool {
        self.routes.load(Ordering::Relaxed)
    }

    /// Whether an `OGXServer`'s `monitoring` makes a ServiceMonitor and a PrometheusRule.
    pub fn monitoring_available(&self) -> bool {
        self.monitoring.load(Ordering::Relaxed)
    }

    /// Records what the cluster serves (read when the controller starts).
    pub fn learn(&self, served: &super::memory::discovery::ServedApis) {
        self.routes.store(served.routes, Ordering::Relaxed);
        self.monitoring.store(served.monitoring, Ordering::Relaxed);
    }

    pub(super) fn needs_prune(&self, uid: &str, state: RolloutState) -> bool {
        self.prunes.needs_prune(uid, state, Instant::now())
    }

    pub(super) fn pruned(&self, uid: &str, state: RolloutState) {
        self.prunes.pruned(uid, state, Instant::now());
    }

    /// Also follow the operator ConfigMap in `namespace`: its settings are layered on `base`.
    pub fn with_operator_config(mut self, namespace: &str, base: ResolverOptions) -> Self {
        self.operator_config = Some((namespace.to_owned(), base));
        self
    }

    /// The current resolver.
    pub fn resolver(&self) -> Arc<Resolver> {
        match self.resolver.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub(super) fn replace_resolver(&self, resolver: Resolver) {
        let resolver = Arc::new(resolver);
        match self.resolver.write() {
            Ok(mut slot) => *slot = resolver,
            Err(poisoned) => *poisoned.into_inner() = resolver,
        }
    }
}

/// One request to a server's limit, connection included.
const SERVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// The HTTP client the servers are read with (`None`: none could be made; every read says so).
pub(in crate::controller) fn server_http_client() -> Option<reqwest::Client> {
    // reqwest is built without a default crypto provider; the operator uses ring throughout.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        // Every stack is a host of its own, read once a minute: idle connections kept per
        // host would hold buffers for each stack (about 24 MiB at 1000 stacks).
        .pool_max_idle_per_host(0)
        .timeout(SERVER_TIMEOUT)
        .connect_timeout(SERVER_TIMEOUT)
        .tls_danger_accept_invalid_certs(true)
        .user_agent(concat!("llama-stack-operator/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| tracing::warn!(%error, "no HTTP client for reading servers"))
        .ok()
}
