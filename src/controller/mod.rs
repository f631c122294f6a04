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
pub mod external_status;
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
use kube::runtime::WatchStreamExt;
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
    /// The operator's own image, whose binary runs the external-provider steps in the Pod.
    operator_image: Option<String>,
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
            operator_image: None,
        }
    }

    /// Sets the operator's own image (needed for external providers).
    pub fn with_operator_image(mut self, image: Option<String>) -> Self {
        self.operator_image = image.filter(|i| !i.is_empty());
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
    triggers: Vec<tokio::sync::mpsc::Sender<()>>,
) {
    use kube::runtime::watcher::Event;
    let embedded = base.catalog.clone();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let config = watcher::Config::default().fields(&format!(
        "metadata.name={}",
        operator_config::OPERATOR_CONFIG_MAP
    ));
    // With backoff: while the API server is unreachable the watch would otherwise retry in a
    // tight loop, burning a core and never yielding to the runtime.
    let mut events = std::pin::pin!(watcher::watcher(api, config).default_backoff());
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
                for trigger in &triggers {
                    let _ = trigger.try_send(());
                }
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

/// Runs the controller over every namespace until a shutdown signal.
pub async fn run(ctx: Arc<Context>) {
    run_in(ctx, &[]).await;
}

/// Runs the controller over `namespaces` only (every namespace when empty) until a shutdown
/// signal. Each namespace gets its own namespaced watches, so namespaced RBAC suffices.
pub async fn run_in(ctx: Arc<Context>, namespaces: &[String]) {
    let routes = ctx
        .client
        .list_api_group_resources("route.openshift.io/v1")
        .await
        .is_ok_and(|list| list.resources.iter().any(|r| r.name == "routes"));
    ctx.routes.store(routes, Ordering::Relaxed);
    let scopes: Vec<Option<String>> = if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    };
    let mut triggers = Vec::new();
    let mut controllers = Vec::new();
    for scope in scopes {
        let (trigger, triggered) = tokio::sync::mpsc::channel::<()>(1);
        triggers.push(trigger);
        controllers.push(run_scope(ctx.clone(), scope, triggered));
    }
    // Followed for as long as the controllers run, and dropped with them (never detached).
    let follow = async {
        match ctx.operator_config.clone() {
            Some((namespace, base)) => {
                follow_operator_config(ctx.clone(), namespace, base, triggers).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = futures_util::future::join_all(controllers) => {}
        () = follow => {}
    }
}

/// `Api` over one namespace, or all.
fn scoped<K>(client: &kube::Client, scope: Option<&str>) -> Api<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match scope {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

async fn run_scope(
    ctx: Arc<Context>,
    scope: Option<String>,
    triggered: tokio::sync::mpsc::Receiver<()>,
) {
    let client = ctx.client.clone();
    let scope = scope.as_deref();
    let controller = Controller::new(
        scoped::<LlamaStackDistribution>(&client, scope),
        watcher::Config::default(),
    );
    let store = controller.store();
    // Referenced Secrets and ConfigMaps are watched by metadata only (no values are read here) and
    // mapped back to the LlamaStackDistributions that refer to them: users label nothing. A
    // reference may name another namespace (a shared CA bundle).
    let referrers = move |kind: RefKind, meta: &kube::core::ObjectMeta| {
        let (ns, name) = (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        );
        store
            .state()
            .into_iter()
            .filter(|cr| {
                let object = serde_json::to_value(cr.as_ref()).unwrap_or_default();
                let own_ns = cr.metadata.namespace.clone().unwrap_or_default();
                references(&object).iter().any(|r| {
                    r.kind == kind
                        && r.name == name
                        && r.namespace.as_deref().unwrap_or(&own_ns) == ns
                })
            })
            .map(|cr| ObjectRef::from_obj(cr.as_ref()))
            .collect::<Vec<_>>()
    };
    let for_configmaps = referrers.clone();
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
            scoped::<PartialObjectMeta<Deployment>>(&client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<ConfigMap>>(&client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<Service>>(&client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<ServiceAccount>>(&client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<NetworkPolicy>>(&client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<Ingress>>(&client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<HorizontalPodAutoscaler>>(&client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<PodDisruptionBudget>>(&client, scope),
            managed.clone(),
        )
        // Server Pods (labelled from the template): their init containers are the external
        // providers' install steps, reported in the status.
        .watches(
            scoped::<PartialObjectMeta<k8s_openapi::api::core::v1::Pod>>(&client, scope),
            watcher::Config::default().labels(&format!("{}=true", builders::external::POD_LABEL)),
            |pod| {
                let labels = pod.metadata.labels.clone().unwrap_or_default();
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                labels
                    .get("app.kubernetes.io/instance")
                    .map(|name| ObjectRef::<LlamaStackDistribution>::new(name).within(&ns))
            },
        )
        .watches(
            scoped::<PartialObjectMeta<Secret>>(&client, scope),
            watcher::Config::default(),
            move |s| referrers(RefKind::Secret, &s.metadata),
        )
        .watches(
            // Cluster-wide, a CA bundle in a shared namespace is followed too; a namespaced
            // install sees its own namespaces only (namespaced RBAC), and re-reads on resync.
            scoped::<PartialObjectMeta<ConfigMap>>(&client, scope),
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
