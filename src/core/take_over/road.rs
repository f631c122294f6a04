//! The road from a LlamaStackDistribution to an `OGXServer`, tested as a space: sequences of
//! user steps and cluster events over a small simulated cluster, the operator's own decisions
//! (the take-over's [`survey`] and [`decided`], the move in place's [`moves_in_place`] and
//! [`handed_to`], the stand-down's [`gives_up`], the reclaim of a volume whose taker is gone)
//! made at every reconcile, and the invariants of `docs/ogx-server.md` checked after every step
//! (safety) and once the operator and the cluster have settled (liveness). Proptest generates
//! the sequences from a fixed seed and shrinks a failing one to the shortest it can.
//!
//! The cluster is simulated as far as the road needs it: objects with owner references, labels,
//! resource versions and merge patches (a stale version is a conflict); server-side apply of
//! the owner references (an apply removes the entries its last apply named and no longer
//! names; those a merge patch made are another manager's and stay; two controllers are
//! refused, as the API server refuses them); the garbage collector (an object
//! goes with its last owner; a dangling reference is removed while another owner stands); the
//! Deployment controller and kubelet as one step (`Settle`: Pods made within a quota, `Recreate`
//! for a Deployment with a volume, a rolling update otherwise, every Pod Ready once made).
//! What it leaves out: Ingresses (they follow the Service's rules), and the operator's memories
//! (a restart between two steps changes nothing a reconcile decides from, since every decision
//! here is made from what is read).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Value, json};

use super::seen::{
    Held, NetworkingSource, OldDeployment, PodSeen, Seen, StorageSource, other_writers,
};
use super::survey::{Server, survey};
use super::{Kind, decided, moves_in_place, service_back_patch};
use crate::api::conditions::ConditionType;
use crate::api::v1alpha2::LlamaStackDistributionSpec;
use crate::core::adoption::{
    ADOPT_NETWORKING, ADOPT_STORAGE, ADOPTED_FROM, SCALED_DOWN_BY, UNREADABLE, gives_up,
    reclaim_patch, requests, taker,
};
use crate::core::door::Door;
use crate::core::stack::{Model, Stack};
use crate::core::subject::{Subject, namesake_owner};
use crate::naming::labels::INSTANCE;
use crate::ownership::{controlled_by, controller_of, handed_to, owned_by_stack};

const OLD: &str = "old";
const LLSD_API: &str = "llamastack.io/v1alpha2";

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

/// One user step or cluster event.
#[derive(Clone, Debug)]
enum Step {
    /// `kubectl apply` of the `OGXServer` (`old`: the move in place; else `new`), made or
    /// updated.
    ApplyServer {
        same_name: bool,
        storage: bool,
        adopt_storage: Option<Ann>,
        adopt_networking: Option<Ann>,
    },
    /// The `OGXServer`'s annotations edited (changed, mistyped or removed).
    Annotate {
        adopt_storage: Option<Ann>,
        adopt_networking: Option<Ann>,
    },
    DeleteServer,
    DeleteStack,
    ReconcileStack,
    ReconcileServer,
    /// The Deployment controller, the quota and kubelet.
    Settle,
    Gc,
    /// A backup Job's Pod that mounted the old volume, finished and still listed.
    FinishedJobPod,
    /// A Pod of the old stack evicted (phase `Failed`, still listed).
    EvictOldPod,
    /// A `ResourceQuota` of that many Pods, or none.
    Quota(Option<usize>),
    /// A Secret the server names deleted (its decision blocks) or made again.
    ServerBlocked(bool),
    /// The operator restarted: nothing a decision here reads is lost.
    Restart,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum K {
    Deployment,
    Claim,
    Service,
}

/// An object of the simulated cluster: its metadata and the little of its spec the road
/// touches.
#[derive(Clone, Debug, Default)]
struct Obj {
    meta: ObjectMeta,
    replicas: i32,
    /// A Deployment's volume; a Pod template is `template` (who wrote it) and this.
    claim: Option<String>,
    template: String,
    selector: BTreeMap<String, String>,
    /// The owner uids the operator's last apply named (server-side apply removes those it no
    /// longer names; an entry a merge patch made is another manager's, and stays).
    applied: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    Succeeded,
    Failed,
}

#[derive(Clone, Debug)]
struct Pod {
    /// Its Deployment (and instance label), none for a Job's.
    deployment: Option<String>,
    template: String,
    claim: Option<String>,
    phase: Phase,
    /// Its Deployment is gone: it still runs (a terminating Pod's grace period) until the next
    /// settle.
    stopping: bool,
}

#[derive(Clone, Debug)]
struct Llsd {
    uid: String,
    storage: bool,
}

#[derive(Clone, Debug)]
struct Ogx {
    name: String,
    uid: String,
    storage: bool,
    adopt_storage: Option<Ann>,
    adopt_networking: Option<Ann>,
    conditions: Vec<Condition>,
}

impl Ogx {
    fn annotations(&self) -> BTreeMap<String, String> {
        let mut annotations = BTreeMap::new();
        if let Some(ann) = self.adopt_storage {
            annotations.insert(ADOPT_STORAGE.to_owned(), ann.value().to_owned());
        }
        if let Some(ann) = self.adopt_networking {
            annotations.insert(ADOPT_NETWORKING.to_owned(), ann.value().to_owned());
        }
        annotations
    }

    /// The server's metadata, as its door hands it to the core.
    fn meta(&self) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name.clone()),
            namespace: Some("ns".to_owned()),
            uid: Some(self.uid.clone()),
            ..ObjectMeta::default()
        }
    }

    /// Its controller reference, as the core makes it.
    fn owner(&self) -> OwnerReference {
        Subject::of(&self.meta(), Door::OgxServer { metrics_port: None })
            .owner
            .expect("a stored server has an owner reference")
    }
}

/// The spec every server of the road asks for, in the model.
fn starter() -> LlamaStackDistributionSpec {
    serde_json::from_value(json!({"distribution": {"name": "starter"}})).expect("a valid spec")
}

/// Who still claims an object (by uid): it may be deleted only once none of them exists.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Claimer {
    Stack(String),
    Server(String),
}

#[derive(Clone, Debug)]
struct World {
    objects: BTreeMap<(K, String), Obj>,
    pods: Vec<Pod>,
    llsd: Option<Llsd>,
    server: Option<Ogx>,
    quota: Option<usize>,
    blocked: bool,
    next: u64,
    /// Per claim uid: its name, and who claimed it (made it, or mounted it).
    claimed: BTreeMap<String, (String, BTreeSet<Claimer>)>,
    /// Who claimed the old stack's Service (made it, took it, or moved in place).
    service_claimers: BTreeSet<Claimer>,
    /// The uid of the old stack's Service and volume as first made.
    old_service: String,
    old_claim: Option<String>,
    /// Whether the old stack's last reconcile was refused by the API server.
    stack_refused: bool,
    /// A rule broken in a write, said when it was made.
    broken: Option<String>,
    /// The uids seen gone, or left by every resource that claimed them (each is judged once,
    /// when it goes).
    gone: BTreeSet<String>,
}

fn llsd_owner(uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: LLSD_API.to_owned(),
        kind: "LlamaStackDistribution".to_owned(),
        name: OLD.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

fn selector(instance: &str) -> BTreeMap<String, String> {
    crate::naming::selector_labels(instance)
}

/// RFC 7386.
fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = json!({});
            }
            let object = target.as_object_mut().expect("made an object above");
            for (key, value) in fields {
                if value.is_null() {
                    object.remove(key);
                } else {
                    merge(object.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// A failed write, as the API server answers it.
#[derive(Debug)]
enum Refused {
    Conflict,
    Invalid,
    NotFound,
}

impl World {
    fn new(storage: bool) -> Self {
        let mut world = World {
            objects: BTreeMap::new(),
            pods: Vec::new(),
            llsd: Some(Llsd {
                uid: "llsd-1".to_owned(),
                storage,
            }),
            server: None,
            quota: None,
            blocked: false,
            next: 10,
            claimed: BTreeMap::new(),
            service_claimers: BTreeSet::from([Claimer::Stack("llsd-1".to_owned())]),
            old_service: String::new(),
            old_claim: None,
            gone: BTreeSet::new(),
            stack_refused: false,
            broken: None,
        };
        world.reconcile_stack();
        world.settle();
        world.old_service = world.objects[&(K::Service, format!("{OLD}-service"))]
            .meta
            .uid
            .clone()
            .expect("made with a uid");
        world.old_claim = world
            .objects
            .get(&(K::Claim, format!("{OLD}-pvc")))
            .and_then(|c| c.meta.uid.clone());
        world
    }

    fn uid(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{}", self.next)
    }

    fn version(&mut self) -> String {
        self.next += 1;
        self.next.to_string()
    }

    fn live_uids(&self) -> BTreeSet<String> {
        self.llsd
            .iter()
            .map(|l| l.uid.clone())
            .chain(self.server.iter().map(|s| s.uid.clone()))
            .collect()
    }

    fn get(&self, kind: K, name: &str) -> Option<&Obj> {
        self.objects.get(&(kind, name.to_owned()))
    }

    fn claim(&mut self, uid: &str, claimer: Claimer) {
        if let Some((_, claimers)) = self.claimed.get_mut(uid) {
            claimers.insert(claimer);
        }
    }

    /// A merge patch of the metadata (and a Deployment's replicas, a Service's selector),
    /// with the resource version it carries checked.
    fn patch(&mut self, kind: K, name: &str, patch: &Value) -> Result<(), Refused> {
        let version = self.version();
        let obj = self
            .objects
            .get_mut(&(kind, name.to_owned()))
            .ok_or(Refused::NotFound)?;
        if let Some(expected) = patch["metadata"]["resourceVersion"].as_str()
            && obj.meta.resource_version.as_deref() != Some(expected)
        {
            return Err(Refused::Conflict);
        }
        let mut doc = json!({
            "metadata": serde_json::to_value(&obj.meta).expect("metadata serializes"),
            "spec": {"replicas": obj.replicas, "selector": obj.selector},
        });
        merge(&mut doc, patch);
        let meta: ObjectMeta =
            serde_json::from_value(doc["metadata"].clone()).map_err(|_| Refused::Invalid)?;
        let controllers = meta
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.controller == Some(true))
            .count();
        if controllers > 1 {
            return Err(Refused::Invalid);
        }
        obj.meta = meta;
        obj.meta.resource_version = Some(version);
        obj.replicas = doc["spec"]["replicas"].as_i64().unwrap_or(1) as i32;
        obj.selector = serde_json::from_value(doc["spec"]["selector"].clone()).unwrap_or_default();
        Ok(())
    }

    /// Server-side apply of an object the operator owns: made, or its owner references,
    /// instance label, replicas, volume, template and selector set (the entries of owner
    /// references it does not name are kept, and two controllers are refused).
    fn apply(&mut self, kind: K, name: &str, owners: &[OwnerReference], want: Obj) -> bool {
        let version = self.version();
        let instance = want.meta.labels.clone().unwrap_or_default();
        match self.objects.get(&(kind, name.to_owned())).cloned() {
            None => {
                let uid = self.uid("obj");
                let mut made = want;
                made.meta.name = Some(name.to_owned());
                made.meta.uid = Some(uid);
                made.meta.resource_version = Some(version);
                made.meta.owner_references = Some(owners.to_vec());
                made.applied = owners.iter().map(|o| o.uid.clone()).collect();
                self.objects.insert((kind, name.to_owned()), made);
                true
            }
            Some(mut current) => {
                let mut refs: Vec<OwnerReference> = current
                    .meta
                    .owner_references
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|o| owners.iter().all(|w| w.uid != o.uid))
                    .filter(|o| !current.applied.contains(&o.uid))
                    .collect();
                refs.extend(owners.iter().cloned());
                current.applied = owners.iter().map(|o| o.uid.clone()).collect();
                if refs.iter().filter(|o| o.controller == Some(true)).count() > 1 {
                    return false;
                }
                current.meta.owner_references = Some(refs);
                current
                    .meta
                    .labels
                    .get_or_insert_with(BTreeMap::new)
                    .extend(instance);
                current.meta.resource_version = Some(version);
                if kind != K::Claim {
                    current.replicas = want.replicas;
                    current.claim = want.claim;
                    current.template = want.template;
                    current.selector = want.selector;
                }
                self.objects.insert((kind, name.to_owned()), current);
                true
            }
        }
    }

    fn make_claim(&mut self, name: &str, owners: &[OwnerReference], instance: &str) {
        if self.get(K::Claim, name).is_some() {
            return;
        }
        let labels = BTreeMap::from([(INSTANCE.to_owned(), instance.to_owned())]);
        let want = Obj {
            meta: ObjectMeta {
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            ..Obj::default()
        };
        self.apply(K::Claim, name, owners, want);
        let uid = self.get(K::Claim, name).and_then(|c| c.meta.uid.clone());
        if let Some(uid) = uid {
            self.claimed.insert(uid, (name.to_owned(), BTreeSet::new()));
        }
    }

    /// The stack's own objects, as its reconcile applies them.
    fn own_objects(
        &mut self,
        (name, uid): (&str, &str),
        owners: &[OwnerReference],
        claim: Option<String>,
        template: &str,
    ) -> bool {
        let labels = Some(BTreeMap::from([(INSTANCE.to_owned(), name.to_owned())]));
        if let Some(claim) = &claim {
            self.make_claim(claim, owners, name);
            let claim_uid = self.get(K::Claim, claim).and_then(|c| c.meta.uid.clone());
            let claimer = match template {
                "llsd" => Claimer::Stack(uid.to_owned()),
                _ => Claimer::Server(uid.to_owned()),
            };
            if let Some(claim_uid) = claim_uid {
                self.claim(&claim_uid, claimer);
            }
        }
        let service = Obj {
            meta: ObjectMeta {
                labels: labels.clone(),
                ..ObjectMeta::default()
            },
            selector: selector(name),
            ..Obj::default()
        };
        let deployment = Obj {
            meta: ObjectMeta {
                labels,
                ..ObjectMeta::default()
            },
            replicas: 1,
            claim,
            template: template.to_owned(),
            ..Obj::default()
        };
        self.apply(K::Service, &format!("{name}-service"), owners, service)
            && self.apply(K::Deployment, name, owners, deployment)
    }

    /// Whether the old stack stands down: a server of its name serves it, or one names it.
    fn stands_down(&self) -> bool {
        self.server.as_ref().is_some_and(|server| {
            server.name == OLD
                || !gives_up(&server.name, Some(&server.annotations()), OLD).is_empty()
        })
    }

    fn reconcile_stack(&mut self) {
        let Some(llsd) = self.llsd.clone() else {
            return;
        };
        if self.stands_down() {
            return;
        }
        let owner = llsd_owner(&llsd.uid);
        let claim = llsd.storage.then(|| format!("{OLD}-pvc"));
        if !self.claim_gate(OLD, &owner, claim.as_deref()) {
            return;
        }
        self.stack_refused = !self.own_objects((OLD, &llsd.uid), &[owner], claim, "llsd");
    }

    /// Decide's rule for a volume another server took: `Some(false)` while that server, its
    /// Deployment or a Pod of another may write it (the stack does not mount it, and nothing
    /// is applied), `Some(true)` once none is left (the stack takes it back), `None` for a
    /// volume nobody else took.
    fn released(&self, holder: &str, claim: Option<&str>) -> Option<bool> {
        let claim = claim?;
        let meta = &self.get(K::Claim, claim)?.meta;
        let taker_name = taker(meta, holder)?;
        Some(
            self.server.as_ref().is_none_or(|s| s.name != taker_name)
                && self.get(K::Deployment, taker_name).is_none()
                && other_writers(&self.pods_seen(), holder, claim) == 0,
        )
    }

    /// [`Self::released`] as a reconcile acts on it: whether the stack may go on.
    fn claim_gate(&mut self, holder: &str, owner: &OwnerReference, claim: Option<&str>) -> bool {
        match (self.released(holder, claim), claim) {
            (None, _) | (_, None) => true,
            (Some(false), _) => false,
            (Some(true), Some(claim)) => {
                let meta = self.objects[&(K::Claim, claim.to_owned())].meta.clone();
                self.patch(K::Claim, claim, &reclaim_patch(&meta, holder, owner))
                    .is_ok()
            }
        }
    }

    fn seen(&self, server: &Ogx) -> Seen {
        let annotations = server.annotations();
        let requests = requests(&server.name, Some(&annotations));
        let named = requests.as_ref().ok().cloned();
        let mut seen = Seen {
            asks_storage: server.adopt_storage.is_some(),
            has_storage: server.storage,
            ..Seen::default()
        };
        match named.as_ref().and_then(|r| r.storage.as_deref()) {
            Some(source) if server.storage => {
                seen.storage = Some(StorageSource {
                    claim: self
                        .get(K::Claim, &format!("{source}-pvc"))
                        .map(|c| c.meta.clone()),
                    deployment: self.get(K::Deployment, source).map(|d| OldDeployment {
                        meta: d.meta.clone(),
                        replicas: Some(d.replicas),
                    }),
                    pods: self.pods_seen(),
                });
            }
            Some(_) => {}
            None if server.storage => {
                seen.claims_taken = self.claims_taken_by(&server.name);
            }
            None => {}
        }
        if let Some(source) = named.as_ref().and_then(|r| r.networking.as_deref()) {
            seen.networking = Some(NetworkingSource {
                service: self
                    .get(K::Service, &format!("{source}-service"))
                    .map(|s| (s.meta.clone(), s.selector.clone())),
                ingress: None,
            });
        }
        seen.held = self
            .objects
            .iter()
            .filter_map(|((kind, _), obj)| {
                let label = |key: &str| obj.meta.labels.iter().flatten().any(|(k, _)| k == key);
                let kind = match kind {
                    K::Service if label(ADOPTED_FROM) => Kind::Service,
                    K::Claim if label(ADOPTED_FROM) => Kind::Claim,
                    K::Deployment if label(SCALED_DOWN_BY) => Kind::Deployment,
                    _ => return None,
                };
                Some(Held {
                    kind,
                    meta: obj.meta.clone(),
                })
            })
            .collect();
        if let Some(llsd) = &self.llsd {
            seen.live_sources.insert(OLD.to_owned(), llsd.uid.clone());
        }
        seen.live_servers.insert(server.uid.clone());
        seen.mounted = self
            .get(K::Deployment, &server.name)
            .and_then(|d| d.claim.clone())
            .into_iter()
            .collect();
        seen.pods = self.pods_seen();
        seen.requests = requests;
        seen
    }

    /// The claims labelled as taken by the server `name`.
    fn claims_taken_by(&self, name: &str) -> Vec<String> {
        self.objects
            .iter()
            .filter(|((kind, _), obj)| {
                let labels = obj.meta.labels.clone().unwrap_or_default();
                *kind == K::Claim
                    && labels.contains_key(ADOPTED_FROM)
                    && labels.get(INSTANCE).map(String::as_str) == Some(name)
            })
            .map(|((_, claim), _)| claim.clone())
            .collect()
    }

    fn pods_seen(&self) -> Vec<PodSeen> {
        self.pods
            .iter()
            .map(|p| PodSeen {
                phase: Some(format!("{:?}", p.phase)),
                instance: p.deployment.clone(),
                claims: p.claim.iter().cloned().collect(),
            })
            .collect()
    }

    fn reconcile_server(&mut self) {
        let Some(server) = self.server.clone() else {
            return;
        };
        let owner = server.owner();
        let seen = self.seen(&server);
        let pods_of = crate::naming::selector_labels(&server.name);
        let surveyed = survey(
            &Server {
                name: &server.name,
                owner: &owner,
                selector: &pods_of,
                previous: &server.conditions,
            },
            &seen,
            "2026-12-06T00:00:00Z",
        );
        let claim = server.storage.then(|| {
            surveyed
                .adopted
                .claim
                .clone()
                .unwrap_or_else(|| format!("{}-pvc", server.name))
        });
        let released = self.released(&server.name, claim.as_deref());
        let runs = !self.blocked && released != Some(false);
        // Serving: its own Deployment, a Pod of it Ready, and this reconcile leaves it as is.
        let serving = self.get(K::Deployment, &server.name).is_some_and(|d| {
            controlled_by(&d.meta, &server.uid)
                && d.template == "ogx"
                && d.claim == claim
                && d.replicas == 1
        }) && self.running(&server.name, "ogx") > 0;
        let decision = decided(&surveyed, runs, serving);

        let conditions = decision
            .adopted
            .said
            .iter()
            .map(|said| Condition {
                type_: said.condition.as_str().to_owned(),
                status: if said.ok { "True" } else { "False" }.to_owned(),
                reason: said.reason.as_str().to_owned(),
                message: said.message.clone(),
                last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
                observed_generation: None,
            })
            .collect();
        if let Some(s) = self.server.as_mut() {
            s.conditions = conditions;
        }
        for write in &decision.writes {
            let kind = match write.kind {
                Kind::Deployment => K::Deployment,
                Kind::Claim => K::Claim,
                Kind::Service => K::Service,
                Kind::Ingress => continue,
            };
            if self.patch(kind, &write.name, &write.patch).is_err() {
                return;
            }
            // The address is taken only from a server that serves.
            if kind == K::Service && write.takes && !serving {
                self.broken = Some(format!(
                    "{} taken while server {} has no available replica",
                    write.name, server.name
                ));
            }
            // A take makes the server claim the old address; a hand-back lets it go.
            if kind == K::Service {
                let claimer = Claimer::Server(server.uid.clone());
                match write.takes {
                    true => self.service_claimers.insert(claimer),
                    false => self.service_claimers.remove(&claimer),
                };
            }
        }
        // A move in place hands over whatever the decision, the Deployment last.
        if self.moves_in_place(&server) {
            let mut keys: Vec<(K, String)> = self.objects.keys().cloned().collect();
            keys.sort_by_key(|(kind, _)| *kind == K::Deployment);
            for (kind, name) in keys {
                let meta = self.objects[&(kind, name.clone())].meta.clone();
                if !owned_by_stack(&meta, OLD) || controlled_by(&meta, &server.uid) {
                    continue;
                }
                let patch = json!({"metadata": {
                    "resourceVersion": meta.resource_version,
                    "ownerReferences": handed_to(&meta, &owner),
                }});
                if self.patch(kind, &name, &patch).is_err() {
                    return;
                }
                let taken = meta.labels.iter().flatten().any(|(k, _)| k == ADOPTED_FROM);
                if kind == K::Service
                    && name == format!("{}-service", server.name)
                    && taken
                    && self
                        .patch(kind, &name, &service_back_patch(&server.name))
                        .is_err()
                {
                    return;
                }
                // Handed over, the server claims it too (before, deleting the old resource
                // first deletes it: the operator must have seen the server once).
                let claimer = Claimer::Server(server.uid.clone());
                match (kind, meta.uid) {
                    (K::Service, _) if name == format!("{OLD}-service") => {
                        self.service_claimers.insert(claimer);
                    }
                    (K::Claim, Some(uid)) => self.claim(&uid, claimer),
                    _ => {}
                }
            }
        }
        if decision.adopted.hold.is_some() || self.blocked {
            return;
        }
        if released.is_some() && !self.claim_gate(&server.name, &owner, claim.as_deref()) {
            return;
        }
        let (meta, spec) = (server.meta(), starter());
        let model = Model {
            meta: &meta,
            spec: &spec,
            status: None,
        };
        let Ok(mut stack) = Stack::read_through(model, Door::OgxServer { metrics_port: None })
        else {
            return;
        };
        stack.subject.namesake = self
            .llsd
            .as_ref()
            .filter(|_| server.name == OLD)
            .map(|l| namesake_owner(LLSD_API, OLD, &l.uid));
        let owners = stack.subject.owners();
        if let Some(claim) = &claim
            && let Some(uid) = self.get(K::Claim, claim).and_then(|c| c.meta.uid.clone())
        {
            self.claim(&uid, Claimer::Server(server.uid.clone()));
        }
        self.own_objects((&server.name, &server.uid), &owners, claim, "ogx");
    }

    fn moves_in_place(&self, server: &Ogx) -> bool {
        let (meta, spec) = (server.meta(), starter());
        let model = Model {
            meta: &meta,
            spec: &spec,
            status: None,
        };
        let Ok(stack) = Stack::read_through(model, Door::OgxServer { metrics_port: None }) else {
            return false;
        };
        let meta = |kind, name: &str| {
            self.get(kind, name)
                .map(|o| k8s_openapi::api::apps::v1::Deployment {
                    metadata: o.meta.clone(),
                    ..Default::default()
                })
        };
        let deployment = meta(K::Deployment, &server.name);
        let claim = self
            .get(K::Claim, &format!("{}-pvc", server.name))
            .map(|c| k8s_openapi::api::core::v1::PersistentVolumeClaim {
                metadata: c.meta.clone(),
                ..Default::default()
            });
        moves_in_place(&stack, deployment.as_ref(), claim.as_ref())
    }

    fn running(&self, deployment: &str, template: &str) -> usize {
        self.pods
            .iter()
            .filter(|p| {
                p.phase == Phase::Running
                    && p.deployment.as_deref() == Some(deployment)
                    && p.template == template
            })
            .count()
    }

    fn room(&self) -> bool {
        let running = self
            .pods
            .iter()
            .filter(|p| p.phase == Phase::Running)
            .count();
        self.quota.is_none_or(|quota| running < quota)
    }

    /// The Deployment controller and kubelet, to rest (the garbage collector deletes a
    /// Deployment; its Pods stop here, after the others have started).
    fn settle(&mut self) {
        self.pods.retain(|p| !p.stopping);
        let deployments: Vec<(String, Obj)> = self
            .objects
            .iter()
            .filter(|((kind, _), _)| *kind == K::Deployment)
            .map(|((_, name), obj)| (name.clone(), obj.clone()))
            .collect();
        for (name, obj) in deployments {
            let current = |pod: &Pod| pod.template == obj.template && pod.claim == obj.claim;
            let of_it =
                |pod: &Pod| pod.phase == Phase::Running && pod.deployment.as_deref() == Some(&name);
            let recreate = obj.claim.is_some();
            if recreate {
                self.pods.retain(|p| !of_it(p) || current(p));
            }
            let mut fresh = self.pods.iter().filter(|p| of_it(p) && current(p)).count();
            while (fresh as i32) < obj.replicas && self.room() {
                self.pods.push(Pod {
                    deployment: Some(name.clone()),
                    template: obj.template.clone(),
                    claim: obj.claim.clone(),
                    phase: Phase::Running,
                    stopping: false,
                });
                fresh += 1;
            }
            if fresh as i32 >= obj.replicas {
                self.pods.retain(|p| !of_it(p) || current(p));
            }
            let mut extra = fresh as i32 - obj.replicas;
            self.pods.retain(|p| {
                let drop = extra > 0 && of_it(p) && current(p);
                if drop {
                    extra -= 1;
                }
                !drop
            });
        }
        // Pods of a Deployment that is gone start stopping only now: they run while the others
        // start, as terminating Pods do, and are gone at the next settle.
        self.settle_pods_of_gone();
    }

    fn gc(&mut self) {
        let live = self.live_uids();
        loop {
            let mut changed = false;
            let keys: Vec<(K, String)> = self.objects.keys().cloned().collect();
            for key in keys {
                let refs = self.objects[&key]
                    .meta
                    .owner_references
                    .clone()
                    .unwrap_or_default();
                if refs.is_empty() {
                    continue;
                }
                let solid: Vec<OwnerReference> = refs
                    .iter()
                    .filter(|o| live.contains(&o.uid))
                    .cloned()
                    .collect();
                if solid.is_empty() {
                    self.objects.remove(&key);
                    changed = true;
                } else if solid.len() < refs.len() {
                    let obj = self.objects.get_mut(&key).expect("listed above");
                    obj.meta.owner_references = Some(solid);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The Pods of a Deployment that is gone stop: they still run until the next settle.
    fn settle_pods_of_gone(&mut self) {
        let objects = &self.objects;
        for pod in &mut self.pods {
            let gone = pod
                .deployment
                .as_ref()
                .is_some_and(|d| !objects.contains_key(&(K::Deployment, d.clone())));
            pod.stopping |= gone;
        }
    }

    fn step(&mut self, step: &Step) {
        match step {
            Step::ApplyServer {
                same_name,
                storage,
                adopt_storage,
                adopt_networking,
            } => {
                let name = if *same_name { OLD } else { "new" };
                match self.server.as_mut() {
                    Some(server) if server.name == name => {
                        server.storage = *storage;
                        server.adopt_storage = *adopt_storage;
                        server.adopt_networking = *adopt_networking;
                    }
                    Some(_) => {}
                    None => {
                        let uid = self.uid("ogx");
                        self.server = Some(Ogx {
                            name: name.to_owned(),
                            uid,
                            storage: *storage,
                            adopt_storage: *adopt_storage,
                            adopt_networking: *adopt_networking,
                            conditions: Vec::new(),
                        });
                    }
                }
            }
            Step::Annotate {
                adopt_storage,
                adopt_networking,
            } => {
                if let Some(server) = self.server.as_mut() {
                    server.adopt_storage = *adopt_storage;
                    server.adopt_networking = *adopt_networking;
                }
            }
            Step::DeleteServer => self.server = None,
            Step::DeleteStack => self.llsd = None,
            Step::ReconcileStack => self.reconcile_stack(),
            Step::ReconcileServer => self.reconcile_server(),
            Step::Settle => self.settle(),
            Step::Gc => self.gc(),
            Step::FinishedJobPod => self.pods.push(Pod {
                deployment: None,
                template: "job".to_owned(),
                claim: Some(format!("{OLD}-pvc")),
                phase: Phase::Succeeded,
                stopping: false,
            }),
            Step::EvictOldPod => {
                if let Some(pod) = self
                    .pods
                    .iter_mut()
                    .find(|p| p.deployment.as_deref() == Some(OLD) && p.phase == Phase::Running)
                {
                    pod.phase = Phase::Failed;
                }
            }
            Step::Quota(quota) => self.quota = *quota,
            Step::ServerBlocked(blocked) => self.blocked = *blocked,
            Step::Restart => {}
        }
    }

    /// The operator and the cluster until nothing changes.
    fn settled(&mut self) {
        for _ in 0..12 {
            let before = format!("{:?}{:?}", self.objects, self.pods);
            self.reconcile_stack();
            self.reconcile_server();
            self.settle();
            self.gc();
            self.settle();
            if before == format!("{:?}{:?}", self.objects, self.pods) {
                return;
            }
        }
    }

    fn claimers_alive(&self, claimers: &BTreeSet<Claimer>) -> Vec<Claimer> {
        claimers
            .iter()
            .filter(|c| match c {
                Claimer::Stack(uid) => self.llsd.as_ref().is_some_and(|l| &l.uid == uid),
                Claimer::Server(uid) => self.server.as_ref().is_some_and(|s| &s.uid == uid),
            })
            .cloned()
            .collect()
    }

    /// What must hold after every step (what goes is judged when it goes).
    fn safe(&mut self) -> Result<(), String> {
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        // Data outlives every step. A claim none of whose claimers is left is the user's to
        // lose (they deleted the last resource that claimed it), whoever mounts it later while
        // the garbage collector has not come yet.
        for (uid, (name, claimers)) in &self.claimed {
            let exists = self
                .get(K::Claim, name)
                .is_some_and(|c| c.meta.uid.as_deref() == Some(uid));
            let alive = self.claimers_alive(claimers);
            if exists && alive.is_empty() {
                self.gone.insert(uid.clone());
            }
            if exists || self.gone.contains(uid) {
                continue;
            }
            if !alive.is_empty() {
                return Err(format!(
                    "claim {name} ({uid}) is gone while {alive:?} claim it"
                ));
            }
            self.gone.insert(uid.clone());
        }
        // An address outlives every step while a resource claims it.
        let service = self.get(K::Service, &format!("{OLD}-service"));
        let address = service.and_then(|s| s.meta.uid.clone());
        if self.claimers_alive(&self.service_claimers).is_empty() {
            self.gone.insert(self.old_service.clone());
        }
        if address.as_deref() != Some(self.old_service.as_str())
            && !self.gone.contains(&self.old_service)
        {
            let alive = self.claimers_alive(&self.service_claimers);
            if !alive.is_empty() {
                return Err(format!(
                    "the old Service's address is gone while {alive:?} claim it"
                ));
            }
            self.gone.insert(self.old_service.clone());
        }
        // One writer per volume.
        let mut writers: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for pod in self.pods.iter().filter(|p| p.phase == Phase::Running) {
            if let (Some(claim), Some(deployment)) = (&pod.claim, &pod.deployment) {
                writers.entry(claim).or_default().insert(deployment);
            }
        }
        if let Some((claim, by)) = writers.iter().find(|(_, by)| by.len() > 1) {
            return Err(format!("claim {claim} written by {by:?} at once"));
        }
        // A server mounts no fresh volume beside the one it took (that would hide the data);
        // without `workload.storage` it mounts none, as asked.
        if let Some(server) = &self.server
            && let Some(deployment) = self.get(K::Deployment, &server.name)
        {
            let taken = self.claims_taken_by(&server.name);
            if let [one] = taken.as_slice()
                && controller_of(&deployment.meta).is_some_and(|c| c.uid == server.uid)
                && deployment
                    .claim
                    .as_ref()
                    .is_some_and(|mounted| mounted != one)
            {
                return Err(format!(
                    "server {} mounts {:?} beside the volume it took, {one}",
                    server.name, deployment.claim
                ));
            }
        }
        Ok(())
    }

    /// What must hold once the operator and the cluster have settled.
    fn live(&self) -> Result<(), String> {
        // Nothing selects nothing: every Service has a Ready Pod behind it, unless what it
        // selects cannot run for a reason of the user's (its own server blocked, a quota
        // without room).
        for ((kind, name), obj) in &self.objects {
            if *kind != K::Service {
                continue;
            }
            let instance = obj.selector.get(INSTANCE).cloned().unwrap_or_default();
            let ready = self.pods.iter().any(|p| {
                p.phase == Phase::Running && p.deployment.as_deref() == Some(instance.as_str())
            });
            // Its own server cannot run for a reason of the user's, and its own Service, or
            // the old one with no old stack left to serve it, selects nothing meanwhile.
            // (the old one taken while it served, the take's own rule, is its own now).
            let own_server_cannot = self.server.as_ref().is_some_and(|s| {
                let its = *name == format!("{instance}-service")
                    || self.llsd.is_none()
                    || controlled_by(&obj.meta, &s.uid);
                s.name == instance && its && (self.blocked || !self.room() || self.server_held())
            });
            if !ready && !own_server_cannot && !self.old_stack_excused(&instance) {
                return Err(format!(
                    "Service {name} selects {instance}, which has no Ready Pod"
                ));
            }
        }
        // The undo: with no server, the old stack serves on its own volume and address.
        if let (None, Some(llsd)) = (&self.server, &self.llsd) {
            if self.running(OLD, "llsd") == 0 && self.room() {
                return Err("the old stack is back alone, and does not serve".to_owned());
            }
            if llsd.storage
                && let Some(original) = &self.old_claim
            {
                let mounted = self.get(K::Deployment, OLD).and_then(|d| d.claim.clone());
                let uid = mounted
                    .as_ref()
                    .and_then(|c| self.get(K::Claim, c))
                    .and_then(|c| c.meta.uid.clone());
                if uid.as_ref() != Some(original) {
                    return Err(format!(
                        "the old stack is back alone on {mounted:?} ({uid:?}), not on its own volume"
                    ));
                }
            }
        }
        // A volume taken for a server that no longer asks for it (no volume to mount it in, or
        // another stack named) goes back to the stack it was taken from once nothing of the
        // server's mounts it; it stays labelled for the server only while that stack is gone.
        if let Some(server) = &self.server {
            let unreadable =
                [server.adopt_storage, server.adopt_networking].contains(&Some(Ann::Invalid));
            for claim in self.claims_taken_by(&server.name) {
                let meta = &self.objects[&(K::Claim, claim.clone())].meta;
                let from = meta
                    .labels
                    .iter()
                    .flatten()
                    .find(|(k, _)| *k == ADOPTED_FROM)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let asked = unreadable
                    || (server.storage
                        && server.adopt_storage.is_none_or(|ann| ann.value() == from));
                let mounted = self
                    .get(K::Deployment, &server.name)
                    .is_some_and(|d| d.claim.as_ref() == Some(&claim));
                if !asked && !mounted && from == OLD && self.llsd.is_some() {
                    return Err(format!(
                        "{claim}, taken from {from} by {} which no longer asks for it nor mounts it, is not given back",
                        server.name
                    ));
                }
            }
        }
        // Progress: a stack no server names reconciles (nothing of a server's is in its way).
        if self.llsd.is_some() && !self.stands_down() && self.stack_refused {
            return Err(
                "the old stack, named by no server, is refused at every reconcile".to_owned(),
            );
        }
        // Progress: a server that may run and whose annotations can be met, runs.
        if let Some(server) = &self.server
            && !self.blocked
            && !self.server_held()
            && self.running(&server.name, "ogx") == 0
            && self.room()
        {
            return Err(format!("server {} may run, and does not", server.name));
        }
        Ok(())
    }

    /// Whether the old stack may have no Pod for a reason of the user's: its volume is taken
    /// (the old address goes with the old resource, the documented gap of a storage move), or a
    /// quota leaves it no room.
    fn old_stack_excused(&self, instance: &str) -> bool {
        if instance != OLD || self.llsd.is_none() {
            return false;
        }
        // Its volume asked for, or an annotation that may name it and that a person must fix.
        let volume_asked = self.server.as_ref().is_some_and(|s| {
            let given = gives_up(&s.name, Some(&s.annotations()), OLD);
            given.contains(&"its volume") || given.contains(&UNREADABLE)
        });
        let volume_taken = self
            .get(K::Claim, &format!("{OLD}-pvc"))
            .is_some_and(|c| taker(&c.meta, OLD).is_some());
        volume_asked || volume_taken || !self.room()
    }

    /// Whether the server holds for a reason of the user's (an annotation that cannot be met).
    fn server_held(&self) -> bool {
        self.server.as_ref().is_some_and(|server| {
            server.conditions.iter().any(|c| {
                (c.type_ == ConditionType::AdoptionConfigInvalid.as_str() && c.status == "True")
                    || (c.type_ == ConditionType::StorageAdopted.as_str()
                        && matches!(
                            c.reason.as_str(),
                            "AdoptionSourceNotFound" | "AdoptionRefused"
                        ))
            })
        })
    }
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
        3 => (any::<bool>(), any::<bool>(), ann(), ann()).prop_map(|(same_name, storage, adopt_storage, adopt_networking)| Step::ApplyServer { same_name, storage, adopt_storage, adopt_networking }),
        2 => (ann(), ann()).prop_map(|(adopt_storage, adopt_networking)| Step::Annotate { adopt_storage, adopt_networking }),
        1 => Just(Step::DeleteServer),
        1 => Just(Step::DeleteStack),
        6 => Just(Step::ReconcileStack),
        8 => Just(Step::ReconcileServer),
        6 => Just(Step::Settle),
        3 => Just(Step::Gc),
        1 => Just(Step::FinishedJobPod),
        1 => Just(Step::EvictOldPod),
        1 => prop_oneof![Just(None), Just(Some(1usize))].prop_map(Step::Quota),
        1 => any::<bool>().prop_map(Step::ServerBlocked),
        1 => Just(Step::Restart),
    ]
}

/// Runs `steps` from a running old stack (with or without a volume), checking the invariants
/// after every step and once settled.
fn walk(storage: bool, steps: &[Step]) -> Result<(), String> {
    let mut world = World::new(storage);
    world.safe().map_err(|e| format!("at the start: {e}"))?;
    for (i, step) in steps.iter().enumerate() {
        world.step(step);
        world
            .safe()
            .map_err(|e| format!("after step {i} ({step:?}): {e}"))?;
    }
    world.settled();
    world.safe().map_err(|e| format!("once settled: {e}"))?;
    world
        .live()
        .map_err(|e| format!("once settled: {e}\n{world:#?}"))
}

/// The sequences run (issue 84: at least 2000, under a minute), from [`SEED`]. To explore
/// further by hand, raise both (20,000 sequences each from the seeds 1 to 7 and 84 passed when
/// this was written).
const SEQUENCES: u32 = 2000;
/// The seed the sequences are generated from (every byte of it).
const SEED: u8 = 84;

#[test]
fn the_road_keeps_every_address_and_volume_in_every_order() {
    let config = Config {
        cases: SEQUENCES,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[SEED; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (any::<bool>(), proptest::collection::vec(step(), 1..30));
    let result = runner.run(&strategy, |(storage, steps)| {
        walk(storage, &steps).map_err(TestCaseError::fail)
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

/// The five orders of events reproduced on a real cluster (issue 84), each as its sequence.
#[test]
fn the_five_reproduced_orders_keep_the_address_and_the_volume() {
    use Step::*;
    let new = |storage, adopt_storage, adopt_networking| ApplyServer {
        same_name: false,
        storage,
        adopt_storage,
        adopt_networking,
    };
    let cases: [(&str, bool, Vec<Step>); 5] = [
        (
            "the migration guide's server over a stack without storage",
            false,
            vec![
                new(true, Some(Ann::Old), Some(Ann::Old)),
                ReconcileServer,
                ReconcileStack,
                Settle,
            ],
        ),
        (
            "networking only, with a quota of one Pod",
            false,
            vec![
                Quota(Some(1)),
                new(false, None, Some(Ann::Old)),
                ReconcileServer,
                Settle,
                ReconcileServer,
                Settle,
            ],
        ),
        (
            "storage, with a finished Job's Pod that mounted the volume",
            true,
            vec![
                FinishedJobPod,
                new(true, Some(Ann::Old), None),
                ReconcileServer,
                Settle,
                ReconcileServer,
                Settle,
                ReconcileServer,
                Settle,
            ],
        ),
        (
            "a move in place with storage, then the server deleted",
            true,
            vec![
                ApplyServer {
                    same_name: true,
                    storage: true,
                    adopt_storage: None,
                    adopt_networking: None,
                },
                ReconcileServer,
                Settle,
                DeleteServer,
                Gc,
                ReconcileStack,
                Settle,
            ],
        ),
        (
            "networking taken, the old stack deleted, then the annotation removed",
            false,
            vec![
                new(false, None, Some(Ann::Old)),
                ReconcileServer,
                Settle,
                ReconcileServer,
                Settle,
                DeleteStack,
                Gc,
                Annotate {
                    adopt_storage: None,
                    adopt_networking: None,
                },
                ReconcileServer,
                Settle,
            ],
        ),
    ];
    for (case, storage, steps) in cases {
        if let Err(failure) = walk(storage, &steps) {
            panic!("{case}: {failure}");
        }
    }
}

/// The orders of events the model found beyond the five (each shrunk from a generated sequence
/// and kept as a row, so that the rule it broke stays tested whatever the generator reaches).
#[test]
fn the_orders_the_model_found_keep_the_address_and_the_volume() {
    use Step::*;
    let new = |storage, adopt_storage, adopt_networking| ApplyServer {
        same_name: false,
        storage,
        adopt_storage,
        adopt_networking,
    };
    // The volume taken: scaled down, its Pods gone, detached and mounted.
    let took_volume = [
        new(true, Some(Ann::Old), None),
        ReconcileServer,
        Settle,
        ReconcileServer,
    ];
    let took_address = [
        ReconcileServer,
        Settle,
        ReconcileServer,
        Settle,
        ReconcileServer,
    ];
    let cases: Vec<(&str, bool, Vec<Step>)> = vec![
        (
            "a taken volume, then an annotation that cannot be read",
            true,
            [
                vec![new(true, Some(Ann::Old), None)],
                took_address.to_vec(),
                vec![Annotate {
                    adopt_storage: None,
                    adopt_networking: Some(Ann::Invalid),
                }],
            ]
            .concat(),
        ),
        (
            "a taken address, then the annotation pointed at another name",
            false,
            [
                vec![new(false, None, Some(Ann::Old))],
                took_address.to_vec(),
                vec![Annotate {
                    adopt_storage: None,
                    adopt_networking: Some(Ann::Typo),
                }],
            ]
            .concat(),
        ),
        (
            "a taken volume, the server deleted: its Pods stop while the old stack starts",
            true,
            [
                vec![new(true, Some(Ann::Old), None)],
                took_address.to_vec(),
                vec![DeleteServer, Gc, ReconcileStack, Settle],
            ]
            .concat(),
        ),
        (
            "a taken address whose server was deleted, then another server naming it",
            false,
            [
                vec![new(false, None, Some(Ann::Old))],
                took_address.to_vec(),
                vec![DeleteServer, new(true, Some(Ann::Old), Some(Ann::Old))],
            ]
            .concat(),
        ),
        (
            "a scale-down whose server was deleted, then another server naming the stack",
            true,
            vec![
                new(true, Some(Ann::Old), None),
                ReconcileServer,
                DeleteServer,
                new(true, Some(Ann::Typo), Some(Ann::Old)),
            ],
        ),
        (
            "a scale-down abandoned for a typo, the stack still named for its address",
            true,
            vec![
                new(true, Some(Ann::Old), None),
                ReconcileServer,
                Annotate {
                    adopt_storage: Some(Ann::Typo),
                    adopt_networking: Some(Ann::Old),
                },
            ],
        ),
        (
            "a taken address whose server was deleted, then the stack moved in place",
            false,
            [
                vec![new(false, None, Some(Ann::Old))],
                took_address.to_vec(),
                vec![
                    DeleteServer,
                    ApplyServer {
                        same_name: true,
                        storage: true,
                        adopt_storage: Some(Ann::Old),
                        adopt_networking: Some(Ann::Invalid),
                    },
                ],
            ]
            .concat(),
        ),
        (
            "a volume taken, then the server's own volume dropped, the annotation kept",
            true,
            [took_volume.to_vec(), vec![new(false, Some(Ann::Old), None)]].concat(),
        ),
        (
            "a volume taken, then another name given for storage: the server, held, keeps it mounted",
            true,
            [
                took_volume.to_vec(),
                vec![Annotate {
                    adopt_storage: Some(Ann::Typo),
                    adopt_networking: None,
                }],
            ]
            .concat(),
        ),
        (
            "a volume taken, the annotation removed (kept by the server), then its own volume dropped",
            true,
            [
                vec![new(true, Some(Ann::Old), None)],
                took_address.to_vec(),
                vec![Annotate {
                    adopt_storage: None,
                    adopt_networking: None,
                }],
                vec![new(false, None, None)],
            ]
            .concat(),
        ),
        (
            "a move in place while the server cannot run, then the old resource deleted",
            true,
            vec![
                ServerBlocked(true),
                ApplyServer {
                    same_name: true,
                    storage: true,
                    adopt_storage: None,
                    adopt_networking: None,
                },
                ReconcileServer,
                DeleteStack,
                Gc,
            ],
        ),
    ];
    for (case, storage, steps) in cases {
        if let Err(failure) = walk(storage, &steps) {
            panic!("{case}: {failure}");
        }
    }
}
