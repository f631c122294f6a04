//! Taking over the objects of a LlamaStackDistribution of another name, as the OGX operator's
//! adoption annotations on an `OGXServer` ask: `ogx.io/adopt-storage` (its volume) and
//! `ogx.io/adopt-networking` (its Service and Ingress). Naming the `OGXServer`'s own name is this
//! operator's move in place, which needs no annotation, so it asks for nothing here.
//!
//! The steps follow the OGX operator's, so its users' runbooks hold: the volume is taken only
//! once the old Deployment is scaled to zero and its Pods are gone (a volume is written by one
//! server at a time); it loses the old stack's controller reference, is labelled
//! `ogx.io/adopted-from` and is mounted instead of `<name>-pvc`, and no owner is set on it (data
//! outlives the resource). The Service and Ingress change controller and the Service selects the
//! new Pods. An object controlled by anything but the named stack is never taken.
//!
//! The decisions, pure; `take_over` reads and writes.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use crate::api::conditions::{ConditionType, Reason};
use crate::naming::labels;
use crate::ownership::{controller_of, handed_to, is_stack, without_controller};

/// Asks to take over the named stack's volume.
pub const ADOPT_STORAGE: &str = "ogx.io/adopt-storage";
/// Asks to take over the named stack's Service and Ingress.
pub const ADOPT_NETWORKING: &str = "ogx.io/adopt-networking";
/// The annotations of an `OGXServer` that ask to take a stack's objects ([`requests`] reads them).
pub const REQUESTS: [&str; 2] = [ADOPT_STORAGE, ADOPT_NETWORKING];
/// Set on a taken object: the stack it was taken from.
pub const ADOPTED_FROM: &str = "ogx.io/adopted-from";
/// Set on a taken object: when (RFC 3339).
pub const ADOPTED_AT: &str = "ogx.io/adopted-at";

/// Set on the old stack's Deployment a server scaled to zero to take its volume: that server's
/// uid. While the volume has not changed hands, a server that no longer asks for it gives the
/// replicas back ([`REPLICAS_BEFORE`]); once it has, the label goes (the old stack must not run
/// beside the server that writes its volume).
pub const SCALED_DOWN_BY: &str = "llamastack.io/scaled-down-by";
/// Set with [`SCALED_DOWN_BY`]: the Deployment's `spec.replicas` before.
pub const REPLICAS_BEFORE: &str = "llamastack.io/replicas-before";
/// Set with [`SCALED_DOWN_BY`]: that server's name (whether it still exists is read by it).
pub const SCALED_DOWN_FOR: &str = "llamastack.io/scaled-down-for";

/// What an `OGXServer`'s annotations ask to take over: the names of the stacks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// `ogx.io/adopt-storage`.
    pub storage: Option<String>,
    /// `ogx.io/adopt-networking`.
    pub networking: Option<String>,
}

/// What one condition should say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    /// The condition.
    pub condition: ConditionType,
    /// Its status.
    pub ok: bool,
    /// Why.
    pub reason: Reason,
    /// For a person.
    pub message: String,
}

impl Said {
    pub(crate) fn new(condition: ConditionType, ok: bool, reason: Reason, message: String) -> Self {
        Self {
            condition,
            ok,
            reason,
            message,
        }
    }
}

/// What taking over came to in one reconcile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Adopted {
    /// The taken volume, mounted instead of `<name>-pvc`.
    pub claim: Option<String>,
    /// The conditions to set.
    pub said: Vec<Said>,
    /// Why nothing else may be written yet, if so.
    pub hold: Option<Hold>,
}

/// Why a stack's own objects wait while taking over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// The old stack's Pods are still going: look again soon.
    Waiting,
    /// The volume asked for cannot be taken, and a fresh one would hide that: the stack keeps
    /// running as it is until a person acts.
    Refused,
}

impl StorageStep {
    /// Whether the stack's own objects wait, after this step.
    pub fn hold(&self) -> Option<Hold> {
        match self {
            StorageStep::ScaleDown | StorageStep::WaitForPods(_) => Some(Hold::Waiting),
            // A name with no volume (a typo, or a stack without storage): a fresh volume would
            // hide that, and the data the person meant to keep would be left behind.
            StorageStep::Refused(_) | StorageStep::Missing => Some(Hold::Refused),
            StorageStep::Taken | StorageStep::Detach => None,
        }
    }
}

/// Reads the annotations of the `OGXServer` `server`; a value that cannot name a stack is the
/// message of `AdoptionConfigInvalid`.
pub fn requests(
    server: &str,
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<Requests, String> {
    let read = |key: &str| -> Result<Option<String>, String> {
        let Some(value) = annotations.and_then(|a| a.get(key)) else {
            return Ok(None);
        };
        if !crate::naming::is_dns_label(value) {
            return Err(format!(
                "{key}: {value:?} is not a LlamaStackDistribution name (an RFC 1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)"
            ));
        }
        Ok(Some(value.clone()).filter(|named| named != server))
    };
    Ok(Requests {
        storage: read(ADOPT_STORAGE)?,
        networking: read(ADOPT_NETWORKING)?,
    })
}

/// What the stack `stack` gives up an unreadable annotation may name (see [`gives_up`]).
pub const UNREADABLE: &str = "whatever its unreadable ogx.io/adopt-* annotation names";

/// Which of the annotations of the `OGXServer` `server` name the stack `stack` (of another
/// name): what that stack gives up, for its own status. An annotation that cannot be read may
/// name any stack of the namespace, and the server keeps what it took until it is fixed: every
/// stack stands down meanwhile ([`UNREADABLE`]), so none re-applies an object the server holds
/// (two controllers, refused at every reconcile) or resumes beside it.
pub fn gives_up(
    server: &str,
    annotations: Option<&BTreeMap<String, String>>,
    stack: &str,
) -> Vec<&'static str> {
    let Ok(requests) = requests(server, annotations) else {
        return vec![UNREADABLE];
    };
    let mut given = Vec::new();
    if requests.storage.as_deref() == Some(stack) {
        given.push("its volume");
    }
    if requests.networking.as_deref() == Some(stack) {
        given.push("its Service and Ingress");
    }
    given
}

/// What the old stack's objects look like, for the volume.
#[derive(Clone, Copy, Debug, Default)]
pub struct StorageSeen<'a> {
    /// The volume's metadata, if it exists.
    pub claim: Option<&'a ObjectMeta>,
    /// The old Deployment's `spec.replicas` (`Some(None)`: unset, which means one), if it exists.
    pub replicas: Option<Option<i32>>,
    /// The old Deployment's metadata, if it exists: only the named stack's is scaled down.
    pub deployment: Option<&'a ObjectMeta>,
    /// The Pods still there that would write the volume: the old stack's, and any (of any kind)
    /// that mounts it.
    pub pods: usize,
}

/// The next step in taking the volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageStep {
    /// There is no such volume: the stack gets its own.
    Missing,
    /// Taken already (by this server).
    Taken,
    /// It cannot be taken; why.
    Refused(String),
    /// The old Deployment still asks for Pods: scale it to zero.
    ScaleDown,
    /// Its Pods are still going.
    WaitForPods(usize),
    /// Free: detach and label it.
    Detach,
}

/// The `OGXServer` other than `holder` that took the claim `claim` (`ogx.io/adopted-from`, and
/// the instance label it was given), if one did.
pub fn taker<'a>(claim: &'a ObjectMeta, holder: &str) -> Option<&'a str> {
    let labels = claim.labels.as_ref()?;
    labels.get(ADOPTED_FROM)?;
    let taker = labels
        .get(labels::INSTANCE)
        .map_or("(unnamed)", String::as_str);
    (taker != holder).then_some(taker)
}

/// The claim patch that takes the stack `stack`'s volume back (its controller reference
/// `owner`), where an `OGXServer` took it and is gone (`claim`: the claim, read, once its taker
/// is known to be gone): [`reclaim_patch`], made before the volume is mounted.
pub fn reclaim(
    stack: &str,
    owner: Option<&OwnerReference>,
    claim: Option<&k8s_openapi::api::core::v1::PersistentVolumeClaim>,
) -> Option<Value> {
    let claim = claim?;
    taker(&claim.metadata, stack)?;
    Some(reclaim_patch(&claim.metadata, stack, owner?))
}

/// The patch that gives the stack `stack` (its controller reference `owner`) back the claim
/// `meta` an `OGXServer` took and that no longer exists: unlabelled, its instance the stack's
/// again, and the stack its controller, as before the take. Without it the stack would stay
/// stopped on a volume no server mounts, and deleting the server would not undo the take.
pub fn reclaim_patch(meta: &ObjectMeta, stack: &str, owner: &OwnerReference) -> Value {
    json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "ownerReferences": handed_to(meta, owner),
        "labels": {ADOPTED_FROM: null, labels::INSTANCE: stack},
        "annotations": {ADOPTED_AT: null},
    }})
}

/// Why the stack `holder` must not mount the claim `claim`: an `OGXServer` other than it took
/// the claim (`ogx.io/adopted-from`), and its server mounts it (two servers writing one volume
/// corrupt it). `None` for a claim nobody took, or one `holder` took.
pub fn taken_by_another(claim: &ObjectMeta, holder: &str) -> Option<String> {
    let labels = claim.labels.as_ref()?;
    let from = labels.get(ADOPTED_FROM)?;
    let taker = labels
        .get(labels::INSTANCE)
        .map_or("(unnamed)", String::as_str);
    (taker != holder).then(|| {
        format!(
            "PVC {} was taken from {from} by OGXServer {taker} (ogx.io/adopted-from), whose server mounts it: this stack does not mount it beside that server, so nothing is applied and its Deployment stays as it is. Delete this resource once {taker} serves (the claim stays), or remove the claim's ogx.io/adopted-from label once {taker} no longer uses it",
            claim.name.as_deref().unwrap_or_default()
        )
    })
}

/// The next step in taking the volume of `source` for the server `server`.
pub fn storage_step(server: &str, source: &str, seen: StorageSeen<'_>) -> StorageStep {
    let Some(claim) = seen.claim else {
        return StorageStep::Missing;
    };
    let label = |key: &str| claim.labels.as_ref().and_then(|l| l.get(key));
    if let Some(from) = label(ADOPTED_FROM) {
        return match label(labels::INSTANCE) {
            Some(holder) if holder == server && from == source => StorageStep::Taken,
            holder => StorageStep::Refused(format!(
                "PVC {} was taken from {from} by OGXServer {} already",
                crate::naming::pvc_name(source),
                holder.map_or("(unnamed)", String::as_str)
            )),
        };
    }
    if let Some(refusal) = foreign_controller(claim, source) {
        return StorageStep::Refused(refusal);
    }
    match (seen.replicas, seen.pods) {
        (Some(replicas), _) if replicas != Some(0) => {
            match seen.deployment.and_then(|d| foreign_controller(d, source)) {
                Some(refusal) => StorageStep::Refused(format!(
                    "Deployment {refusal}, so it is not scaled down and PVC {} stays with it",
                    crate::naming::pvc_name(source)
                )),
                None => StorageStep::ScaleDown,
            }
        }
        (_, 0) => StorageStep::Detach,
        (_, pods) => StorageStep::WaitForPods(pods),
    }
}

/// Why an object that is not the stack `source`'s is not taken: it is controlled by something
/// else, or it has no controller and does not carry `source`'s instance label (an object of that
/// name someone else made: rights on an `OGXServer` must not reach it).
pub fn foreign_controller(meta: &ObjectMeta, source: &str) -> Option<String> {
    let name = meta.name.as_deref().unwrap_or_default();
    let Some(controller) = controller_of(meta) else {
        let instance = meta.labels.as_ref().and_then(|l| l.get(labels::INSTANCE));
        return (instance.map(String::as_str) != Some(source)).then(|| {
            format!(
                "{name} has no controller and is not labelled {}={source}: it is not LlamaStackDistribution {source}'s, so it is not taken",
                labels::INSTANCE
            )
        });
    };
    (!is_stack(controller, source)).then(|| {
        format!(
            "{name} is controlled by {} {} {:?}, not by LlamaStackDistribution {source}: it is not taken",
            controller.api_version,
            controller.kind,
            controller.name
        )
    })
}

/// The metadata patch that detaches the volume of `source` for the server `server`: no
/// controller, labelled for the server, stamped `at`. Carries the resource version read, so a
/// change in between fails the write instead of being overwritten.
pub fn detach_patch(meta: &ObjectMeta, server: &str, source: &str, at: &str) -> Value {
    json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "ownerReferences": without_controller(meta),
        "labels": {ADOPTED_FROM: source, labels::INSTANCE: server},
        "annotations": {ADOPTED_AT: at},
    }})
}

/// The next step in taking a Service or an Ingress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferStep {
    /// There is no such object.
    Missing,
    /// The server controls it already.
    Taken,
    /// It cannot be taken; why.
    Refused(String),
    /// Take it.
    Transfer,
}

/// The next step in taking the object `meta` of `source` for the server whose owner reference
/// is `owner`.
pub fn transfer_step(
    meta: Option<&ObjectMeta>,
    source: &str,
    owner: &OwnerReference,
) -> TransferStep {
    let Some(meta) = meta else {
        return TransferStep::Missing;
    };
    if controller_of(meta).is_some_and(|c| c.uid == owner.uid) {
        return TransferStep::Taken;
    }
    match foreign_controller(meta, source) {
        Some(refusal) => TransferStep::Refused(refusal),
        None => TransferStep::Transfer,
    }
}

/// The metadata patch that gives the object `meta` of `source` to `owner`.
pub fn transfer_patch(meta: &ObjectMeta, source: &str, owner: &OwnerReference, at: &str) -> Value {
    json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "ownerReferences": handed_to(meta, owner),
        "labels": {ADOPTED_FROM: source},
        "annotations": {ADOPTED_AT: at},
    }})
}

/// The patch that hands a Service or Ingress taken from `source` back, once no annotation asks
/// for it: without the server as its controller (the stack `source`, if it still runs, takes it
/// again with its next apply), unlabelled, and a Service selecting the Pods of `source` again.
/// Deleting it instead would lose its address (a Service's cluster IP) and leave the old stack
/// unreachable.
pub fn hand_back_patch(meta: &ObjectMeta, source: &str, is_service: bool) -> Value {
    let mut patch = json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "ownerReferences": without_controller(meta),
        "labels": {ADOPTED_FROM: null},
        "annotations": {ADOPTED_AT: null},
    }});
    if is_service {
        patch["spec"] = json!({"selector": crate::naming::selector_labels(source)});
    }
    patch
}

/// The patch that makes the Service `service` select `selector` and nothing else (a merge
/// patch merges maps, so the old keys are removed by name).
pub fn selector_patch(
    current: &BTreeMap<String, String>,
    selector: &BTreeMap<String, String>,
) -> Value {
    let mut patched: serde_json::Map<String, Value> = current
        .iter()
        .filter(|(key, _)| !selector.contains_key(*key))
        .map(|(key, _)| (key.clone(), Value::Null))
        .collect();
    for (key, value) in selector {
        patched.insert(key.clone(), Value::String(value.clone()));
    }
    json!({"spec": {"selector": patched}})
}

/// What the conditions say of the volume after `step`.
pub fn storage_said(source: &str, step: &StorageStep) -> Said {
    let claim = crate::naming::pvc_name(source);
    let (ok, reason, message) = match step {
        StorageStep::Missing => (
            false,
            Reason::AdoptionSourceNotFound,
            format!(
                "PVC {claim} does not exist, so there is no volume of {source} to take: correct or remove ogx.io/adopt-storage. Until then nothing is applied (a fresh volume would hide the mistake) and what runs stays as it is"
            ),
        ),
        StorageStep::Taken | StorageStep::Detach => {
            (true, Reason::StorageAdopted, format!("PVC {claim} adopted"))
        }
        StorageStep::Refused(why) => (false, Reason::AdoptionRefused, why.clone()),
        StorageStep::ScaleDown => (
            false,
            Reason::WaitingForLegacyPods,
            format!(
                "scaling Deployment {source} to zero to free PVC {claim}; the server starts once its Pods are gone"
            ),
        ),
        StorageStep::WaitForPods(pods) => (
            false,
            Reason::WaitingForLegacyPods,
            format!(
                "waiting for {pods} Pods of {source} to stop before PVC {claim} is taken; the server starts once they are gone"
            ),
        ),
    };
    Said::new(ConditionType::StorageAdopted, ok, reason, message)
}

/// What the conditions say of the networking after the Service's and the Ingress's steps, if
/// anything: a refusal, else what was taken.
pub fn networking_said(source: &str, steps: [&TransferStep; 2]) -> Option<Said> {
    let refused = steps.iter().find_map(|s| match s {
        TransferStep::Refused(why) => Some(why.clone()),
        _ => None,
    });
    if let Some(why) = refused {
        return Some(Said::new(
            ConditionType::NetworkingAdopted,
            false,
            Reason::AdoptionRefused,
            why,
        ));
    }
    let taken = steps.iter().any(|s| **s != TransferStep::Missing);
    let said = if taken {
        Said::new(
            ConditionType::NetworkingAdopted,
            true,
            Reason::NetworkingAdopted,
            format!("Networking adopted from {source}"),
        )
    } else {
        Said::new(
            ConditionType::NetworkingAdopted,
            false,
            Reason::AdoptionSourceNotFound,
            format!(
                "{source} has neither a Service {} nor an Ingress {}: nothing was taken",
                crate::naming::service_name(source),
                crate::naming::ingress_name(source)
            ),
        )
    };
    Some(said)
}

/// Whether the stored conditions say `condition` is True.
pub fn was_true(previous: &[Condition], condition: ConditionType) -> bool {
    previous
        .iter()
        .any(|c| c.type_ == condition.as_str() && c.status == "True")
}

/// `AdoptionConfigInvalid`: True with `invalid`, else False when it was True before (and absent
/// when it never was).
pub fn config_said(previous: &[Condition], invalid: Option<&str>) -> Option<Said> {
    let condition = ConditionType::AdoptionConfigInvalid;
    match invalid {
        Some(message) => Some(Said::new(
            condition,
            true,
            Reason::AdoptionConfigInvalid,
            message.to_owned(),
        )),
        None => was_true(previous, condition).then(|| {
            Said::new(
                condition,
                false,
                Reason::AnnotationsValid,
                "Adoption annotations are valid".to_owned(),
            )
        }),
    }
}
