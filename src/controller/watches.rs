//! What wakes a reconcile: the LlamaStackDistributions themselves, the objects they own, the
//! Secrets and ConfigMaps they refer to, their server Pods, and the operator's settings
//! (`settings.rs`), which are read before any of them starts.
//!
//! Every watch is its own stream with its own backoff (half a second, doubling to five seconds),
//! and its errors are counted, logged and absorbed here. kube-runtime's `Controller` would
//! otherwise merge all of them behind one shared backoff, so that after an API server restart
//! each watch's expired resource version paused every other watch for up to a minute in turn.
//! A watch whose resource version expired (410) lists again after its backoff, on its own.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher::{self, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::context::Context;
use super::error::Error;
use super::reconcile;
use super::referrers::Referrers;
use super::settings::Settings;
use crate::api::object_refs::RefKind;
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::metrics::WatchHealth;
use crate::naming::{FIELD_MANAGER, labels};
use crate::watch_backoff::resilient;

/// A failed reconcile is retried after this long (watch events usually come first).
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(10);
/// Runs the controller over every namespace until a shutdown signal.
pub async fn run(ctx: Arc<Context>) {
    run_in(ctx, &[]).await;
}

/// Runs the controller over `namespaces` only (every namespace when empty) until a shutdown
/// signal, or until the future is dropped (a lost leadership). Each namespace gets its own
/// namespaced watches, so namespaced RBAC suffices.
pub async fn run_in(ctx: Arc<Context>, namespaces: &[String]) {
    // However this ends, the stopped watches no longer count for the operator's health.
    let _forget = ForgetWatches(ctx.metrics.watches());
    let routes = ctx
        .client
        .list_api_group_resources("route.openshift.io/v1")
        .await
        .is_ok_and(|list| list.resources.iter().any(|r| r.name == "routes"));
    ctx.set_routes_available(routes);
    let scopes: Vec<Option<String>> = if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    };
    // The operator's settings first: no stack is reconciled on settings not yet read.
    let settings = match ctx.operator_config.clone() {
        Some((namespace, base)) => Some(Settings::read(ctx.clone(), namespace, base).await),
        None => None,
    };
    let mut triggers = Vec::new();
    let mut controllers = Vec::new();
    for scope in scopes {
        let (trigger, triggered) = mpsc::channel::<()>(1);
        triggers.push(trigger);
        controllers.push(run_scope(ctx.clone(), scope, triggered));
    }
    // Followed for as long as the controllers run, and dropped with them (never detached).
    let follow = async {
        match settings {
            Some(settings) => settings.follow(triggers).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = futures_util::future::join_all(controllers) => {}
        () = follow => {}
    }
}

/// Clears the watch health when the controller stops.
struct ForgetWatches(Arc<WatchHealth>);

impl Drop for ForgetWatches {
    fn drop(&mut self) {
        self.0.clear();
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

/// The objects of one metadata-only watch, for the controller.
fn metadata_objects<K>(
    api: Api<PartialObjectMeta<K>>,
    config: watcher::Config,
    health: &Arc<WatchHealth>,
) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let kind = match K::kind(&()) {
        std::borrow::Cow::Borrowed(kind) => kind,
        std::borrow::Cow::Owned(_) => "object",
    };
    resilient(watcher(api, config), kind, health.clone()).touched_objects()
}

/// One controller over one scope (a namespace, or all of them).
async fn run_scope(ctx: Arc<Context>, scope: Option<String>, triggered: mpsc::Receiver<()>) {
    let client = ctx.client.clone();
    let scope = scope.as_deref();
    let health = ctx.metrics.watches();
    let (reader, writer) = reflector::store();
    let stacks = resilient(
        watcher(
            scoped::<LlamaStackDistribution>(&client, scope),
            watcher::Config::default(),
        ),
        "LlamaStackDistribution",
        health.clone(),
    )
    .modify(super::slim_cache::slim)
    .reflect(writer);
    let referrers = Referrers::default();
    let index = referrers.clone();
    let stacks = stacks
        .inspect(move |event| {
            if let Ok(event) = event {
                index.observe(event);
            }
        })
        .applied_objects();
    let cached = reader.clone();
    ctx.metrics.follow_stacks(Box::new(move || {
        cached
            .state()
            .iter()
            .map(|cr| super::rollout::gauge_state(cr))
            .collect()
    }));
    let reconcile_all = futures_util::stream::unfold(triggered, |mut rx| async move {
        rx.recv().await.map(|()| ((), rx))
    });
    let config = kube::runtime::controller::Config::default().concurrency(ctx.concurrency);
    let controller = Controller::for_stream(stacks, reader)
        .with_config(config)
        .reconcile_all_on(reconcile_all);
    let controller = owned_objects(controller, &client, scope, &health);
    let controller = server_pods(controller, &client, scope, &health);
    referenced_objects(controller, &client, scope, &health, referrers)
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile error");
            }
        })
        .await;
}

/// Owned objects, by metadata only and only those the operator labelled: the mapping to their
/// owner needs nothing else, and nobody's ConfigMap data is cached.
fn owned_objects(
    controller: Controller<LlamaStackDistribution>,
    client: &kube::Client,
    scope: Option<&str>,
    health: &Arc<WatchHealth>,
) -> Controller<LlamaStackDistribution> {
    let managed =
        watcher::Config::default().labels(&format!("{}={}", labels::MANAGED_BY, FIELD_MANAGER));
    let owned = Owned {
        client,
        scope,
        config: &managed,
        health,
    };
    let controller = owned.kind::<Deployment>(controller);
    let controller = owned.kind::<ConfigMap>(controller);
    let controller = owned.kind::<Service>(controller);
    let controller = owned.kind::<ServiceAccount>(controller);
    let controller = owned.kind::<NetworkPolicy>(controller);
    let controller = owned.kind::<Ingress>(controller);
    let controller = owned.kind::<HorizontalPodAutoscaler>(controller);
    owned.kind::<PodDisruptionBudget>(controller)
}

/// How the owned kinds are watched.
struct Owned<'a> {
    client: &'a kube::Client,
    scope: Option<&'a str>,
    config: &'a watcher::Config,
    health: &'a Arc<WatchHealth>,
}

impl Owned<'_> {
    /// Adds the watch of one owned kind.
    fn kind<K>(
        &self,
        controller: Controller<LlamaStackDistribution>,
    ) -> Controller<LlamaStackDistribution>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug
            + Send
            + 'static,
    {
        let api = scoped::<PartialObjectMeta<K>>(self.client, self.scope);
        controller.owns_stream(metadata_objects(api, self.config.clone(), self.health))
    }
}

/// Server Pods that install external providers (labelled from the template): their init
/// containers are the install steps the status reports.
fn server_pods(
    controller: Controller<LlamaStackDistribution>,
    client: &kube::Client,
    scope: Option<&str>,
    health: &Arc<WatchHealth>,
) -> Controller<LlamaStackDistribution> {
    let config = watcher::Config::default().labels(&format!("{}=true", labels::EXTERNAL_PROVIDERS));
    controller.watches_stream(
        metadata_objects(
            scoped::<PartialObjectMeta<Pod>>(client, scope),
            config,
            health,
        ),
        |pod| {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            pod.metadata
                .labels
                .as_ref()?
                .get(labels::INSTANCE)
                .map(|name| ObjectRef::<LlamaStackDistribution>::new(name).within(&ns))
        },
    )
}

/// Referenced Secrets and ConfigMaps, by metadata only (no value is read here), mapped back to
/// the LlamaStackDistributions that refer to them: users label nothing.
fn referenced_objects(
    controller: Controller<LlamaStackDistribution>,
    client: &kube::Client,
    scope: Option<&str>,
    health: &Arc<WatchHealth>,
    referrers: Referrers,
) -> Controller<LlamaStackDistribution> {
    let for_config_maps = referrers.clone();
    let secrets = metadata_objects(
        scoped::<PartialObjectMeta<Secret>>(client, scope),
        watcher::Config::default(),
        health,
    );
    // Cluster-wide, a CA bundle in a shared namespace is followed too; a namespaced install sees
    // its own namespaces only (namespaced RBAC), and re-reads on resync.
    let config_maps = metadata_objects(
        scoped::<PartialObjectMeta<ConfigMap>>(client, scope),
        watcher::Config::default(),
        health,
    );
    controller
        .watches_stream(secrets, move |s| referrers.of(RefKind::Secret, &s.metadata))
        .watches_stream(config_maps, move |c| {
            for_config_maps.of(RefKind::ConfigMap, &c.metadata)
        })
}

fn error_policy(_: Arc<LlamaStackDistribution>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(error = %crate::error_chain(error), "reconcile failed");
    Action::requeue(RETRY_AFTER_ERROR)
}
