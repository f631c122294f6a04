//! Prometheus metrics of the operator; [`health`] judges liveness and readiness, [`server`] serves
//! `/metrics`, `/healthz` and `/readyz`, and [`auth`] decides who may read `/metrics`.

pub(crate) mod auth;
mod health;
mod process;
pub(crate) mod server;

pub use health::{Health, WatchHealth, WatchId, WatchLabels};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llama_stack_resolver::stats::Stats;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// Labels of a finished reconcile.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// `success` or `error`.
    pub result: String,
    /// The phase reached, the failing condition's reason, or `ApiError`.
    pub reason: String,
}

/// Labels of the stacks-by-phase gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    /// `Pending`, `Initializing`, `Ready`, `Failed` or `Terminating`.
    pub phase: String,
}

/// Labels of the stuck-rollouts gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StuckLabels {
    /// Why the rollout cannot finish (`ServerCrashLooping`, `ImagePullFailed`, …).
    pub reason: String,
}

/// One stack as the gauges count it: its phase, and why its rollout is stuck, if it is.
pub type StackState = (String, Option<String>);

/// Reads the stacks of one controller scope from its cache, at scrape time.
pub type StackSource = Box<dyn Fn() -> Vec<StackState> + Send + Sync>;

/// The phases every scrape reports, zero included, so that series never vanish.
const PHASES: [&str; 5] = ["Pending", "Initializing", "Ready", "Failed", "Terminating"];

/// Labels of a reconcile duration.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `success` or `error`.
    pub result: String,
}

/// Every metric the operator exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ReconcileLabels, Counter>,
    durations: Family<ResultLabels, Histogram>,
    generations: Counter,
    rollouts: Counter,
    rollbacks: Family<StuckLabels, Counter>,
    watches: Arc<WatchHealth>,
    stacks: Family<PhaseLabels, Gauge>,
    stuck: Family<StuckLabels, Gauge>,
    settings_loaded: Gauge,
    stack_sources: StackSources,
}

/// The caches the stack gauges are read from (one per controller scope).
#[derive(Default)]
struct StackSources(Mutex<Vec<StackSource>>);

impl std::fmt::Debug for StackSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map(|s| s.len()).unwrap_or_default();
        write!(f, "StackSources({n})")
    }
}

impl Metrics {
    /// Metrics reading the resolver's counters at every scrape. (About 80 lines: one registration
    /// per family, kept together so that the exported list reads in one place.)
    pub fn new(resolver: Arc<Stats>) -> Self {
        // The standard `process_*` family is unprefixed, as every Prometheus client exports it;
        // the operator's own metrics are `llso_*`.
        let mut root = Registry::default();
        root.register_collector(Box::new(process::ProcessCollector));
        let registry = root.sub_registry_with_prefix("llso");
        registry.register(
            "build",
            "The operator's version (always 1)",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        let reconciles = registered(
            registry,
            "reconciles",
            "Reconciles of LlamaStackDistributions by result and reason",
            Family::<ReconcileLabels, Counter>::default(),
        );
        let durations = registered(
            registry,
            "reconcile_duration_seconds",
            "Time one reconcile took",
            Family::<ResultLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 16))
            }),
        );
        let generations = registered(
            registry,
            "config_generations",
            "Generated config.yaml ConfigMaps created",
            Counter::default(),
        );
        let rollouts = registered(
            registry,
            "rollouts",
            "Deployment writes (creations and rollouts)",
            Counter::default(),
        );
        let rollbacks = registered(
            registry,
            "rollbacks",
            "Automatic rollbacks to the last Ready revision, by why the new one could not start",
            Family::<StuckLabels, Counter>::default(),
        );
        registry.register_collector(Box::new(ResolverCollector(resolver)));
        let stacks = registered(
            registry,
            "stacks",
            "LlamaStackDistributions by status.phase, from the controller's cache at scrape time",
            Family::<PhaseLabels, Gauge>::default(),
        );
        let stuck = registered(
            registry,
            "rollouts_stuck",
            "LlamaStackDistributions whose rollout cannot finish until a person acts, by reason (the previous revision keeps serving)",
            Family::<StuckLabels, Gauge>::default(),
        );
        let settings_loaded = registered(
            registry,
            "settings_loaded",
            "1 once the leader has read its settings (the operator ConfigMap and the signature key Secrets) and reconciles; 0 while it waits for them and reconciles nothing",
            Gauge::default(),
        );
        let watches = watch_health(registry);
        Self {
            registry: root,
            reconciles,
            durations,
            generations,
            rollouts,
            rollbacks,
            stacks,
            stuck,
            settings_loaded,
            stack_sources: StackSources::default(),
            watches,
        }
    }

    /// Whether the operator's settings are read (the controllers run only once they are).
    pub fn settings_loaded(&self, loaded: bool) {
        self.settings_loaded.set(i64::from(loaded));
    }

    /// The health of the controller's watches.
    pub fn watches(&self) -> Arc<WatchHealth> {
        self.watches.clone()
    }

    /// Records one reconcile.
    pub fn reconciled(&self, success: bool, reason: &str, took: Duration) {
        let result = if success { "success" } else { "error" }.to_owned();
        self.reconciles
            .get_or_create(&ReconcileLabels {
                result: result.clone(),
                reason: reason.to_owned(),
            })
            .inc();
        self.durations
            .get_or_create(&ResultLabels { result })
            .observe(took.as_secs_f64());
    }

    /// Records a newly generated ConfigMap.
    pub fn config_generated(&self) {
        self.generations.inc();
    }

    /// Records a Deployment write.
    pub fn rollout(&self) {
        self.rollouts.inc();
    }

    /// Records an automatic rollback from a revision that could not start for `reason`.
    pub fn rolled_back(&self, reason: &str) {
        self.rollbacks
            .get_or_create(&StuckLabels {
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// Counts the stacks of one more controller scope in the stack gauges.
    pub fn follow_stacks(&self, source: StackSource) {
        let mut sources = self
            .stack_sources
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        sources.push(source);
    }

    /// Sets the stack gauges from the caches.
    fn count_stacks(&self) {
        let mut phases: BTreeMap<String, i64> =
            PHASES.iter().map(|p| ((*p).to_owned(), 0)).collect();
        let mut stuck: BTreeMap<String, i64> = BTreeMap::new();
        let sources = self
            .stack_sources
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for (phase, trouble) in sources.iter().flat_map(|source| source()) {
            *phases.entry(phase).or_default() += 1;
            if let Some(reason) = trouble {
                *stuck.entry(reason).or_default() += 1;
            }
        }
        for (phase, n) in phases {
            self.stacks.get_or_create(&PhaseLabels { phase }).set(n);
        }
        // Reasons no stack has any more disappear rather than stay at a stale value.
        self.stuck.clear();
        for (reason, n) in stuck {
            self.stuck.get_or_create(&StuckLabels { reason }).set(n);
        }
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        self.count_stacks();
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Resolver counters as metrics, read at scrape time.
#[derive(Debug)]
struct ResolverCollector(Arc<Stats>);

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    let metric = ConstCounter::new(value);
    let sub = encoder.encode_descriptor(name, help, None, metric.metric_type())?;
    metric.encode(sub)
}

impl Collector for ResolverCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = self.0.snapshot();
        counter(
            &mut encoder,
            "registry_requests",
            "HTTP requests sent to image registries",
            s.registry_requests,
        )?;
        counter(
            &mut encoder,
            "registry_errors",
            "Registry requests that failed (transport errors, error statuses other than 401)",
            s.registry_errors,
        )?;
        for (cache, (lookups, misses)) in
            [("manifest", s.manifest_cache), ("config", s.config_cache)]
        {
            counter(
                &mut encoder,
                &format!("resolver_{cache}_cache_hits"),
                &format!("Resolver {cache} cache lookups served from memory"),
                lookups.saturating_sub(misses),
            )?;
            counter(
                &mut encoder,
                &format!("resolver_{cache}_cache_misses"),
                &format!("Resolver {cache} cache lookups that went to the registry"),
                misses,
            )?;
        }
        let (verified, unsigned, failed) = s.signatures;
        let mut checks = encoder.encode_descriptor(
            "signature_checks",
            "Images checked against the signature policy (cached verdicts not counted), by result: verified, unsigned, failed",
            None,
            MetricType::Counter,
        )?;
        for (result, n) in [
            ("verified", verified),
            ("unsigned", unsigned),
            ("failed", failed),
        ] {
            ConstCounter::new(n).encode(checks.encode_family(&[("result", result)])?)?;
        }
        let mut buckets = s.latency_buckets.clone();
        let bucketed: u64 = buckets.iter().map(|(_, n)| n).sum();
        buckets.push((f64::INFINITY, s.registry_requests.saturating_sub(bucketed)));
        let mut sub = encoder.encode_descriptor(
            "registry_request_duration_seconds",
            "Latency of registry requests",
            None,
            MetricType::Histogram,
        )?;
        sub.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            s.latency_seconds,
            s.registry_requests,
            &buckets,
            None,
        )
    }
}

/// The watches' health, with its two counters registered.
fn watch_health(registry: &mut Registry) -> Arc<WatchHealth> {
    let watch_errors = registered(
        registry,
        "watch_errors",
        "Errors of the controller's watches, by kind (each is retried after a backoff)",
        Family::<WatchLabels, Counter>::default(),
    );
    let watch_relists = registered(
        registry,
        "watch_relists",
        "Full lists the controller's watches finished, by kind: one at start, then one after each expired or broken watch",
        Family::<WatchLabels, Counter>::default(),
    );
    Arc::new(WatchHealth::new(watch_errors, watch_relists))
}

/// Registers `metric` under `name` with `help`, and returns it (a handle to the same values).
fn registered<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_are_counted_by_phase_and_stuck_rollouts_by_reason_at_scrape_time() {
        let m = Metrics::new(Arc::new(Stats::default()));
        let scope = |states: Vec<(&'static str, Option<&'static str>)>| -> StackSource {
            Box::new(move || {
                states
                    .iter()
                    .map(|(p, r)| ((*p).to_owned(), r.map(str::to_owned)))
                    .collect()
            })
        };
        let text = m.encode().unwrap();
        assert!(
            text.contains("llso_stacks{phase=\"Ready\"} 0"),
            "zeros before any stack:\n{text}"
        );
        m.follow_stacks(scope(vec![
            ("Ready", None),
            ("Failed", Some("ServerCrashLooping")),
        ]));
        m.follow_stacks(scope(vec![("Ready", None), ("Initializing", None)]));
        let text = m.encode().unwrap();
        for line in [
            "llso_stacks{phase=\"Ready\"} 2",
            "llso_stacks{phase=\"Failed\"} 1",
            "llso_stacks{phase=\"Initializing\"} 1",
            "llso_stacks{phase=\"Pending\"} 0",
            "llso_rollouts_stuck{reason=\"ServerCrashLooping\"} 1",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
    }

    #[test]
    fn every_series_is_exported() {
        let stats = Arc::new(Stats::default());
        stats.request(Duration::from_millis(20), true);
        stats.lookup(llama_stack_resolver::stats::CacheKind::Manifest, true);
        stats.lookup(llama_stack_resolver::stats::CacheKind::Manifest, false);
        let m = Metrics::new(stats);
        m.reconciled(true, "Ready", Duration::from_millis(3));
        m.reconciled(false, "ApiError", Duration::from_millis(1));
        m.config_generated();
        m.rollout();
        let text = m.encode().unwrap();
        for line in [
            "llso_reconciles_total{result=\"success\",reason=\"Ready\"} 1",
            "llso_reconciles_total{result=\"error\",reason=\"ApiError\"} 1",
            "llso_reconcile_duration_seconds_count{result=\"success\"} 1",
            "llso_config_generations_total 1",
            "llso_rollouts_total 1",
            "llso_registry_requests_total 1",
            "llso_registry_errors_total 0",
            "llso_resolver_manifest_cache_hits_total 1",
            "llso_resolver_manifest_cache_misses_total 1",
            "llso_registry_request_duration_seconds_bucket{le=\"0.025\"} 1",
            "llso_registry_request_duration_seconds_bucket{le=\"+Inf\"} 1",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn a_watch_failing_longer_than_the_bound_makes_the_operator_unhealthy() {
        let m = Metrics::new(Arc::default());
        let watches = m.watches();
        let health = Health::default();
        health.set_ready();
        health.follow_watches(watches.clone());
        // Instants, not sleeps: a loaded machine (a cold run's preparation beside the unit
        // tests) once slept 60 ms for longer than the 100 ms quiet spell below.
        let t0 = std::time::Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        watches.set_stuck_after(Duration::from_millis(50));
        watches.failed_at(&WatchId::of("Deployment"), &"connection refused", at(0));
        assert_eq!(health.problem_at(at(10)), None, "within the bound");
        let problem = health.problem_at(at(80)).expect("stuck");
        assert!(
            problem.contains("Deployment in all namespaces: connection refused"),
            "{problem}"
        );
        watches.succeeded(&WatchId::of("Deployment"), true);
        assert_eq!(health.problem_at(at(80)), None, "recovered");
        watches.failed_at(&WatchId::of("Secret"), &"410 Expired", at(100));
        assert!(health.problem_at(at(180)).is_some());
        watches.clear();
        assert_eq!(
            health.problem_at(at(180)),
            None,
            "a stopped controller has no watches"
        );
        // A watch that resumed without sending an event: no new error for a while means it works.
        watches.set_recovery_quiet(Duration::from_millis(100));
        watches.failed_at(&WatchId::of("Pod"), &"connection refused", at(200));
        watches.failed_at(&WatchId::of("Pod"), &"connection refused", at(260));
        assert!(health.problem_at(at(260)).is_some(), "still failing");
        assert_eq!(health.problem_at(at(380)), None, "quiet: working again");
        // An error after a quiet spell starts a new failure, not yet stuck.
        watches.failed_at(&WatchId::of("Pod"), &"connection refused", at(400));
        assert_eq!(
            health.problem_at(at(420)),
            None,
            "a new failure, within the bound"
        );
        let text = m.encode().unwrap();
        assert!(
            text.contains("llso_watch_errors_total{kind=\"Deployment\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("llso_watch_relists_total{kind=\"Deployment\"} 1"),
            "{text}"
        );
    }

    /// A namespaced install whose RoleBinding is missing in one namespace: that namespace's watch
    /// of a kind fails while the same kind's watch lists fine in the next one, and of the other
    /// door. The one that fails is stuck and named; its siblings' answers do not clear it.
    #[test]
    fn a_failing_watch_is_judged_apart_from_its_siblings_of_the_same_kind() {
        let m = Metrics::new(Arc::default());
        let watches = m.watches();
        let health = Health::default();
        health.follow_watches(watches.clone());
        watches.set_stuck_after(Duration::from_millis(50));
        let t0 = std::time::Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let secrets = |ns: &str| {
            WatchId::of("Secret")
                .for_door("llama-stack-operator")
                .within(Some(ns))
        };
        let forbidden = "secrets is forbidden";
        watches.failed_at(&secrets("team-b"), &forbidden, at(0));
        watches.failed_at(&secrets("team-b"), &forbidden, at(60));
        watches.succeeded(&secrets("team-a"), true);
        watches.succeeded(
            &WatchId::of("Secret")
                .for_door("ogx-operator")
                .within(Some("team-b")),
            true,
        );
        watches.succeeded(&WatchId::of("Secret"), true);
        let problem = health.problem_at(at(70)).expect("team-b's watch is stuck");
        assert!(
            problem.contains(
                "Secret for llama-stack-operator in namespace team-b: secrets is forbidden"
            ),
            "{problem}"
        );
        assert!(!problem.contains("team-a"), "{problem}");
        watches.succeeded(&secrets("team-b"), true);
        assert_eq!(health.problem_at(at(70)), None, "it lists again");
    }

    /// Every sample name the operator exports, with each family populated.
    fn exported_samples() -> std::collections::BTreeSet<String> {
        let stats = Arc::new(Stats::default());
        stats.request(Duration::from_millis(20), false);
        stats.lookup(llama_stack_resolver::stats::CacheKind::Manifest, false);
        stats.lookup(llama_stack_resolver::stats::CacheKind::Config, true);
        let m = Metrics::new(stats);
        m.reconciled(false, "ApiError", Duration::from_millis(1));
        m.config_generated();
        m.rollout();
        m.rolled_back("ServerCrashLooping");
        m.follow_stacks(Box::new(|| {
            vec![("Failed".to_owned(), Some("ServerCrashLooping".to_owned()))]
        }));
        m.watches()
            .failed(&WatchId::of("Deployment"), &"410 Expired");
        m.watches().succeeded(&WatchId::of("Deployment"), true);
        let text = m.encode().unwrap();
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| l.split(['{', ' ']).next())
            .map(str::to_owned)
            .collect()
    }

    /// The `llso_*` names a text mentions.
    fn queried(text: &str) -> std::collections::BTreeSet<String> {
        let mut names = std::collections::BTreeSet::new();
        let mut rest = text;
        while let Some(at) = rest.find("llso_") {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            names.insert(tail[..end].to_owned());
            rest = &tail[end..];
        }
        names
    }

    const DASHBOARD: &str =
        include_str!("../deploy/components/monitoring/llama-stack-operator-dashboard.json");
    const RULES: &str = include_str!("../deploy/components/monitoring/prometheus_rule.yaml");

    #[test]
    fn the_dashboard_and_the_alerts_query_only_exported_metrics() {
        let exported = exported_samples();
        let dashboard: serde_json::Value = serde_json::from_str(DASHBOARD).unwrap();
        let exprs: Vec<String> = dashboard["panels"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["targets"].as_array().unwrap().clone())
            .map(|t| t["expr"].as_str().unwrap().to_owned())
            .collect();
        let in_dashboard = queried(&exprs.join("\n"));
        let in_rules = queried(RULES);
        for name in in_dashboard.iter().chain(&in_rules) {
            assert!(
                exported.contains(name),
                "{name} is queried but not exported; exported: {exported:?}"
            );
        }
        // Each of the operator's own families has a panel (histograms by their buckets); of the
        // standard process_* family, the panels show memory and CPU.
        for name in exported
            .iter()
            .filter(|n| n.starts_with("llso_"))
            .filter(|n| !n.ends_with("_count") && !n.ends_with("_sum") && !n.ends_with("_created"))
        {
            assert!(
                in_dashboard.contains(name),
                "{name} is exported but no panel shows it"
            );
        }
        // The alerts the issue asks for: stalled rollouts, reconcile errors, registry failures.
        for name in [
            "llso_rollouts_stuck",
            "llso_reconciles_total",
            "llso_registry_errors_total",
        ] {
            assert!(in_rules.contains(name), "no alert on {name}");
        }
    }

    #[test]
    fn a_name_that_is_not_exported_is_caught() {
        let exported = exported_samples();
        assert!(
            queried("rate(llso_reconcile_total[5m])")
                .iter()
                .all(|n| !exported.contains(n))
        );
        assert!(
            queried("rate(llso_reconciles_total[5m])")
                .iter()
                .all(|n| exported.contains(n))
        );
    }
}
