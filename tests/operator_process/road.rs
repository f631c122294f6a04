//! The road to `OGXServer` in every order, the second runner (issue 84, item 3): a seeded sample
//! of the user's steps, each sequence in a namespace of its own, all walked side by side on the
//! real API server with the garbage collector, the Deployment controller, quotas and a kwok node,
//! the operators running as processes under the shipped RBAC on OpenShift's owner-reference
//! admission. The first runner (`src/core/take_over/road.rs`) drives the core over a simulated
//! cluster in 2000 sequences and shrinks what fails; this one checks its guesses against the
//! real thing with the same invariants:
//!
//! - after every step (once the namespace is quiet): *data outlives every step* (no claim goes
//!   while a resource that mounted it exists), *an address outlives every step* (the old
//!   Service's uid stays while a resource that made or took it exists), *one writer per volume*
//!   (no two Deployments' Running Pods on one claim);
//! - at the end, with room again (the quota lifted): *the undo* (no server and the old stack
//!   left: it serves on its own claim and address), *progress* (a server whose annotations can
//!   be met runs), *nothing left behind dead* (every Deployment, Service and claim the operators
//!   made has a live owner).
//!
//! The cluster does what the first runner's `ReconcileStack`, `ReconcileServer`, `Settle` and
//! `Gc` simulate. Left to the first runner: the evicted Pod and the blocked server (no kubelet
//! here to evict, nothing to block on), and the operator's restart (the operators are the
//! suite's, shared with its other tests; `the_standby_takes_over_when_the_leader_stops` restarts
//! the leader on its own).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Resource as _, ResourceExt as _};
use libtest_mimic::Failed;
use llama_stack_operator::api::ogx::OGXServer;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

use super::Env;

/// The sequences walked (issue 84: at least 20), each in its own namespace.
const SEQUENCES: usize = 20;
/// The seed they are generated from (every byte of it), the first runner's.
const SEED: u8 = 84;
/// The most steps a sequence has.
const MOST_STEPS: usize = 8;
const OLD: &str = "old";
const STORAGE: &str = "ogx.io/adopt-storage";
const NETWORKING: &str = "ogx.io/adopt-networking";
/// A namespace is quiet once nothing in it changed for this long.
const QUIET: Duration = Duration::from_secs(3);
/// The longest wait for quiet after a step (a step's checks run then anyway).
const QUIET_AT_MOST: Duration = Duration::from_secs(30);
/// How long the end state may take to become live.
const LIVE_WITHIN: Duration = Duration::from_secs(120);

/// What an adoption annotation says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ann {
    /// The old stack's name.
    Old,
    /// A name no stack has.
    Typo,
    /// A value that is no name at all.
    Invalid,
}

impl Ann {
    fn value(self) -> &'static str {
        match self {
            Ann::Old => OLD,
            Ann::Typo => "olld",
            Ann::Invalid => "Not_A_Name",
        }
    }
}

/// One user step (the first runner's, less what only it can do).
#[derive(Clone, Debug)]
enum Step {
    /// Server-side apply of the `OGXServer` (`old`: the move in place; else `new`), made or
    /// updated; ignored while a server of the other name exists.
    ApplyServer {
        same_name: bool,
        storage: bool,
        adopt_storage: Option<Ann>,
        adopt_networking: Option<Ann>,
    },
    /// The server's annotations edited (changed, mistyped or removed).
    Annotate {
        adopt_storage: Option<Ann>,
        adopt_networking: Option<Ann>,
    },
    DeleteServer,
    DeleteStack,
    /// A backup Job whose Pod mounts the old volume and finishes (kwok completes Job Pods).
    FinishedJobPod,
    /// A `ResourceQuota` of one Pod made (`true`) or deleted.
    Quota(bool),
}

fn ann() -> impl Strategy<Value = Option<Ann>> {
    prop_oneof![
        3 => Just(None),
        4 => Just(Some(Ann::Old)),
        1 => Just(Some(Ann::Typo)),
        1 => Just(Some(Ann::Invalid)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (any::<bool>(), any::<bool>(), ann(), ann()).prop_map(
            |(same_name, storage, adopt_storage, adopt_networking)| Step::ApplyServer {
                same_name,
                storage,
                adopt_storage,
                adopt_networking,
            }
        ),
        2 => (ann(), ann()).prop_map(|(adopt_storage, adopt_networking)| Step::Annotate {
            adopt_storage,
            adopt_networking,
        }),
        1 => Just(Step::DeleteServer),
        1 => Just(Step::DeleteStack),
        1 => Just(Step::FinishedJobPod),
        1 => any::<bool>().prop_map(Step::Quota),
    ]
}

/// The sequences, from [`SEED`], then [`rows`]: whether the old stack has a volume, and its
/// steps.
fn sequences() -> Result<Vec<(bool, Vec<Step>)>, Failed> {
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[SEED; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = (
        any::<bool>(),
        proptest::collection::vec(step(), 1..=MOST_STEPS),
    );
    let generated: Result<Vec<_>, Failed> = (0..SEQUENCES)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .map(|tree| tree.current())
                .map_err(|e| Failed::from(e.to_string()))
        })
        .collect();
    Ok(generated?.into_iter().chain(rows()).collect())
}

/// Sequences named for what they reach, walked beside the generated ones (a sample of 20 may
/// not reach them): each an order of events the first runner found and the operator was fixed
/// for.
fn rows() -> Vec<(bool, Vec<Step>)> {
    let new = |storage, adopt_storage| Step::ApplyServer {
        same_name: false,
        storage,
        adopt_storage,
        adopt_networking: None,
    };
    vec![
        // A volume taken, then the server's own volume dropped, the annotation kept: the claim
        // goes back to the old stack, which mounts it again once the annotation is removed.
        (
            true,
            vec![
                new(true, Some(Ann::Old)),
                new(false, Some(Ann::Old)),
                Step::Annotate {
                    adopt_storage: None,
                    adopt_networking: None,
                },
            ],
        ),
    ]
}

/// What one namespace holds at one moment.
struct Snapshot {
    llsd: Option<LlamaStackDistribution>,
    server: Option<OGXServer>,
    deployments: Vec<Deployment>,
    services: Vec<Service>,
    claims: Vec<PersistentVolumeClaim>,
    pods: Vec<Pod>,
}

impl Snapshot {
    async fn of(client: &kube::Client, ns: &str) -> Result<Self, kube::Error> {
        let lp = ListParams::default();
        let llsd = Api::<LlamaStackDistribution>::namespaced(client.clone(), ns)
            .get_opt(OLD)
            .await?;
        let servers = Api::<OGXServer>::namespaced(client.clone(), ns)
            .list(&lp)
            .await?;
        Ok(Self {
            llsd,
            server: servers.items.into_iter().next(),
            deployments: Api::namespaced(client.clone(), ns).list(&lp).await?.items,
            services: Api::namespaced(client.clone(), ns).list(&lp).await?.items,
            claims: Api::namespaced(client.clone(), ns).list(&lp).await?.items,
            pods: Api::namespaced(client.clone(), ns).list(&lp).await?.items,
        })
    }

    /// The uids of the resources that exist (and are not being deleted).
    fn alive(&self) -> BTreeSet<String> {
        let llsd = self.llsd.as_ref().map(|o| o.meta().clone());
        let server = self.server.as_ref().map(|o| o.meta().clone());
        [llsd, server]
            .into_iter()
            .flatten()
            .filter(|m| m.deletion_timestamp.is_none())
            .filter_map(|m| m.uid)
            .collect()
    }

    /// The resource versions of everything, to tell when nothing changes any more.
    fn versions(&self) -> Vec<String> {
        let metas = self
            .llsd
            .iter()
            .map(|o| o.meta())
            .chain(self.server.iter().map(|o| o.meta()))
            .chain(self.deployments.iter().map(|o| o.meta()))
            .chain(self.services.iter().map(|o| o.meta()))
            .chain(self.claims.iter().map(|o| o.meta()))
            .chain(self.pods.iter().map(|o| o.meta()));
        metas
            .map(|m| {
                format!(
                    "{}/{}",
                    m.uid.as_deref().unwrap_or_default(),
                    m.resource_version.as_deref().unwrap_or_default()
                )
            })
            .collect()
    }

    fn deployment(&self, name: &str) -> Option<&Deployment> {
        self.deployments
            .iter()
            .find(|d| d.metadata.name.as_deref() == Some(name))
    }
}

/// The claims a Deployment's Pods mount.
fn mounted(deployment: &Deployment) -> Vec<String> {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone())
        .collect()
}

/// The controller's uid of an object's owners, if one is a stack or a server.
fn controller_uid(meta: &kube::core::ObjectMeta) -> Option<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| {
            o.controller == Some(true)
                && matches!(o.kind.as_str(), "LlamaStackDistribution" | "OGXServer")
        })
        .map(|o| o.uid.clone())
}

/// The Deployment a Pod belongs to (its ReplicaSet's name less the template hash).
fn deployment_of(pod: &Pod) -> Option<String> {
    let hash = pod.labels().get("pod-template-hash")?;
    let replica_set = pod
        .owner_references()
        .iter()
        .find(|o| o.kind == "ReplicaSet")?;
    replica_set
        .name
        .strip_suffix(&format!("-{hash}"))
        .map(str::to_owned)
}

fn available(deployment: Option<&Deployment>) -> bool {
    deployment
        .and_then(|d| d.status.as_ref())
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
        > 0
}

/// The label a stack's or a server's Pods carry with its name, which their Service selects.
const INSTANCE: &str = "app.kubernetes.io/instance";

/// Whether an adoption annotation's value cannot name a stack (not a lowercase DNS label): the
/// operator then holds what it took, and every stack of the namespace stands down.
fn unreadable(value: &str) -> bool {
    !value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Whether a Pod of `instance` is Ready.
fn ready_pod_of(s: &Snapshot, instance: &str) -> bool {
    s.pods.iter().any(|pod| {
        pod.metadata.deletion_timestamp.is_none()
            && pod.labels().get(INSTANCE).map(String::as_str) == Some(instance)
            && pod
                .status
                .as_ref()
                .and_then(|st| st.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// Whether a server holds for a reason of the user's: an annotation that is no name, or a
/// volume asked of a stack that does not exist or refuses.
fn held(server: &OGXServer) -> bool {
    let status = serde_json::to_value(&server.status).unwrap_or_default();
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            (c["type"] == "AdoptionConfigInvalid" && c["status"] == "True")
                || (c["type"] == "StorageAdopted"
                    && matches!(
                        c["reason"].as_str(),
                        Some("AdoptionSourceNotFound" | "AdoptionRefused")
                    ))
        })
}

/// One sequence's walk in its namespace, and what it remembers between steps.
struct Road {
    /// Its place among the sequences (its namespace and volumes are named after it).
    index: usize,
    ns: String,
    storage: bool,
    steps: Vec<Step>,
    /// The server's name while one exists.
    server: Option<String>,
    quota: bool,
    jobs: usize,
    /// Per claim uid: its name, and the resources (uids) whose Deployments mounted it.
    claimed: BTreeMap<String, (String, BTreeSet<String>)>,
    /// The old Service's uid as first made, and the resources that made or took it.
    old_service: String,
    /// Whose Pods the old Service selected when last seen.
    old_service_selects: String,
    service_claimers: BTreeSet<String>,
    /// The old volume's uid as first made.
    old_claim: Option<String>,
    /// What is judged gone for good (its claimers all deleted first, or already reported).
    gone: BTreeSet<String>,
}

impl Road {
    /// Where it failed, for the message: the namespace, and the sequence as the first runner's
    /// rows write it.
    fn says(&self, at: &str, what: &str) -> String {
        format!(
            "namespace {} (old stack with a volume: {}), {at}: {what}\n  steps: {:?}",
            self.ns, self.storage, self.steps
        )
    }

    /// What must hold after every step.
    fn safe(&mut self, s: &Snapshot) -> Result<(), String> {
        let alive = s.alive();
        for deployment in &s.deployments {
            let Some(owner) = controller_uid(&deployment.metadata) else {
                continue;
            };
            for name in mounted(deployment) {
                let claim = s.claims.iter().find(|c| c.name_any() == name);
                if let Some(uid) = claim.and_then(|c| c.metadata.uid.clone()) {
                    self.claimed
                        .entry(uid)
                        .or_insert_with(|| (name.clone(), BTreeSet::new()))
                        .1
                        .insert(owner.clone());
                }
            }
        }
        let old_service = s
            .services
            .iter()
            .find(|svc| svc.metadata.uid.as_deref() == Some(self.old_service.as_str()));
        // Taken by a server, it claims the address too; handed back to the stack, no server
        // does any more.
        if let Some(owner) = old_service.and_then(|svc| controller_uid(&svc.metadata)) {
            let server = s.server.as_ref().and_then(|o| o.metadata.uid.clone());
            if server.as_deref() == Some(owner.as_str()) {
                self.service_claimers.insert(owner);
            } else if s.llsd.as_ref().and_then(|o| o.metadata.uid.as_deref())
                == Some(owner.as_str())
            {
                self.service_claimers.retain(|c| *c == owner);
            }
        }
        // Data outlives every step: a claim whose claimers are all deleted is the user's to lose.
        for (uid, (name, claimers)) in &self.claimed {
            if self.gone.contains(uid) {
                continue;
            }
            let exists = s.claims.iter().any(|c| {
                c.metadata.uid.as_deref() == Some(uid.as_str())
                    && c.metadata.deletion_timestamp.is_none()
            });
            let still: Vec<&String> = claimers.intersection(&alive).collect();
            if exists && !still.is_empty() {
                continue;
            }
            self.gone.insert(uid.clone());
            if !exists && !still.is_empty() {
                return Err(format!(
                    "claim {name} ({uid}) is gone while {still:?} claim it"
                ));
            }
        }
        // An address outlives every step while a resource that made or took it exists.
        if !self.gone.contains(&self.old_service) {
            let still: Vec<&String> = self.service_claimers.intersection(&alive).collect();
            let exists = old_service.is_some_and(|svc| svc.metadata.deletion_timestamp.is_none());
            if !exists || still.is_empty() {
                self.gone.insert(self.old_service.clone());
                if !exists && !still.is_empty() {
                    return Err(format!(
                        "the old Service's address is gone while {still:?} claim it"
                    ));
                }
            }
        }
        // An address that serves keeps serving: the old Service is pointed at a server only once
        // that server has a Ready Pod.
        let selects = old_service
            .and_then(|svc| svc.spec.as_ref())
            .and_then(|spec| spec.selector.as_ref())
            .and_then(|sel| sel.get(INSTANCE))
            .cloned();
        if let Some(now) = selects {
            if now != self.old_service_selects && now != OLD && !ready_pod_of(s, &now) {
                return Err(format!(
                    "the old Service was pointed at {now}, which has no Ready Pod"
                ));
            }
            self.old_service_selects = now;
        }
        // One writer per volume.
        let mut writers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for pod in &s.pods {
            let running = pod.status.as_ref().and_then(|st| st.phase.as_deref()) == Some("Running");
            if !running || pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Some(deployment) = deployment_of(pod) else {
                continue;
            };
            let claims = pod
                .spec
                .as_ref()
                .and_then(|p| p.volumes.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|v| v.persistent_volume_claim.as_ref());
            for claim in claims {
                writers
                    .entry(claim.claim_name.clone())
                    .or_default()
                    .insert(deployment.clone());
            }
        }
        if let Some((claim, by)) = writers.iter().find(|(_, by)| by.len() > 1) {
            return Err(format!("claim {claim} written by {by:?} at once"));
        }
        Ok(())
    }

    /// What must hold once the operators and the cluster have settled, with room for Pods.
    fn live(&self, s: &Snapshot) -> Result<(), String> {
        let alive = s.alive();
        // The undo: no server, the old stack left: it serves on its own volume and address.
        if s.server.is_none()
            && let Some(llsd) = &s.llsd
            && llsd.metadata.deletion_timestamp.is_none()
        {
            let old = s.deployment(OLD);
            if !available(old) {
                return Err("the old stack is back alone, and does not serve".to_owned());
            }
            if let Some(original) = &self.old_claim {
                let mounted = old.map(mounted).unwrap_or_default();
                let on_its_own = mounted.iter().any(|name| {
                    s.claims.iter().any(|c| {
                        c.name_any() == *name && c.metadata.uid.as_deref() == Some(original)
                    })
                });
                if !on_its_own {
                    return Err(format!(
                        "the old stack is back alone on {mounted:?}, not on its own volume"
                    ));
                }
            }
            let service = s
                .services
                .iter()
                .find(|svc| svc.metadata.uid.as_deref() == Some(self.old_service.as_str()));
            let selects_old = service
                .and_then(|svc| svc.spec.as_ref())
                .and_then(|spec| spec.selector.as_ref())
                .and_then(|sel| sel.get(INSTANCE))
                .is_some_and(|instance| instance == OLD);
            if !selects_old {
                return Err("the old stack is back alone without its own address".to_owned());
            }
        }
        // Progress: a stack no server names, whose volume no server took, serves.
        if let (Some(server), Some(llsd)) = (&s.server, &s.llsd)
            && llsd.metadata.deletion_timestamp.is_none()
            && server.name_any() != OLD
        {
            let annotations = server.annotations();
            let names_it = [STORAGE, NETWORKING]
                .iter()
                .filter_map(|key| annotations.get(*key))
                .any(|v| v == OLD || unreadable(v));
            let volume_taken = s.claims.iter().any(|c| {
                c.name_any() == format!("{OLD}-pvc")
                    && c.labels().contains_key("ogx.io/adopted-from")
            });
            if !names_it && !volume_taken && !available(s.deployment(OLD)) {
                let old = s.deployment(OLD);
                let status = serde_json::to_value(&llsd.status).unwrap_or_default();
                return Err(format!(
                    "the old stack, named by no server, does not serve: its Deployment wants {:?} replicas ({:?} available); its conditions {}",
                    old.and_then(|d| d.spec.as_ref()).and_then(|d| d.replicas),
                    old.and_then(|d| d.status.as_ref())
                        .and_then(|s| s.available_replicas),
                    status["conditions"]
                ));
            }
        }
        // Progress: a server whose annotations can be met runs.
        if let Some(server) = &s.server
            && server.metadata.deletion_timestamp.is_none()
            && !held(server)
        {
            let name = server.name_any();
            let deployment = s.deployment(&name).filter(|d| {
                controller_uid(&d.metadata).as_deref() == server.metadata.uid.as_deref()
            });
            if !available(deployment) {
                return Err(format!("server {name} may run, and does not"));
            }
        }
        // Nothing left behind dead: what the operators made has a live owner.
        let made = |meta: &kube::core::ObjectMeta| {
            meta.labels
                .as_ref()
                .is_some_and(|l| l.contains_key("app.kubernetes.io/managed-by"))
        };
        // A taken claim has no owner by design: the take detaches it (labelled
        // `ogx.io/adopted-from`, no owner reference) so that deleting neither resource collects
        // the data, and the server finds it by its labels. So it is judged by whom it is for:
        // the server it is labelled for asks for it or mounts it, or the stack it was taken
        // from is gone (the data is kept); otherwise it went back to that stack (found by this
        // runner: one detached for a server that stopped asking for it stayed labelled for it,
        // owned by nobody, and the old stack could not mount it while that server existed).
        let detached = |meta: &kube::core::ObjectMeta| {
            meta.labels
                .as_ref()
                .is_some_and(|l| l.contains_key("ogx.io/adopted-from"))
                && controller_uid(meta).is_none()
        };
        let llsd_alive = s
            .llsd
            .as_ref()
            .is_some_and(|l| l.metadata.deletion_timestamp.is_none());
        for claim in s.claims.iter().filter(|c| detached(&c.metadata)) {
            let labels = claim.labels();
            let from = labels["ogx.io/adopted-from"].as_str();
            let taker = labels.get(INSTANCE).map(String::as_str).unwrap_or_default();
            if from != OLD || !llsd_alive {
                continue;
            }
            let name = claim.name_any();
            let Some(server) = s
                .server
                .as_ref()
                .filter(|srv| srv.name_any() == taker && srv.metadata.deletion_timestamp.is_none())
            else {
                return Err(format!(
                    "{name} is labelled for {taker}, which is gone, and the old stack has not taken it back"
                ));
            };
            let annotations = server.annotations();
            let read = |key: &str| annotations.get(key).map(String::as_str);
            let unreadable = [read(STORAGE), read(NETWORKING)]
                .into_iter()
                .flatten()
                .any(unreadable);
            let has_storage = server
                .spec
                .workload
                .as_ref()
                .is_some_and(|w| w.storage.is_some());
            let asked = unreadable || (has_storage && read(STORAGE).is_none_or(|n| n == from));
            let mounts = s
                .deployment(taker)
                .is_some_and(|d| mounted(d).contains(&name));
            if !asked && !mounts {
                return Err(format!(
                    "{name}, taken from {from} for {taker}, which no longer asks for it nor mounts it, was not given back"
                ));
            }
        }
        let metas = s
            .deployments
            .iter()
            .map(|o| ("Deployment", o.meta()))
            .chain(s.services.iter().map(|o| ("Service", o.meta())))
            .chain(
                s.claims
                    .iter()
                    .map(|o| ("claim", o.meta()))
                    .filter(|(_, m)| !detached(m)),
            );
        for (kind, meta) in metas.filter(|(_, m)| made(m) && m.deletion_timestamp.is_none()) {
            let owned = meta
                .owner_references
                .iter()
                .flatten()
                .any(|o| alive.contains(&o.uid));
            if !owned {
                let owners: Vec<String> = meta
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|o| format!("{} {} ({})", o.kind, o.name, o.uid))
                    .collect();
                return Err(format!(
                    "{kind} {} is left with no live owner (owners {owners:?}, labels {:?}, annotations {:?}; alive {alive:?})",
                    meta.name.as_deref().unwrap_or_default(),
                    meta.labels.as_ref().map(|l| l
                        .iter()
                        .filter(|(k, _)| k.contains("ogx") || k.contains("llamastack"))
                        .collect::<Vec<_>>()),
                    meta.annotations.as_ref().map(|a| a
                        .iter()
                        .filter(|(k, _)| k.contains("ogx") || k.contains("llamastack"))
                        .collect::<Vec<_>>()),
                ));
            }
        }
        Ok(())
    }
}

/// The steps' writes.
struct Writes<'a> {
    env: &'a Env,
}

impl Writes<'_> {
    async fn delete<K>(&self, ns: &str, name: &str) -> Result<(), Failed>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        match Api::<K>::namespaced(self.env.client.clone(), ns)
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.to_string().into()),
        }
    }

    fn server(
        road: &Road,
        name: &str,
        storage: bool,
        annotations: &[(&str, Option<Ann>)],
    ) -> Value {
        let annotations: serde_json::Map<String, Value> = annotations
            .iter()
            .filter_map(|(key, ann)| ann.map(|a| ((*key).to_owned(), json!(a.value()))))
            .collect();
        let mut spec = json!({"distribution": {"name": "starter"}});
        if storage {
            spec["workload"] = json!({"storage": {}});
        }
        json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": name, "namespace": road.ns, "annotations": annotations},
            "spec": spec})
    }

    async fn step(&self, road: &mut Road, step: &Step) -> Result<(), Failed> {
        let ns = road.ns.clone();
        match step {
            Step::ApplyServer {
                same_name,
                storage,
                adopt_storage,
                adopt_networking,
            } => {
                let name = if *same_name { OLD } else { "new" };
                if road.server.as_deref().is_some_and(|s| s != name) {
                    return Ok(());
                }
                let annotations = [(STORAGE, *adopt_storage), (NETWORKING, *adopt_networking)];
                let server = Self::server(road, name, *storage, &annotations);
                // A merge patch, so that annotations not asked for go (apply keeps no others).
                let servers = Api::<OGXServer>::namespaced(self.env.client.clone(), &ns);
                if road.server.is_some() {
                    let mut patch = server.clone();
                    for (key, ann) in annotations {
                        if ann.is_none() {
                            patch["metadata"]["annotations"][key] = Value::Null;
                        }
                    }
                    if !*storage {
                        patch["spec"]["workload"] = Value::Null;
                    }
                    match servers
                        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.code == 404 => {
                            self.env.apply(server.clone())?
                        }
                        Err(e) => return Err(e.to_string().into()),
                    }
                } else {
                    self.env.apply(server.clone())?;
                }
                road.server = Some(name.to_owned());
            }
            Step::Annotate {
                adopt_storage,
                adopt_networking,
            } => {
                let Some(name) = road.server.clone() else {
                    return Ok(());
                };
                let value = |ann: &Option<Ann>| ann.map_or(Value::Null, |a| json!(a.value()));
                let patch = json!({"metadata": {"annotations": {
                    STORAGE: value(adopt_storage), NETWORKING: value(adopt_networking)}}});
                match Api::<OGXServer>::namespaced(self.env.client.clone(), &ns)
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => road.server = None,
                    Err(e) => return Err(e.to_string().into()),
                }
            }
            Step::DeleteServer => {
                if let Some(name) = road.server.take() {
                    self.delete::<OGXServer>(&ns, &name).await?;
                }
            }
            Step::DeleteStack => self.delete::<LlamaStackDistribution>(&ns, OLD).await?,
            Step::FinishedJobPod => {
                road.jobs += 1;
                self.env
                    .apply(json!({"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": format!("backup-{}", road.jobs), "namespace": ns},
                    "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                        "containers": [{"name": "backup", "image": "backup:1",
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                        "volumes": [{"name": "data",
                            "persistentVolumeClaim": {"claimName": format!("{OLD}-pvc")}}]}}}}))?;
            }
            Step::Quota(true) => {
                road.quota = true;
                self.env
                    .apply(json!({"apiVersion": "v1", "kind": "ResourceQuota",
                    "metadata": {"name": "one-pod", "namespace": ns},
                    "spec": {"hard": {"pods": "1"}}}))?;
            }
            Step::Quota(false) => {
                road.quota = false;
                self.delete::<k8s_openapi::api::core::v1::ResourceQuota>(&ns, "one-pod")
                    .await?;
            }
        }
        Ok(())
    }
}

/// The namespace's volumes, one per claim the road can make, bound by name: what a storage
/// admin keeps ready. A volume whose claim went (`Released`) is offered again to a new claim of
/// that name.
async fn volumes(client: &kube::Client, ns: &str, index: usize) -> Result<(), Failed> {
    let volumes = Api::<PersistentVolume>::all(client.clone());
    for claim in [format!("{OLD}-pvc"), "new-pvc".to_owned()] {
        let name = format!("road-{index}-{claim}");
        let existing = volumes.get_opt(&name).await?;
        let released = existing
            .as_ref()
            .and_then(|v| v.status.as_ref())
            .and_then(|s| s.phase.as_deref())
            == Some("Released");
        if existing.is_none() {
            let volume: PersistentVolume = serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                    "claimRef": {"namespace": ns, "name": claim},
                    "hostPath": {"path": format!("/tmp/llso-road-{index}-{claim}"),
                        "type": "DirectoryOrCreate"}}}))?;
            volumes.create(&Default::default(), &volume).await?;
        } else if released {
            let patch = json!({"spec": {"claimRef": {"uid": null, "resourceVersion": null}}});
            volumes
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    Ok(())
}

/// Waits until no namespace of `roads` changed for [`QUIET`] (at most [`QUIET_AT_MOST`]);
/// returns each one's last snapshot.
async fn quiet(client: &kube::Client, roads: &[Road]) -> Result<Vec<Snapshot>, Failed> {
    let started = Instant::now();
    let mut last: Vec<Vec<String>> = Vec::new();
    let mut since = Instant::now();
    loop {
        let mut snapshots = Vec::with_capacity(roads.len());
        for road in roads {
            snapshots.push(Snapshot::of(client, &road.ns).await?);
        }
        let versions: Vec<Vec<String>> = snapshots.iter().map(Snapshot::versions).collect();
        if versions != last {
            last = versions;
            since = Instant::now();
        } else if since.elapsed() >= QUIET || started.elapsed() >= QUIET_AT_MOST {
            return Ok(snapshots);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The runner: [`SEQUENCES`] sequences from [`SEED`], side by side.
pub(super) fn the_road_keeps_every_address_and_volume_on_the_real_api_server(
    env: &Env,
) -> Result<(), Failed> {
    let sequences = sequences()?;
    let client = env.client.clone();
    let writes = Writes { env };
    env.rt.block_on(async {
        let mut roads = Vec::new();
        // LLSO_ROAD_ONLY=4,12 walks only those sequences (to look at one that failed).
        let only: Option<Vec<usize>> = std::env::var("LLSO_ROAD_ONLY")
            .ok()
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect());
        for (index, (storage, steps)) in sequences.into_iter().enumerate() {
            if only.as_ref().is_some_and(|only| !only.contains(&index)) {
                continue;
            }
            let ns = format!("road-{index}");
            env.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
            volumes(&client, &ns, index).await?;
            let mut spec = json!({"distribution": {"name": "starter"}});
            if storage {
                spec["workload"] = json!({"storage": {}});
            }
            env.apply(json!({"apiVersion": "llamastack.io/v1alpha2",
                "kind": "LlamaStackDistribution",
                "metadata": {"name": OLD, "namespace": ns}, "spec": spec}))?;
            roads.push(Road {
                index,
                ns,
                storage,
                steps,
                server: None,
                quota: false,
                jobs: 0,
                claimed: BTreeMap::new(),
                old_service: String::new(),
                old_service_selects: OLD.to_owned(),
                service_claimers: BTreeSet::new(),
                old_claim: None,
                gone: BTreeSet::new(),
            });
        }
        // Every old stack serving, on its own volume and address.
        let started = Instant::now();
        loop {
            let mut serving = 0;
            for road in &mut roads {
                let s = Snapshot::of(&client, &road.ns).await?;
                let service = s
                    .services
                    .iter()
                    .find(|svc| svc.name_any() == format!("{OLD}-service"));
                let claim = s
                    .claims
                    .iter()
                    .find(|c| c.name_any() == format!("{OLD}-pvc"));
                if available(s.deployment(OLD))
                    && service.is_some()
                    && (claim.is_some() || !road.storage)
                {
                    road.old_service = service
                        .and_then(|svc| svc.metadata.uid.clone())
                        .unwrap_or_default();
                    road.old_claim = claim.and_then(|c| c.metadata.uid.clone());
                    road.service_claimers = s.alive();
                    serving += 1;
                }
            }
            if serving == roads.len() {
                break;
            }
            if started.elapsed() > LIVE_WITHIN {
                return Err(format!("{serving} of {} old stacks serve", roads.len()).into());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let mut failures = Vec::new();
        for i in 0..MOST_STEPS {
            for road in &mut roads {
                volumes(&client, &road.ns, road.index).await?;
                if let Some(step) = road.steps.get(i).cloned() {
                    writes.step(road, &step).await.map_err(|e| {
                        Failed::from(road.says(
                            &format!("step {i} ({step:?})"),
                            e.message().unwrap_or_default(),
                        ))
                    })?;
                }
            }
            let snapshots = quiet(&client, &roads).await?;
            for (road, s) in roads.iter_mut().zip(&snapshots) {
                if let Some(step) = road.steps.get(i).cloned()
                    && let Err(broken) = road.safe(s)
                {
                    failures.push(road.says(&format!("after step {i} ({step:?})"), &broken));
                }
            }
            if !failures.is_empty() {
                return Err(failures.join("\n").into());
            }
        }
        // Room again, and every volume offered: then what must come comes.
        for road in &mut roads {
            if road.quota {
                writes.step(road, &Step::Quota(false)).await?;
            }
            volumes(&client, &road.ns, road.index).await?;
        }
        let started = Instant::now();
        loop {
            let mut failures = Vec::new();
            for road in &mut roads {
                let s = Snapshot::of(&client, &road.ns).await?;
                if let Err(broken) = road.safe(&s) {
                    return Err(road.says("once settled", &broken).into());
                }
                if let Err(broken) = road.live(&s) {
                    failures.push(road.says("once settled", &broken));
                }
            }
            if failures.is_empty() {
                return Ok(());
            }
            if started.elapsed() > LIVE_WITHIN {
                return Err(failures.join("\n").into());
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    })
}
