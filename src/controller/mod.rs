//! The controller: LlamaStackDistribution (v1alpha2) -> generated ConfigMap, Deployment and the
//! objects around it (Service, ServiceAccount, PVC, CA bundle, NetworkPolicy, Ingress or Route,
//! HPA, PDB).
//!
//! One reconcile: resolve the distribution (digest-pinned image + its base config), generate the
//! config, check the referenced Secrets, then create the hash-named immutable ConfigMap and apply
//! the Deployment **once** with image, config volume, env vars and hashes together. When nothing
//! changed no write is made (every object carries the hash of what was applied). When anything
//! fails the Deployment is left exactly as it was and the status says why.

mod apply;
pub mod builders;
pub mod operator_config;
mod plan;
mod reconcile;
mod referenced;
pub mod status;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use llama_stack_resolver::{Resolver, ResolverOptions};

use crate::api::v1alpha2::LlamaStackDistribution;
use crate::webhook::references::{RefKind, references};
pub use reconcile::reconcile;

/// Reconcile errors (API failures; spec problems are reported in the status instead).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a call.
    #[error("{action}: {source}")]
    Api {
        /// What was attempted.
        action: String,
        /// Cause.
        source: kube::Error,
    },
    /// A builder produced an invalid object (a bug).
    #[error("cannot build {what}: {source}")]
    Build {
        /// Object.
        what: &'static str,
        /// Cause.
        source: serde_json::Error,
    },
}

fn api_err(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let action = action.into();
    move |source| Error::Api { action, source }
}

/// What the reconciler needs.
pub struct Context {
    /// API client.
    pub client: kube::Client,
    /// Distribution resolver (with the operator's catalog, mirrors, caches); replaced when the
    /// operator ConfigMap changes.
    resolver: std::sync::RwLock<Arc<Resolver>>,
    /// Where the operator ConfigMap lives, and the options it is layered on.
    operator_config: Option<(String, ResolverOptions)>,
    /// Publishes Kubernetes Events.
    recorder: Recorder,
    /// Prometheus metrics.
    metrics: Arc<crate::metrics::Metrics>,
    /// Whether the cluster serves OpenShift Routes (checked when the controller starts).
    routes: AtomicBool,
    /// Per object uid: the Deployment generation and settledness at the last ConfigMap prune.
    prunes: Mutex<HashMap<String, (i64, bool)>>,
}

impl Context {
    /// A context with a fixed resolver.
    pub fn new(client: kube::Client, resolver: Arc<Resolver>) -> Self {
        let reporter = Reporter {
            controller: builders::FIELD_MANAGER.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            metrics: Arc::new(crate::metrics::Metrics::new(resolver.stats())),
            recorder: Recorder::new(client.clone(), reporter),
            client,
            resolver: std::sync::RwLock::new(resolver),
            operator_config: None,
            routes: AtomicBool::new(false),
            prunes: Mutex::new(HashMap::new()),
        }
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

    fn needs_prune(&self, uid: &str, state: (i64, bool)) -> bool {
        let prunes = self.prunes.lock().unwrap_or_else(|p| p.into_inner());
        prunes.get(uid) != Some(&state)
    }

    fn pruned(&self, uid: &str, state: (i64, bool)) {
        let mut prunes = self.prunes.lock().unwrap_or_else(|p| p.into_inner());
        prunes.insert(uid.to_owned(), state);
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

    fn replace_resolver(&self, resolver: Resolver) {
        let resolver = Arc::new(resolver);
        match self.resolver.write() {
            Ok(mut slot) => *slot = resolver,
            Err(poisoned) => *poisoned.into_inner() = resolver,
        }
    }
}

/// Watches the operator ConfigMap; on every change rebuilds the resolver and asks for a
/// reconcile of every LlamaStackDistribution (a changed image-override rolls image and config
/// together).
async fn follow_operator_config(
    ctx: Arc<Context>,
    namespace: String,
    base: ResolverOptions,
    trigger: tokio::sync::mpsc::Sender<()>,
) {
    use kube::runtime::watcher::Event;
    let embedded = base.catalog.clone();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let config = watcher::Config::default().fields(&format!(
        "metadata.name={}",
        operator_config::OPERATOR_CONFIG_MAP
    ));
    let mut events = std::pin::pin!(watcher::watcher(api, config));
    let mut last: Option<std::collections::BTreeMap<String, String>> = None;
    while let Some(event) = events.next().await {
        let data = match event {
            Ok(Event::Apply(cm) | Event::InitApply(cm)) => cm.data.unwrap_or_default(),
            Ok(Event::Delete(_)) => Default::default(),
            Ok(Event::Init | Event::InitDone) => continue,
            Err(error) => {
                tracing::warn!(%error, "watching the operator ConfigMap");
                continue;
            }
        };
        if last.as_ref() == Some(&data) {
            continue;
        }
        let (options, problems) = operator_config::resolver_options(&base, &embedded, &data);
        for problem in &problems {
            tracing::warn!(problem = %problem, "operator ConfigMap");
        }
        match Resolver::new(options) {
            Ok(resolver) => {
                ctx.replace_resolver(resolver);
                last = Some(data);
                let _ = trigger.try_send(());
            }
            Err(error) => {
                tracing::warn!(%error, "operator ConfigMap: keeping the previous settings")
            }
        }
    }
}

fn error_policy(_: Arc<LlamaStackDistribution>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(10))
}

/// Runs the controller until the stream ends (shutdown signal).
pub async fn run(ctx: Arc<Context>) {
    let client = ctx.client.clone();
    let routes = client
        .list_api_group_resources("route.openshift.io/v1")
        .await
        .is_ok_and(|list| list.resources.iter().any(|r| r.name == "routes"));
    ctx.routes.store(routes, Ordering::Relaxed);
    let controller = Controller::new(
        Api::<LlamaStackDistribution>::all(client.clone()),
        watcher::Config::default(),
    );
    let store = controller.store();
    // Referenced Secrets and ConfigMaps are watched by metadata only (no values are read here) and
    // mapped back to the LlamaStackDistributions that refer to them: users label nothing.
    let referrers = move |kind: RefKind, meta: &kube::core::ObjectMeta| {
        let (ns, name) = (
            meta.namespace.clone(),
            meta.name.clone().unwrap_or_default(),
        );
        store
            .state()
            .into_iter()
            .filter(|cr| cr.metadata.namespace == ns)
            .filter(|cr| {
                let object = serde_json::to_value(cr.as_ref()).unwrap_or_default();
                let own_ns = cr.metadata.namespace.clone().unwrap_or_default();
                references(&object).iter().any(|r| {
                    r.kind == kind
                        && r.name == name
                        && r.namespace.as_deref().unwrap_or(&own_ns) == own_ns
                })
            })
            .map(|cr| ObjectRef::from_obj(cr.as_ref()))
            .collect::<Vec<_>>()
    };
    let for_configmaps = referrers.clone();
    let (trigger, triggered) = tokio::sync::mpsc::channel::<()>(1);
    if let Some((namespace, base)) = ctx.operator_config.clone() {
        tokio::spawn(follow_operator_config(
            ctx.clone(),
            namespace,
            base,
            trigger,
        ));
    }
    // Owned objects are watched by metadata only, and only those the operator labelled: the
    // mapping needs nothing else, and nobody's ConfigMap data is cached.
    let managed = watcher::Config::default().labels(&format!(
        "app.kubernetes.io/managed-by={}",
        builders::FIELD_MANAGER
    ));
    let reconcile_all = futures_util::stream::unfold(triggered, |mut rx| async move {
        rx.recv().await.map(|()| ((), rx))
    });
    controller
        .reconcile_all_on(reconcile_all)
        .owns(
            Api::<PartialObjectMeta<Deployment>>::all(client.clone()),
            managed.clone(),
        )
        .owns(
            Api::<PartialObjectMeta<ConfigMap>>::all(client.clone()),
            managed.clone(),
        )
        .owns(
            Api::<PartialObjectMeta<Service>>::all(client.clone()),
            managed.clone(),
        )
        .owns(
            Api::<PartialObjectMeta<ServiceAccount>>::all(client.clone()),
            managed.clone(),
        )
        .owns(
            Api::<PartialObjectMeta<NetworkPolicy>>::all(client.clone()),
            managed.clone(),
        )
        .owns(
            Api::<PartialObjectMeta<Ingress>>::all(client.clone()),
            managed.clone(),
        )
        .owns(
            Api::<PartialObjectMeta<HorizontalPodAutoscaler>>::all(client.clone()),
            managed.clone(),
        )
        .owns(
            Api::<PartialObjectMeta<PodDisruptionBudget>>::all(client.clone()),
            managed.clone(),
        )
        .watches(
            Api::<PartialObjectMeta<Secret>>::all(client.clone()),
            watcher::Config::default(),
            move |s| referrers(RefKind::Secret, &s.metadata),
        )
        .watches(
            Api::<PartialObjectMeta<ConfigMap>>::all(client),
            watcher::Config::default(),
            move |c| for_configmaps(RefKind::ConfigMap, &c.metadata),
        )
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile error");
            }
        })
        .await;
}
