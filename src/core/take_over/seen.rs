//! What the take-over of an `OGXServer` saw, as one value: the shell reads it
//! (`controller::act::take_over::read`), the core decides every take, hand-back and hold from it
//! ([`super::survey`]). Nothing in it is a choice.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::Kind;
use crate::core::adoption::Requests;

/// Everything the take-over of one `OGXServer` reads.
#[derive(Clone, Debug)]
pub struct Seen {
    /// What the annotations ask, or why one of them cannot name a stack.
    pub requests: Result<Requests, String>,
    /// Whether `ogx.io/adopt-storage` is there at all, readable or not.
    pub asks_storage: bool,
    /// Whether the server has a volume of its own to mount (`workload.storage`).
    pub has_storage: bool,
    /// The stack `ogx.io/adopt-storage` names, as read (when it names one and there is
    /// somewhere to mount its volume).
    pub storage: Option<StorageSource>,
    /// The stack `ogx.io/adopt-networking` names, as read (when it names one).
    pub networking: Option<NetworkingSource>,
    /// The claims labelled as taken by this server (`ogx.io/adopted-from`, and its instance
    /// label), read when the server has a volume and no readable annotation names one.
    pub claims_taken: Vec<String>,
    /// The Services, Ingresses and claims of the namespace labelled `ogx.io/adopted-from`,
    /// whoever holds them, and the Deployments labelled
    /// [`crate::core::adoption::SCALED_DOWN_BY`] (empty when the server is known to hold none).
    pub held: Vec<Held>,
    /// Of the stacks the held objects may go back to, those that still exist: name and uid.
    pub live_sources: BTreeMap<String, String>,
    /// The claims the server's own Deployment mounts, as read (its Pods may write them).
    pub mounted: Vec<String>,
    /// The namespace's Pods, read only while a claim this server no longer asks for may go back
    /// ([`super::survey::no_longer_asked`]): it goes once none of them may write it.
    pub pods: Vec<PodSeen>,
    /// Of the other servers that scaled a held Deployment down, the uids of those that still
    /// exist.
    pub live_servers: BTreeSet<String>,
}

impl Default for Seen {
    /// A server whose annotations ask for nothing, and that saw nothing.
    fn default() -> Self {
        Self {
            requests: Ok(Requests::default()),
            asks_storage: false,
            has_storage: false,
            storage: None,
            networking: None,
            claims_taken: Vec::new(),
            held: Vec::new(),
            live_sources: BTreeMap::new(),
            mounted: Vec::new(),
            pods: Vec::new(),
            live_servers: BTreeSet::new(),
        }
    }
}

/// The old stack's objects that matter to its volume.
#[derive(Clone, Debug, Default)]
pub struct StorageSource {
    /// Its claim `<name>-pvc`, if it exists.
    pub claim: Option<ObjectMeta>,
    /// Its Deployment, if it exists.
    pub deployment: Option<OldDeployment>,
    /// The namespace's Pods (only what says whether one may write the volume).
    pub pods: Vec<PodSeen>,
}

/// The old stack's Deployment.
#[derive(Clone, Debug, Default)]
pub struct OldDeployment {
    /// Its metadata (its controller, labels and resource version).
    pub meta: ObjectMeta,
    /// `spec.replicas` (unset means one).
    pub replicas: Option<i32>,
}

/// One Pod, as far as the volume is concerned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSeen {
    /// `status.phase`.
    pub phase: Option<String>,
    /// Its `app.kubernetes.io/instance` label.
    pub instance: Option<String>,
    /// The claims it mounts.
    pub claims: Vec<String>,
}

impl PodSeen {
    /// What of `pod` says whether it may write a volume.
    pub fn of(pod: k8s_openapi::api::core::v1::Pod) -> Self {
        Self {
            phase: pod.status.and_then(|s| s.phase),
            instance: pod
                .metadata
                .labels
                .and_then(|mut l| l.remove(crate::naming::labels::INSTANCE)),
            claims: pod.spec.as_ref().map(claims_in).unwrap_or_default(),
        }
    }

    /// A Pod that finished (a Job's that succeeded, one evicted or failed) writes nothing any
    /// more, however long it stays listed: only a Pod that may still run counts.
    pub fn finished(&self) -> bool {
        matches!(self.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// Whether it may still write the claim `claim` of the stack `source`: one of that stack's,
    /// or any that mounts the claim, not finished.
    pub fn may_write(&self, source: &str, claim: &str) -> bool {
        !self.finished()
            && (self.instance.as_deref() == Some(source) || self.claims.iter().any(|c| c == claim))
    }
}

/// The claims the Pods of `spec` mount.
pub fn claims_in(spec: &PodSpec) -> Vec<String> {
    spec.volumes
        .iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone())
        .collect()
}

/// The claims the Pods of `deployment` mount (its template).
pub fn mounted_by(deployment: &Deployment) -> Vec<String> {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(claims_in)
        .unwrap_or_default()
}

/// How many of `pods` may still write the claim `claim` and are not the stack `stack`'s own:
/// a volume changes hands only once this is none (one writer per volume).
pub fn other_writers(pods: &[PodSeen], stack: &str, claim: &str) -> usize {
    pods.iter()
        .filter(|pod| {
            !pod.finished()
                && pod.instance.as_deref() != Some(stack)
                && pod.claims.iter().any(|c| c == claim)
        })
        .count()
}

/// The old stack's Service and Ingress.
#[derive(Clone, Debug, Default)]
pub struct NetworkingSource {
    /// `<name>-service`'s metadata and selector, if it exists.
    pub service: Option<(ObjectMeta, BTreeMap<String, String>)>,
    /// `<name>-ingress`'s metadata, if it exists.
    pub ingress: Option<ObjectMeta>,
}

/// A Service, Ingress or claim labelled `ogx.io/adopted-from`, or a Deployment scaled down for
/// a volume.
#[derive(Clone, Debug)]
pub struct Held {
    /// Which.
    pub kind: Kind,
    /// Its metadata.
    pub meta: ObjectMeta,
}
