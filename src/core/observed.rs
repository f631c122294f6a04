//! What the core decides and assesses from: what a reconcile read ([`Observed`]), what its
//! writes came to ([`Acted`], [`Applied`]), what the look after them read ([`Seen`]) and what
//! the server said of itself ([`ServerInfo`]). The
//! controller fills them; nothing here reads or writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use llama_stack_resolver::{Resolution, ResolveError};

use super::adoption::Hold;
use super::take_over::Survey;
use crate::api::common::{ProviderInfo, ProvidersDigest};

/// What a decision could read: the whole cluster, or only the manifests given offline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reach {
    /// Everything the spec names was read, as the controller reads it.
    #[default]
    Cluster,
    /// Only the manifests given (`render`, offline): the referenced Secrets, CA bundles and
    /// client certificate are not known, so nothing is decided from their values (no hash
    /// rolls the Pods, no bundle is built, no connection string is split), and the user's
    /// ConfigMap is known only when it is among the manifests.
    Manifests,
}

/// What one reconcile read, for the decision.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// How much could be read; [`Reach::Cluster`] in a reconcile.
    pub reach: Reach,
    /// The Deployment of the stack's name, if any.
    pub deployment: Option<Deployment>,
    /// The pull secrets of the server Pod's ServiceAccount (copied into the managed one).
    pub pull_secrets: Vec<String>,
    /// Why one of them cannot be used (kubelet would fail the pull the same way); nothing is
    /// resolved then.
    pub pull_secret_unusable: Option<String>,
    /// The reference the distribution resolves from now (empty when it cannot be resolved).
    pub reference: String,
    /// The reference of the deployed pin the resolution kept ([`super::pin::to_keep`]), if it kept one.
    pub kept_pin_from: Option<String>,
    /// The resolution of the distribution; `None` when the pull secrets were unusable.
    pub resolution: Option<Result<Resolution, Arc<ResolveError>>>,
    /// The ConfigMap `overrideConfig` or `baseConfig` names, when it names one and it exists.
    pub user_config: Option<ConfigMap>,
    /// Every Secret the spec references, by name (`None`: absent).
    pub secrets: BTreeMap<String, Option<Secret>>,
    /// The metadata of the object at the derived Secret's name, read when the spec has a
    /// connection string to split and every referenced Secret was found.
    pub derived_secret: Option<ObjectMeta>,
    /// The ConfigMaps of `networking.tls.caBundle` and `additionalCaBundles`, in the stack's
    /// order (`None`: it does not exist).
    pub ca_bundles: Vec<Option<ConfigMap>>,
    /// The ConfigMap of `networking.tls.clientIdentity`'s certificate, when named and it exists.
    pub client_certificate: Option<ConfigMap>,
    /// The data volume's claim (the stack's own or the one taken over), read when the stack asks
    /// for storage; `None` when it does not exist yet.
    pub claim: Option<PersistentVolumeClaim>,
    /// Whether the `OGXServer` that took the claim (another's, [`super::adoption::taker`]) no
    /// longer exists: read only for such a claim.
    pub claim_taker_gone: bool,
    /// The Deployment's ReplicaSets, read only while a rejected revision may have to be
    /// returned from ([`super::rollback::may_restore`]).
    pub replica_sets: Option<Vec<ReplicaSet>>,
    /// The Job of the Praxis migration's name, as read (only for a server that asks for the
    /// migration).
    pub migration_job: Option<super::migration::step::JobSeen>,
    /// What the stack's annotations ask to take over from another (an `OGXServer`'s), as read:
    /// the writes it needs and what they would come to.
    pub take_over: Survey,
}

/// What the apply step wrote or saw, for the status.
#[derive(Debug, Default)]
pub struct Applied {
    /// The Deployment as the API server returned it.
    pub deployment: Option<Deployment>,
    /// The data claim's phase, with `workload.storage`.
    pub pvc_phase: Option<String>,
    /// Where the stack is exposed, once the Ingress or Route has an address.
    pub route_url: Option<String>,
}

/// What one read of the server found.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerInfo {
    /// The server answered both documents.
    Answered {
        /// `version` of `/v1/version`.
        version: String,
        /// `data` of `/v1/providers`, configs masked.
        providers: Providers,
    },
    /// It did not, or not with the expected documents; the message says which and why.
    NotResponding(String),
}

/// The providers of an answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Providers {
    /// As the server listed them, configs masked: what the reconcile that read it writes.
    Listed(Vec<ProviderInfo>),
    /// As the probe remembers them between reads, like the cache (`slim_cache`): a reconcile
    /// from a cached status then writes the stored list again.
    Remembered(ProvidersDigest),
}

impl Providers {
    /// How many providers the server listed.
    pub fn count(&self) -> usize {
        match self {
            Self::Listed(list) => list.len(),
            Self::Remembered(digest) => digest.count as usize,
        }
    }
}

/// What the act step came to.
#[derive(Clone, Copy, Debug)]
pub enum Acted<'a> {
    /// Taking over holds the server's own objects back: only the take-over's writes were made.
    Held(Hold),
    /// The decision's objects were written (`None`: the decision blocked, nothing was written).
    Applied(Option<&'a Applied>),
    /// The API server refused a write: the write and its causes.
    Refused(&'a str),
}

/// What the look after the act read (see `reads::looks`).
#[derive(Debug, Default)]
pub struct Seen {
    /// The server Pods, when they were listed.
    pub pods: Option<Vec<Pod>>,
    /// The Deployment's ReplicaSets, when a rollback was due on its newest Pods.
    pub replica_sets: Option<Vec<ReplicaSet>>,
    /// What the server said of itself, when it was due to be asked.
    pub server: Option<ServerInfo>,
    /// How many Praxis Pods are Ready, or why they could not be listed, when they were asked
    /// for ([`super::reads::Looks::praxis`]).
    pub praxis_ready: Option<Result<usize, String>>,
}

/// A Service's cluster IP, unless it has none (headless, or not yet given one).
pub fn cluster_ip(service: &k8s_openapi::api::core::v1::Service) -> Option<String> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .filter(|ip| !ip.is_empty() && ip != "None")
}
