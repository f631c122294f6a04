//! What wakes a reconcile: the LlamaStackDistributions themselves, the objects they own, the
//! Secrets and ConfigMaps they refer to, their server Pods, and the operator's settings
//! (`settings.rs`), which are read before any of them starts.
//!
//! Every watch is its own stream with its own backoff (half a second, doubling to five seconds),
//! and its errors are counted, logged and absorbed here. kube-runtime's `Controller` would
//! otherwise merge all of them behind one shared backoff, so that after an API server restart
//! each watch's expired resource version paused every other watch for up to a minute in turn.
//! A watch whose resource version expired (410) lists again after its backoff, on its own.

pub(crate) mod discovery;
pub(in crate::controller) mod settings;

use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::PredicateConfig;
use kube::runtime::watcher::{self, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};

use crate::api::object_refs::RefKind;
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::{LlamaStackDistribution, RejectedRevision};
use crate::controller::context::Context;
use crate::controller::error::Error;
use crate::controller::memory;
use crate::controller::memory::named_before::{Named, NamedBefore};
use crate::controller::memory::referrers::{Referrers, Refers};
use crate::controller::reconcile::{reconcile_server, reconcile_stack};
use crate::core::door::OGX_MANAGED_BY;
use crate::metrics::{WatchHealth, WatchId};
use crate::naming::{FIELD_MANAGER, labels};
use crate::watch_backoff::resilient;
use settings::Settings;

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
    // What the cluster serves, read at start (Routes, monitoring, OGXServers), then followed.
    let mut served = discovery::served_apis(&ctx.client).await;
    // The OGXServer API installed (or removed) while the operator runs: the controllers start
    // again on what is served now, in this process, as after a change of leader.
    while let Some(now) = run_serving(ctx.clone(), namespaces, served).await {
        tracing::info!(
            ogx_servers = now.ogx_servers,
            "the OGXServer API changed: the controllers start again to follow it"
        );
        served = now;
    }
}

/// The controllers, on what the cluster serves (`served`), until they end (`None`) or the
/// OGXServer API changes (what is served then).
async fn run_serving(
    ctx: Arc<Context>,
    namespaces: &[String],
    served: memory::discovery::ServedApis,
) -> Option<memory::discovery::ServedApis> {
    ctx.learn(&served);
    // The watches start again: what the previous ones said must not answer.
    ctx.owned.clear();
    ctx.default_accounts.clear();
    ctx.server_pods.clear();
    // Another replica may have taken objects for a server meanwhile.
    ctx.handed_back.clear();
    ctx.secrets.clear();
    ctx.config_maps.clear();
    let ogx = served.ogx_servers;
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
        let ogx_triggered = ogx.then(|| {
            let (trigger, triggered) = mpsc::channel::<()>(1);
            triggers.push(trigger);
            triggered
        });
        controllers.push(run_scope(ctx.clone(), scope, triggered, ogx_triggered));
    }
    let rediscovered = triggers.clone();
    // Followed for as long as the controllers run, and dropped with them (never detached).
    let follow = async {
        match settings {
            Some(settings) => settings.follow(triggers).await,
            None => std::future::pending().await,
        }
    };
    let mut changed_api = None;
    let rediscover = discovery::follow(&ctx.client, served, ctx.rediscovery, |now| {
        if now.ogx_servers != ogx {
            changed_api = Some(now);
            return std::ops::ControlFlow::Break(());
        }
        served_changed(&ctx, now, &rediscovered);
        std::ops::ControlFlow::Continue(())
    });
    tokio::select! {
        _ = futures_util::future::join_all(controllers) => {}
        () = follow => {}
        () = rediscover => {}
    }
    changed_api
}

/// What the cluster serves changed (`now`): the stacks are reconciled once on it (monitoring
/// installed after the operator gets its objects).
fn served_changed(
    ctx: &Context,
    now: memory::discovery::ServedApis,
    triggers: &[mpsc::Sender<()>],
) {
    tracing::info!(
        routes = now.routes,
        monitoring = now.monitoring,
        ogx_servers = now.ogx_servers,
        "the APIs the cluster serves changed; reconciling every stack"
    );
    ctx.learn(&now);
    for trigger in triggers {
        // Full: a reconcile of every stack is already due.
        let _ = trigger.try_send(());
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

/// The controllers over one scope (a namespace, or all of them): LlamaStackDistributions, and
/// OGXServers when their CRD is served (`ogx_triggered` is then their settings trigger).
async fn run_scope(
    ctx: Arc<Context>,
    scope: Option<String>,
    triggered: mpsc::Receiver<()>,
    ogx_triggered: Option<mpsc::Receiver<()>>,
) {
    let scope = scope.as_deref();
    let stacks = reflector::store();
    match ogx_triggered {
        None => run_stacks(ctx, scope, triggered, None, stacks).await,
        Some(ogx_triggered) => {
            let stacks_seen = stacks.0.clone();
            let (reader, writer) = reflector::store();
            // The OGXServers' controller and its watches start with the first OGXServer seen:
            // an operator that serves none pays only for one metadata watch.
            let (seen, first) = watch::channel(false);
            tokio::join!(
                run_stacks(ctx.clone(), scope, triggered, Some(seen), stacks),
                async move {
                    let mut first = first;
                    if first.wait_for(|seen| *seen).await.is_ok() {
                        let stores = ((reader, writer), stacks_seen);
                        run_ogx_servers(ctx, scope, ogx_triggered, stores).await;
                    }
                },
            );
        }
    }
}

/// A watch's events as its cache keeps them: each object slimmed
/// ([`Slimmed`](memory::slim_cache::Slimmed)), then stored.
fn cached<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    writer: reflector::store::Writer<K>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: memory::slim_cache::Slimmed + Watched,
{
    events.modify(K::slim).reflect(writer)
}

/// What a change of a stack must touch to start a reconcile (a hash of it, for kube-runtime's
/// predicate filter): its spec (the generation), labels, annotations (the operator reads some),
/// finalizers, deletion, and the revision its status records as rejected (`rejected`). Not the
/// rest of the status: the operator writes it, and the reconcile that wrote it had already acted;
/// its watch event started one more reconcile of every stack, each reading the Deployment again
/// (issue 62). A status edited by someone else is put back on the next timed look. The rejection
/// is the exception: the reconcile that rolls back asks for another within a second, which must
/// find the rejection recorded and hold the revision; its watch event starts it as soon as the
/// cache has it.
fn worth_a_reconcile<K: kube::Resource>(
    stack: &K,
    rejected: Option<&RejectedRevision>,
) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = stack.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .hash(&mut hasher);
    // Which revision is held, not when or why: a rejection recorded again for the same revision
    // (a later reconcile's message, its time) changes nothing a reconcile acts on.
    rejected
        .map(|r| {
            let revision = &r.revision;
            (
                &revision.desired_hash,
                &revision.image,
                &revision.config_map,
                r.generation,
            )
        })
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// [`worth_a_reconcile`] for a LlamaStackDistribution.
fn stack_worth_a_reconcile(stack: &LlamaStackDistribution) -> Option<u64> {
    let rollback = stack.status.as_ref().and_then(|s| s.rollback.as_ref());
    worth_a_reconcile(stack, rollback.and_then(|r| r.rejected.as_deref()))
}

/// [`worth_a_reconcile`] for an OGXServer.
fn server_worth_a_reconcile(server: &OGXServer) -> Option<u64> {
    let rollback = server.status.as_ref().and_then(|s| s.rollback.as_ref());
    worth_a_reconcile(server, rollback.and_then(|r| r.rejected.as_deref()))
}

/// When the settings, or the APIs the cluster serves, change, every stack is reconciled again.
fn on_trigger(triggered: mpsc::Receiver<()>) -> impl Stream<Item = ()> + Send + 'static {
    futures_util::stream::unfold(triggered, |mut rx| async move {
        rx.recv().await.map(|()| ((), rx))
    })
}

/// An OGXServer of the same name takes the stack over, and one of another name may take its
/// objects: the LlamaStackDistributions it names, or named before the change
/// ([`NamedBefore`]), are told at once (`seen` learns that one exists); every one of the
/// namespace (from `stacks`) while or once an annotation cannot be read. Their metadata is kept
/// in the store returned, apart from the OGX controller's cache (which starts later): a stack's
/// stand-down is decided on a synced list from the first reconcile on.
fn stacks_named_by_ogx_servers(
    controller: Controller<LlamaStackDistribution>,
    ctx: &Arc<Context>,
    scope: Option<&str>,
    (seen, stacks): (watch::Sender<bool>, Store<LlamaStackDistribution>),
) -> (
    Controller<LlamaStackDistribution>,
    Store<PartialObjectMeta<OGXServer>>,
) {
    let (servers_seen, servers_writer) = reflector::store();
    let servers = resilient(
        watcher(
            scoped::<PartialObjectMeta<OGXServer>>(&ctx.client, scope),
            watcher::Config::default(),
        ),
        WatchId::of("OGXServer")
            .for_door(FIELD_MANAGER)
            .within(scope),
        ctx.metrics.watches(),
    );
    let servers = cached(servers, servers_writer).touched_objects();
    let known = servers_seen.clone();
    let before = NamedBefore::default();
    let controller = controller.watches_stream(servers, move |server| {
        seen.send_replace(true);
        let ns = server.metadata.namespace.clone().unwrap_or_default();
        let name = server.metadata.name.clone().unwrap_or_default();
        let annotations = server.metadata.annotations.as_ref();
        let now = match crate::core::adoption::requests(&name, annotations) {
            Ok(named) => Named::Stacks(named.storage.into_iter().chain(named.networking).collect()),
            Err(_) => Named::Any,
        };
        // The store has this event already: a server it lacks was deleted.
        let exists = known.get(&ObjectRef::new(&name).within(&ns)).is_some();
        let told = before.tell((&ns, &name), now, exists);
        if before.len() > known.len() + 64 {
            before.forget_gone(|ns, name| known.get(&ObjectRef::new(name).within(ns)).is_some());
        }
        let named: Vec<String> = match told {
            Named::Stacks(named) => named.into_iter().collect(),
            Named::Any => stacks
                .state()
                .iter()
                .filter(|s| s.metadata.namespace.as_deref() == Some(ns.as_str()))
                .filter_map(|s| s.metadata.name.clone())
                .collect(),
        };
        std::iter::once(name)
            .chain(named)
            .filter(|n| !n.is_empty())
            .map(move |n| ObjectRef::<LlamaStackDistribution>::new(&n).within(&ns))
            .collect::<Vec<_>>()
    });
    (controller, servers_seen)
}

/// The LlamaStackDistributions' controller over one scope. With `seen`, OGXServers are served:
/// their metadata is watched and kept, a LlamaStackDistribution with one of the same name (or
/// named by one's adoption annotations) stands down and is looked at again when one appears, and
/// the first one seen starts their controller (`seen`).
async fn run_stacks(
    ctx: Arc<Context>,
    scope: Option<&str>,
    triggered: mpsc::Receiver<()>,
    seen: Option<watch::Sender<bool>>,
    (reader, writer): (
        Store<LlamaStackDistribution>,
        reflector::store::Writer<LlamaStackDistribution>,
    ),
) {
    let client = ctx.client.clone();
    let health = ctx.metrics.watches();
    let stacks = resilient(
        watcher(
            scoped::<LlamaStackDistribution>(&client, scope),
            watcher::Config::default(),
        ),
        WatchId::of("LlamaStackDistribution")
            .for_door(FIELD_MANAGER)
            .within(scope),
        health.clone(),
    );
    let stacks = cached(stacks, writer);
    let referrers = Referrers::default();
    let index = referrers.clone();
    let stacks = stacks
        .inspect(move |event| {
            if let Ok(event) = event {
                index.observe(event);
            }
        })
        .applied_objects()
        .predicate_filter(stack_worth_a_reconcile, PredicateConfig::default());
    let cached = reader.clone();
    let in_namespace = reader.clone();
    ctx.metrics.follow_stacks(Box::new(move || {
        cached
            .state()
            .iter()
            .map(|cr| crate::core::rollout::gauge_state(cr))
            .collect()
    }));
    let config = kube::runtime::controller::Config::default().concurrency(ctx.concurrency);
    let mut controller = Controller::for_stream(stacks, reader)
        .with_config(config)
        .reconcile_all_on(on_trigger(triggered));
    let mut ogx_servers = None;
    if let Some(seen) = seen {
        let (with_servers, servers) =
            stacks_named_by_ogx_servers(controller, &ctx, scope, (seen, in_namespace.clone()));
        controller = with_servers;
        ogx_servers = Some(servers);
    }
    let controller = owned_objects(controller, &ctx, scope, FIELD_MANAGER);
    let controller = default_accounts(controller, &ctx, scope, FIELD_MANAGER, in_namespace);
    let controller = server_pods(controller, &ctx, scope, FIELD_MANAGER);
    let watched = ReferenceWatches {
        ctx: &ctx,
        scope,
        door: FIELD_MANAGER,
        health: &health,
    };
    let controller = referenced_objects(controller, watched, referrers);
    run_until_stopped(
        controller,
        move |cr, ctx| reconcile_stack(cr, ctx, ogx_servers.clone()),
        ctx,
    )
    .await;
}

/// The OGXServers' controller over one scope: the same pipeline, through their door.
async fn run_ogx_servers(
    ctx: Arc<Context>,
    scope: Option<&str>,
    triggered: mpsc::Receiver<()>,
    ((reader, writer), stacks): (
        (Store<OGXServer>, reflector::store::Writer<OGXServer>),
        Store<LlamaStackDistribution>,
    ),
) {
    let client = ctx.client.clone();
    let health = ctx.metrics.watches();
    let referrers = Referrers::default();
    let index = referrers.clone();
    let servers = resilient(
        watcher(
            scoped::<OGXServer>(&client, scope),
            watcher::Config::default(),
        ),
        WatchId::of("OGXServer")
            .for_door(OGX_MANAGED_BY)
            .within(scope),
        health.clone(),
    );
    let servers = cached(servers, writer)
        .inspect(move |event| {
            if let Ok(event) = event {
                index.observe(event);
            }
        })
        .applied_objects()
        .predicate_filter(server_worth_a_reconcile, PredicateConfig::default());
    let config = kube::runtime::controller::Config::default().concurrency(ctx.concurrency);
    let in_namespace = reader.clone();
    let controller = Controller::for_stream(servers, reader)
        .with_config(config)
        .reconcile_all_on(on_trigger(triggered));
    let controller = owned_objects(controller, &ctx, scope, OGX_MANAGED_BY);
    let controller = default_accounts(controller, &ctx, scope, OGX_MANAGED_BY, in_namespace);
    let controller = server_pods(controller, &ctx, scope, OGX_MANAGED_BY);
    let watched = ReferenceWatches {
        ctx: &ctx,
        scope,
        door: OGX_MANAGED_BY,
        health: &health,
    };
    let controller = referenced_objects(controller, watched, referrers);
    run_until_stopped(
        controller,
        move |cr, ctx| reconcile_server(cr, ctx, Some(stacks.clone())),
        ctx,
    )
    .await;
}

/// Runs `controller`, each object through `reconcile`, until the process is told to stop.
async fn run_until_stopped<K, Reconciled>(
    controller: Controller<K>,
    reconcile: impl FnMut(Arc<K>, Arc<Context>) -> Reconciled,
    ctx: Arc<Context>,
) where
    K: Watched,
    Reconciled: std::future::Future<Output = Result<Action, Error>> + Send + 'static,
{
    controller
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile error");
            }
        })
        .await;
}

/// Owned objects, by metadata only and only those the operator labelled for this door
/// (`managed_by`): the mapping to their owner needs nothing else, and nobody's ConfigMap data is
/// cached.
fn owned_objects<K: Watched>(
    controller: Controller<K>,
    ctx: &Arc<Context>,
    scope: Option<&str>,
    managed_by: &'static str,
) -> Controller<K> {
    let managed =
        watcher::Config::default().labels(&format!("{}={managed_by}", labels::MANAGED_BY));
    let owned = Owned {
        ctx,
        scope,
        config: &managed,
        managed_by,
    };
    let controller = owned.kind::<K, Deployment>(controller);
    let controller = owned.kind::<K, ConfigMap>(controller);
    let controller = owned.kind::<K, Service>(controller);
    let controller = owned.kind::<K, ServiceAccount>(controller);
    // Derived Secrets: for the index, so that a prune lists none when none can go (a change to
    // one reconciles its stack, as for the other owned kinds).
    let controller = owned.kind::<K, Secret>(controller);
    let controller = owned.kind::<K, NetworkPolicy>(controller);
    let controller = owned.kind::<K, Ingress>(controller);
    let controller = owned.kind::<K, HorizontalPodAutoscaler>(controller);
    // The Praxis migration's Jobs: a finished or deleted one is the next step's cue.
    let controller = owned.kind::<K, Job>(controller);
    owned.kind::<K, PodDisruptionBudget>(controller)
}

/// What a controller's resource must be (both resources are).
trait Watched:
    kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Watched for K where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// How the owned kinds are watched.
struct Owned<'a> {
    ctx: &'a Arc<Context>,
    scope: Option<&'a str>,
    config: &'a watcher::Config,
    /// The door's `managed-by` label value.
    managed_by: &'static str,
}

impl Owned<'_> {
    /// Adds the watch of one owned kind; what it sees also feeds the owned index
    /// ([`owned_index`](crate::controller::memory::owned_index)), before the controller's queue.
    fn kind<K: Watched, O: Watched>(&self, controller: Controller<K>) -> Controller<K> {
        let api = scoped::<PartialObjectMeta<O>>(&self.ctx.client, self.scope);
        let kind = match O::kind(&()) {
            std::borrow::Cow::Borrowed(kind) => kind,
            std::borrow::Cow::Owned(_) => "object",
        };
        let ctx = self.ctx.clone();
        let scope = self.scope.map(str::to_owned);
        let managed_by = self.managed_by.to_owned();
        let health = self.ctx.metrics.watches();
        let watch = WatchId::of(kind)
            .for_door(self.managed_by)
            .within(self.scope);
        let objects = resilient(watcher(api, self.config.clone()), watch, health)
            .inspect(move |event| {
                if let Ok(event) = event {
                    ctx.owned
                        .observe(kind, scope.as_deref(), &managed_by, event);
                }
            })
            .touched_objects();
        controller.owns_stream(objects)
    }
}

/// The namespaces' `default` ServiceAccounts (a field selector: one object a namespace), whose
/// pull secrets a server Pod without an account of its own pulls with: kept for the reconciles
/// of `door` ([`default_accounts`]); a change of those pull secrets after the first list
/// (an event, or a new list after the watch was away) reconciles the namespace's stacks
/// (`stacks`), so a pull secret added to mend a refused pull is used at once.
fn default_accounts<K: Watched>(
    controller: Controller<K>,
    ctx: &Arc<Context>,
    scope: Option<&str>,
    door: &'static str,
    stacks: Store<K>,
) -> Controller<K> {
    use crate::controller::memory::default_accounts::DEFAULT_ACCOUNT;
    let config = watcher::Config::default().fields(&format!("metadata.name={DEFAULT_ACCOUNT}"));
    let index = ctx.clone();
    let scope_name = scope.map(str::to_owned);
    let changed = resilient(
        watcher(scoped::<ServiceAccount>(&ctx.client, scope), config),
        WatchId::of("ServiceAccount default")
            .for_door(door)
            .within(scope),
        ctx.metrics.watches(),
    )
    .filter_map(move |event| {
        let namespaces = match event {
            Ok(event) => index
                .default_accounts
                .observe(scope_name.as_deref(), door, &event),
            Err(_) => Vec::new(),
        };
        let stacks: Vec<ObjectRef<K>> = if namespaces.is_empty() {
            Vec::new()
        } else {
            stacks
                .state_filter(|s| {
                    s.meta()
                        .namespace
                        .as_ref()
                        .is_some_and(|ns| namespaces.contains(ns))
                })
                .iter()
                .map(|s| ObjectRef::from_obj(&**s))
                .collect()
        };
        std::future::ready((!stacks.is_empty()).then(|| futures_util::stream::iter(stacks)))
    })
    .flatten();
    controller.reconcile_on(changed)
}

/// The server Pods of either door (labelled from the template, `managed-by` and `instance`), by
/// metadata: a change of one wakes its stack where its Pods matter to its status (a crash loop
/// or an image that cannot be pulled in a rollout gone 10 s without progress, an init container
/// installing external providers, a rollback due on them), so a rollout needs no timed look for
/// what happens inside its Pods ([`crate::core::next_look`]); and what they show feeds the index
/// of which stacks have Pods at all ([`memory::server_pods`]), so a look lists the Pods only of
/// a stack that has some. Elsewhere a Pod's change is the Deployment's too (a replica ready or
/// gone), whose event wakes the stack; waking it for the Pod as well cost a read of the
/// Deployment a stack more at 300 stacks. Both doors' Pods: a stack moved from one API to the
/// other keeps its old revision's Pods until the new one rolls out.
fn server_pods<K: Watched>(
    controller: Controller<K>,
    ctx: &Arc<Context>,
    scope: Option<&str>,
    door: &'static str,
) -> Controller<K> {
    let config = watcher::Config::default().labels(&format!(
        "{} in ({FIELD_MANAGER},{OGX_MANAGED_BY})",
        labels::MANAGED_BY
    ));
    let index = ctx.clone();
    let scope_name = scope.map(str::to_owned);
    let pods = resilient(
        watcher(scoped::<PartialObjectMeta<Pod>>(&ctx.client, scope), config),
        WatchId::of("Pod").for_door(door).within(scope),
        ctx.metrics.watches(),
    )
    .inspect(move |event| {
        if let Ok(event) = event {
            index
                .server_pods
                .observe(scope_name.as_deref(), door, event);
        }
    })
    .touched_objects();
    let memory = ctx.clone();
    controller.watches_stream(pods, move |pod| {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.labels.as_ref()?.get(labels::INSTANCE)?;
        memory
            .server_pods
            .matters(door, ns, name)
            .then(|| ObjectRef::<K>::new(name).within(ns))
    })
}

/// Whose watches of the Secrets and ConfigMaps in scope these are.
struct ReferenceWatches<'a> {
    ctx: &'a Arc<Context>,
    scope: Option<&'a str>,
    /// The door's `managed-by` value: its reconciles read what its watches saw.
    door: &'static str,
    health: &'a Arc<WatchHealth>,
}

impl ReferenceWatches<'_> {
    /// The metadata watch of every `K` in scope; what it sees also feeds `memory`
    /// ([`memory::read_once`]) before the controller's queue.
    fn watch<K>(
        &self,
        memory: fn(&Context) -> &memory::read_once::ReadOnce<K>,
    ) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let kind = match K::kind(&()) {
            std::borrow::Cow::Borrowed(kind) => kind,
            std::borrow::Cow::Owned(_) => "object",
        };
        let ctx = self.ctx.clone();
        let scope = self.scope.map(str::to_owned);
        let door = self.door;
        let api = scoped::<PartialObjectMeta<K>>(&self.ctx.client, self.scope);
        resilient(
            watcher(api, watcher::Config::default()),
            WatchId::of(kind).for_door(door).within(self.scope),
            self.health.clone(),
        )
        .inspect(move |event| {
            if let Ok(event) = event {
                memory(&ctx).observe(scope.as_deref(), door, event);
            }
        })
        .touched_objects()
    }
}

/// ReferenceWatches Secrets and ConfigMaps, by metadata only (no value is read here), mapped back to
/// the stacks that refer to them (`to_ref` names them as the controller's resource): users label
/// nothing.
fn referenced_objects<K: Watched + Refers>(
    controller: Controller<K>,
    watched: ReferenceWatches<'_>,
    referrers: Referrers<K>,
) -> Controller<K> {
    let for_config_maps = referrers.clone();
    let secrets = watched.watch::<Secret>(|ctx| &ctx.secrets);
    // Cluster-wide, a CA bundle in a shared namespace is followed too; a namespaced install sees
    // its own namespaces only (namespaced RBAC), and re-reads on resync.
    let config_maps = watched.watch::<ConfigMap>(|ctx| &ctx.config_maps);
    controller
        .watches_stream(secrets, move |s| referrers.of(RefKind::Secret, &s.metadata))
        .watches_stream(config_maps, move |c| {
            for_config_maps.of(RefKind::ConfigMap, &c.metadata)
        })
}

fn error_policy<K>(_: Arc<K>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(error = %crate::error_chain(error), "reconcile failed");
    Action::requeue(RETRY_AFTER_ERROR)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stack(metadata: serde_json::Value, status: serde_json::Value) -> LlamaStackDistribution {
        serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2",
            "kind": "LlamaStackDistribution", "metadata": metadata,
            "spec": {"distribution": {"name": "starter"}}, "status": status}))
        .unwrap()
    }

    /// Every cache the watches fill keeps its objects slimmed: without their field managers,
    /// whatever the watch delivered.
    #[tokio::test]
    async fn every_cache_keeps_what_its_watch_delivers_slimmed() {
        async fn kept<K: memory::slim_cache::Slimmed + Watched>(object: serde_json::Value) -> K {
            let object: K = serde_json::from_value(object).unwrap();
            let (reader, writer) = reflector::store();
            let events = futures_util::stream::iter([Ok(watcher::Event::Apply(object))]);
            cached(events, writer).for_each(|_| async {}).await;
            let kept = reader.get(&ObjectRef::new("s").within("ns")).unwrap();
            K::clone(&kept)
        }
        let metadata = json!({"name": "s", "namespace": "ns", "managedFields": [{"manager": "m",
            "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]});
        let object = |api_version: &str, kind: &str| {
            json!({"apiVersion": api_version, "kind": kind, "metadata": metadata,
                "spec": {"distribution": {"name": "starter"}}})
        };
        let stack: LlamaStackDistribution =
            kept(object("llamastack.io/v1alpha2", "LlamaStackDistribution")).await;
        assert_eq!(stack.metadata.managed_fields, None);
        let server: OGXServer = kept(object("ogx.io/v1beta1", "OGXServer")).await;
        assert_eq!(server.metadata.managed_fields, None);
        let meta: PartialObjectMeta<OGXServer> = kept(object("ogx.io/v1beta1", "OGXServer")).await;
        assert_eq!(meta.metadata.managed_fields, None);
        assert_eq!(meta.metadata.name.as_deref(), Some("s"));
    }

    /// The operator's own status writes start no reconcile; a change of the spec, labels or
    /// annotations, or a rejection recorded by a rollback, does.
    #[test]
    fn only_what_a_reconcile_acts_on_starts_one() {
        let meta = json!({"name": "s", "generation": 1, "labels": {"team": "a"}});
        let base = stack_worth_a_reconcile(&stack(meta.clone(), json!({"phase": "Initializing"})));
        let status_only = stack(
            meta.clone(),
            json!({"phase": "Ready", "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-11-29T00:00:00Z", "reason": "Ready", "message": ""}],
                "rollback": {"lastReady": {"desiredHash": "h1", "image": "i"}}}),
        );
        assert_eq!(
            stack_worth_a_reconcile(&status_only),
            base,
            "a status write"
        );
        let rejected = stack(
            meta,
            json!({"rollback": {"rejected": {"desiredHash": "h2", "image": "i", "generation": 1,
                "reason": "ServerCrashLooping", "message": "exit 1"}}}),
        );
        assert_ne!(
            stack_worth_a_reconcile(&rejected),
            base,
            "a rejection recorded"
        );
        let recorded_again = stack(
            json!({"name": "s", "generation": 1, "labels": {"team": "a"}}),
            json!({"rollback": {"rejected": {"desiredHash": "h2", "image": "i", "generation": 1,
                "reason": "RolloutStalled", "message": "exit 1, then again",
                "rejectedAt": "2026-11-29T00:05:00Z"}}}),
        );
        assert_eq!(
            stack_worth_a_reconcile(&recorded_again),
            stack_worth_a_reconcile(&rejected),
            "the same revision's rejection written again, with another time and message"
        );
        for other in [
            json!({"desiredHash": "h3", "image": "i", "generation": 1, "reason": "r", "message": "m"}),
            json!({"desiredHash": "h2", "image": "j", "generation": 1, "reason": "r", "message": "m"}),
            json!({"desiredHash": "h2", "image": "i", "generation": 2, "reason": "r", "message": "m"}),
        ] {
            let other = stack(
                json!({"name": "s", "generation": 1, "labels": {"team": "a"}}),
                json!({"rollback": {"rejected": other}}),
            );
            assert_ne!(
                stack_worth_a_reconcile(&other),
                stack_worth_a_reconcile(&rejected),
                "another revision rejected"
            );
        }
        for changed in [
            json!({"name": "s", "generation": 2, "labels": {"team": "a"}}),
            json!({"name": "s", "generation": 1, "labels": {"team": "b"}}),
            json!({"name": "s", "generation": 1, "labels": {"team": "a"},
                "annotations": {"llamastack.io/repin": "now"}}),
            json!({"name": "s", "generation": 1, "labels": {"team": "a"},
                "deletionTimestamp": "2026-11-29T00:00:00Z"}),
        ] {
            let changed = stack(changed.clone(), json!({"phase": "Initializing"}));
            assert_ne!(
                stack_worth_a_reconcile(&changed),
                base,
                "{:?}",
                changed.metadata
            );
        }
    }
}
