//! What wakes a reconcile: the LlamaStackDistributions themselves, the objects they own, the
//! Secrets and ConfigMaps they refer to, their server Pods, and the operator ConfigMap.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;
use kube::core::{ObjectMeta, PartialObjectMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use llama_stack_resolver::{Resolver, ResolverOptions};
use tokio::sync::mpsc;

use super::builders::{self, labels};
use super::{Context, Error, operator_config, reconcile};
use crate::api::references::{self, RefKind};
use crate::api::v1alpha2::LlamaStackDistribution;

/// A failed reconcile is retried after this long (watch events usually come first).
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(10);

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
    ctx.set_routes_available(routes);
    let scopes: Vec<Option<String>> = if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
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

/// One controller over one scope (a namespace, or all of them).
async fn run_scope(ctx: Arc<Context>, scope: Option<String>, triggered: mpsc::Receiver<()>) {
    let client = ctx.client.clone();
    let scope = scope.as_deref();
    let controller = Controller::new(
        scoped::<LlamaStackDistribution>(&client, scope),
        watcher::Config::default(),
    );
    let referrers = Referrers(controller.store());
    let reconcile_all = futures_util::stream::unfold(triggered, |mut rx| async move {
        rx.recv().await.map(|()| ((), rx))
    });
    let controller = owned_objects(controller.reconcile_all_on(reconcile_all), &client, scope);
    referenced_objects(
        server_pods(controller, &client, scope),
        &client,
        scope,
        referrers,
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

/// Owned objects, by metadata only and only those the operator labelled: the mapping to their
/// owner needs nothing else, and nobody's ConfigMap data is cached.
fn owned_objects(
    controller: Controller<LlamaStackDistribution>,
    client: &kube::Client,
    scope: Option<&str>,
) -> Controller<LlamaStackDistribution> {
    let managed = watcher::Config::default().labels(&format!(
        "{}={}",
        labels::MANAGED_BY,
        builders::FIELD_MANAGER
    ));
    controller
        .owns(
            scoped::<PartialObjectMeta<Deployment>>(client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<ConfigMap>>(client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<Service>>(client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<ServiceAccount>>(client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<NetworkPolicy>>(client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<Ingress>>(client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<HorizontalPodAutoscaler>>(client, scope),
            managed.clone(),
        )
        .owns(
            scoped::<PartialObjectMeta<PodDisruptionBudget>>(client, scope),
            managed,
        )
}

/// Server Pods that install external providers (labelled from the template): their init
/// containers are the install steps the status reports.
fn server_pods(
    controller: Controller<LlamaStackDistribution>,
    client: &kube::Client,
    scope: Option<&str>,
) -> Controller<LlamaStackDistribution> {
    controller.watches(
        scoped::<PartialObjectMeta<Pod>>(client, scope),
        watcher::Config::default().labels(&format!("{}=true", labels::EXTERNAL_PROVIDERS)),
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
    referrers: Referrers,
) -> Controller<LlamaStackDistribution> {
    let for_config_maps = referrers.clone();
    controller
        .watches(
            scoped::<PartialObjectMeta<Secret>>(client, scope),
            watcher::Config::default(),
            move |s| referrers.of(RefKind::Secret, &s.metadata),
        )
        .watches(
            // Cluster-wide, a CA bundle in a shared namespace is followed too; a namespaced
            // install sees its own namespaces only (namespaced RBAC), and re-reads on resync.
            scoped::<PartialObjectMeta<ConfigMap>>(client, scope),
            watcher::Config::default(),
            move |c| for_config_maps.of(RefKind::ConfigMap, &c.metadata),
        )
}

/// Finds the LlamaStackDistributions in the controller's cache that refer to an object.
#[derive(Clone)]
struct Referrers(Store<LlamaStackDistribution>);

impl Referrers {
    /// The resources referring to the `kind` object with `meta`'s name and namespace (a reference
    /// may name another namespace: a shared CA bundle).
    fn of(&self, kind: RefKind, meta: &ObjectMeta) -> Vec<ObjectRef<LlamaStackDistribution>> {
        let ns = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        self.0
            .state()
            .into_iter()
            .filter(|cr| {
                let own_ns = cr.metadata.namespace.as_deref().unwrap_or_default();
                references::of(cr).iter().any(|r| {
                    r.kind == kind
                        && r.name == name
                        && r.namespace.as_deref().unwrap_or(own_ns) == ns
                })
            })
            .map(|cr| ObjectRef::from_obj(cr.as_ref()))
            .collect()
    }
}

fn error_policy(_: Arc<LlamaStackDistribution>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(error = %crate::error_chain(error), "reconcile failed");
    Action::requeue(RETRY_AFTER_ERROR)
}

/// Watches the operator ConfigMap; on every change rebuilds the resolver and asks for a
/// reconcile of every LlamaStackDistribution (a changed image-override rolls image and config
/// together).
async fn follow_operator_config(
    ctx: Arc<Context>,
    namespace: String,
    base: ResolverOptions,
    triggers: Vec<mpsc::Sender<()>>,
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
