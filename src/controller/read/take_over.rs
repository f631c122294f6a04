//! The reads of taking over another stack's objects (the decisions are
//! [`crate::core::adoption`]'s): only for an `OGXServer` whose annotations ask for it, or that took a
//! volume before.
//!
//! Reading, choosing and writing are apart: [`survey()`] reads into one value before the server's
//! own decision ([`Seen`]) and the core says what would be written ([`survey::survey`]); `decide`
//! keeps the writes that take something only when the server will run
//! ([`crate::core::take_over::decided`]); the act step makes those kept
//! (its own `take_over` module), first of the apply. A server that cannot run (a missing
//! Secret, an image that does not resolve, ...) takes nothing, so the old stack keeps serving.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ListParams};

use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::controller::kinds::NamespacedKind;
use crate::controller::memory::handed_back::Holders;
use crate::core::adoption::{
    ADOPT_STORAGE, ADOPTED_FROM, Requests, SCALED_DOWN_BY, SCALED_DOWN_FOR, requests,
};
use crate::core::builders;
use crate::core::door::Door;
use crate::core::stack::Stack;
use crate::core::take_over::seen::{
    Held, NetworkingSource, OldDeployment, PodSeen, Seen, StorageSource, mounted_by,
};
use crate::core::take_over::survey::{self, Server, may_hand_back, no_longer_asked};
use crate::core::take_over::{Kind, Survey};
use crate::naming::{ingress_name, labels, pvc_name, service_name};
use crate::ownership::controller_of;

/// Reads what the stack's annotations ask to take over, and says what taking it needs and how
/// far it would get ([`survey::survey`], pure); writes nothing.
///
/// `deployment` is the server's own, as read: the claims it mounts are not given back.
pub(in crate::controller) async fn survey(
    stack: &Stack<'_>,
    ctx: &Context,
    deployment: Option<&Deployment>,
) -> Result<Survey, ApiError> {
    let (Door::OgxServer { .. }, Some(owner)) = (stack.door, stack.subject.owner.as_ref()) else {
        return Ok(Survey::default());
    };
    let mut seen = Reader { stack, ctx, owner }.read().await?;
    seen.mounted = deployment.map(mounted_by).unwrap_or_default();
    let selector = builders::pod_selector_labels(stack);
    let server = Server {
        name: stack.name(),
        owner,
        selector: &selector,
        previous: stack.recorded.conditions,
    };
    Ok(survey::survey(&server, &seen, &now()))
}

/// The namespace's Pods, each as far as whether it may write a volume (`claim` names the
/// volume in an error): what a volume changing hands waits on ([`PodSeen::may_write`],
/// [`crate::core::take_over::seen::other_writers`]).
pub(in crate::controller) async fn pods_seen(
    ctx: &Context,
    ns: &str,
    claim: &str,
) -> Result<Vec<PodSeen>, ApiError> {
    Ok(Api::<Pod>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default())
        .await
        .map_err(api_err(format!(
            "listing the Pods that may mount PVC {claim}"
        )))?
        .items
        .into_iter()
        .map(PodSeen::of)
        .collect())
}

struct Reader<'a> {
    stack: &'a Stack<'a>,
    ctx: &'a Context,
    owner: &'a OwnerReference,
}

impl Reader<'_> {
    fn api<K: NamespacedKind>(&self) -> Api<K> {
        Api::namespaced(self.ctx.client.clone(), self.stack.namespace())
    }

    /// Every read the take-over needs, and only those its annotations make needed.
    async fn read(&self) -> Result<Seen, ApiError> {
        let annotations = self.stack.annotations;
        let requests = requests(self.stack.name(), annotations);
        let has_storage = self.stack.storage.is_some();
        let mut seen = Seen {
            asks_storage: annotations.is_some_and(|a| a.contains_key(ADOPT_STORAGE)),
            has_storage,
            ..Seen::default()
        };
        let named = requests.as_ref().ok();
        match named.and_then(|r| r.storage.as_deref()) {
            Some(source) if has_storage => seen.storage = Some(self.storage_source(source).await?),
            Some(_) => {}
            None if has_storage => seen.claims_taken = self.claims_taken().await?,
            None => {}
        }
        if let Some(source) = named.and_then(|r| r.networking.as_deref()) {
            seen.networking = Some(self.networking_source(source).await?);
        }
        let asks = named.is_some_and(|r| r.networking.is_some() || r.storage.is_some());
        seen.held = self.held(asks).await?;
        seen.live_sources = self.live_sources(&seen.held, named).await?;
        seen.live_servers = self.live_servers(&seen.held).await?;
        // The claims that may go back wait on the Pods that may still write them.
        let giving_back: Vec<&str> = seen
            .held
            .iter()
            .filter(|h| h.kind == Kind::Claim)
            .filter(|h| {
                named
                    .and_then(|r| no_longer_asked(&h.meta, self.stack.name(), r, has_storage))
                    .is_some_and(|source| seen.live_sources.contains_key(source))
            })
            .filter_map(|h| h.meta.name.as_deref())
            .collect();
        if !giving_back.is_empty() {
            let claims = giving_back.join(", ");
            seen.pods = pods_seen(self.ctx, self.stack.namespace(), &claims).await?;
        }
        seen.requests = requests;
        Ok(seen)
    }

    /// The named stack's claim, its Deployment, and the namespace's Pods (one may still write
    /// the volume; read only while the claim is free to take).
    async fn storage_source(&self, source: &str) -> Result<StorageSource, ApiError> {
        let claim_name = pvc_name(source);
        let claim = self
            .api::<PersistentVolumeClaim>()
            .get_metadata_opt(&claim_name)
            .await
            .map_err(api_err(format!("reading PVC {claim_name}")))?
            .map(|c| c.metadata);
        let free = claim
            .as_ref()
            .is_some_and(|c| !c.labels.iter().flatten().any(|(k, _)| k == ADOPTED_FROM));
        if !free {
            return Ok(StorageSource {
                claim,
                ..StorageSource::default()
            });
        }
        let deployment = self
            .api::<Deployment>()
            .get_opt(source)
            .await
            .map_err(api_err(format!("reading Deployment {source}")))?
            .map(|d| OldDeployment {
                replicas: d.spec.as_ref().and_then(|s| s.replicas),
                meta: d.metadata,
            });
        let pods = pods_seen(self.ctx, self.stack.namespace(), &claim_name).await?;
        Ok(StorageSource {
            claim,
            deployment,
            pods,
        })
    }

    /// The claims labelled as taken by this server.
    async fn claims_taken(&self) -> Result<Vec<String>, ApiError> {
        let selector = format!("{ADOPTED_FROM},{}={}", labels::INSTANCE, self.stack.name());
        let found = self
            .api::<PersistentVolumeClaim>()
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(api_err("listing adopted PVCs"))?;
        Ok(found
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect())
    }

    /// The named stack's Service and Ingress.
    async fn networking_source(&self, source: &str) -> Result<NetworkingSource, ApiError> {
        let service_name = service_name(source);
        let service = self
            .api::<Service>()
            .get_opt(&service_name)
            .await
            .map_err(api_err(format!("reading Service {service_name}")))?
            .map(|s| {
                let selector = s.spec.and_then(|s| s.selector).unwrap_or_default();
                (s.metadata, selector)
            });
        let ingress_name = ingress_name(source);
        let ingress = self
            .api::<Ingress>()
            .get_metadata_opt(&ingress_name)
            .await
            .map_err(api_err(format!("reading Ingress {ingress_name}")))?
            .map(|i| i.metadata);
        Ok(NetworkingSource { service, ingress })
    }

    /// The Services, Ingresses and claims of the namespace labelled as taken and the
    /// Deployments labelled as scaled down, unless the server is known to hold none and asks for
    /// none (then nothing is listed: issue 62's reads).
    async fn held(&self, asks: bool) -> Result<Vec<Held>, ApiError> {
        let (memory, ns, uid) = (
            &self.ctx.handed_back,
            self.stack.namespace(),
            &self.owner.uid,
        );
        let seen = std::time::Instant::now();
        if asks {
            memory.may_take(uid, seen);
        } else if memory.holds_nothing(ns, (uid, self.stack.name()), seen) {
            return Ok(Vec::new());
        }
        let ticket = memory.begin_list();
        let mut held = self
            .labelled::<Service>(Kind::Service, ADOPTED_FROM)
            .await?;
        held.extend(
            self.labelled::<Ingress>(Kind::Ingress, ADOPTED_FROM)
                .await?,
        );
        held.extend(
            self.labelled::<PersistentVolumeClaim>(Kind::Claim, ADOPTED_FROM)
                .await?,
        );
        held.extend(
            self.labelled::<Deployment>(Kind::Deployment, SCALED_DOWN_BY)
                .await?,
        );
        if !asks {
            let mut holders = Holders::default();
            for h in &held {
                let labels = h.meta.labels.as_ref();
                match h.kind {
                    Kind::Deployment => holders
                        .uids
                        .extend(labels.and_then(|l| l.get(SCALED_DOWN_BY)).cloned()),
                    Kind::Claim => holders
                        .names
                        .extend(labels.and_then(|l| l.get(labels::INSTANCE)).cloned()),
                    Kind::Service | Kind::Ingress => holders
                        .uids
                        .extend(controller_of(&h.meta).map(|c| c.uid.clone())),
                }
            }
            memory.listed(ns, ticket, holders);
        }
        Ok(held)
    }

    async fn labelled<K: NamespacedKind>(
        &self,
        kind: Kind,
        label: &str,
    ) -> Result<Vec<Held>, ApiError> {
        let found = self
            .api::<K>()
            .list_metadata(&ListParams::default().labels(label))
            .await
            .map_err(api_err("listing adopted objects"))?;
        Ok(found
            .items
            .into_iter()
            .map(|o| Held {
                kind,
                meta: o.metadata,
            })
            .collect())
    }

    /// Of the other servers that scaled a listed Deployment down, the uids of those that still
    /// exist (read by the name they left beside their uid; rare).
    async fn live_servers(&self, held: &[Held]) -> Result<BTreeSet<String>, ApiError> {
        let scalers: BTreeSet<(&str, &str)> = held
            .iter()
            .filter(|h| h.kind == Kind::Deployment)
            .filter_map(|h| {
                let uid = h.meta.labels.as_ref()?.get(SCALED_DOWN_BY)?;
                let name = h.meta.annotations.as_ref()?.get(SCALED_DOWN_FOR)?;
                Some((uid.as_str(), name.as_str()))
            })
            .filter(|(uid, _)| *uid != self.owner.uid)
            .collect();
        let servers: Api<OGXServer> = self.api();
        let mut live = BTreeSet::new();
        for (uid, name) in scalers {
            let found = servers
                .get_metadata_opt(name)
                .await
                .map_err(api_err(format!("reading OGXServer {name}")))?;
            if found.is_some_and(|s| s.metadata.uid.as_deref() == Some(uid)) {
                live.insert(uid.to_owned());
            }
        }
        Ok(live)
    }

    /// Of the stacks the objects this server holds were taken from, those that still exist
    /// (name and uid): read only for what may be handed back (rare), so no read is made on a
    /// quiet look.
    async fn live_sources(
        &self,
        held: &[Held],
        named: Option<&Requests>,
    ) -> Result<BTreeMap<String, String>, ApiError> {
        let (name, uid, has_storage) = (
            self.stack.name(),
            &self.owner.uid,
            self.stack.storage.is_some(),
        );
        let sources: BTreeSet<&str> = held
            .iter()
            .filter_map(|h| match h.kind {
                Kind::Deployment => None,
                Kind::Claim => no_longer_asked(&h.meta, name, named?, has_storage),
                Kind::Service | Kind::Ingress => {
                    let source = h.meta.labels.as_ref()?.get(ADOPTED_FROM)?;
                    may_hand_back(&h.meta, source, uid, named).then_some(source.as_str())
                }
            })
            .collect();
        let stacks: Api<LlamaStackDistribution> = self.api();
        let mut live = BTreeMap::new();
        for source in sources {
            let found = stacks
                .get_metadata_opt(source)
                .await
                .map_err(api_err(format!("reading LlamaStackDistribution {source}")))?;
            let found = found.filter(|s| s.metadata.deletion_timestamp.is_none());
            if let Some(uid) = found.and_then(|s| s.metadata.uid) {
                live.insert(source.to_owned(), uid);
            }
        }
        Ok(live)
    }
}

fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}
