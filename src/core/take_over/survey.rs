//! What taking over comes to, from what was seen ([`Seen`]): every take, hand-back and hold of
//! one `OGXServer`, as writes not yet made ([`survey`]). Pure; the shell reads before and writes
//! after, and [`super::decided`] keeps the takes only where the server will run.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference};
use serde_json::json;

use super::seen::{Held, Seen};
use super::{Kind, Survey, Write};
use crate::api::conditions::{ConditionType, Reason};
use crate::core::adoption::{
    ADOPTED_FROM, Adopted, Hold, REPLICAS_BEFORE, Requests, SCALED_DOWN_BY, SCALED_DOWN_FOR, Said,
    StorageSeen, StorageStep, TransferStep, config_said, detach_patch, hand_back_patch,
    networking_said, selector_patch, storage_said, storage_step, transfer_patch, transfer_step,
    was_true,
};
use crate::naming::{ingress_name, pvc_name, service_name};
use crate::ownership::{controlled_by, controller_of};

/// The server taking over: who it is, how its Pods are selected and what it said before.
#[derive(Clone, Copy, Debug)]
pub struct Server<'a> {
    /// Its name.
    pub name: &'a str,
    /// The controller reference its objects carry.
    pub owner: &'a OwnerReference,
    /// The labels that select its Pods.
    pub selector: &'a BTreeMap<String, String>,
    /// The conditions it reported last.
    pub previous: &'a [Condition],
}

/// Everything taking over comes to for `server`, from `seen`, stamped `at` (RFC 3339).
pub fn survey(server: &Server<'_>, seen: &Seen, at: &str) -> Survey {
    let mut survey = Survey::default();
    let requests = match &seen.requests {
        Ok(requests) => {
            survey
                .adopted
                .said
                .extend(config_said(server.previous, None));
            requests
        }
        Err(invalid) => {
            // As the OGX operator does: nothing is taken and nothing taken before is let go.
            // The volume taken stays mounted, and none is made in its place (it would hide the
            // data the annotation is about).
            survey
                .adopted
                .said
                .extend(config_said(server.previous, Some(invalid)));
            if seen.has_storage {
                kept_volume(server, seen, &mut survey.adopted);
                if survey.adopted.claim.is_none() && seen.asks_storage {
                    survey.adopted.hold = Some(Hold::Refused);
                }
            }
            // What nobody holds any more (its server deleted) goes back all the same.
            hand_back(server, None, seen, &mut survey.writes);
            return survey;
        }
    };
    storage(server, requests, seen, &mut survey, at);
    networking(server, requests, seen, &mut survey, at);
    survey
}

fn storage(server: &Server<'_>, requests: &Requests, seen: &Seen, survey: &mut Survey, at: &str) {
    let source = match (&requests.storage, seen.has_storage) {
        (Some(source), true) => source,
        (Some(source), false) => {
            survey.adopted.said.push(Said::new(
                ConditionType::StorageAdopted,
                false,
                Reason::NoStorageToAdoptInto,
                format!(
                    "ogx.io/adopt-storage names {source}, but spec.workload.storage is not set, so there is nowhere to mount its volume: nothing was taken"
                ),
            ));
            return;
        }
        // Found by its labels, whatever the status says (it may be lost or older).
        (None, true) => return kept_volume(server, seen, &mut survey.adopted),
        (None, false) => return,
    };
    let claim_name = pvc_name(source);
    let read = seen.storage.clone().unwrap_or_default();
    let claim = read.claim.as_ref();
    let free = claim.is_some_and(|c| !c.labels.iter().flatten().any(|(k, _)| k == ADOPTED_FROM));
    let pods = match free {
        true => read
            .pods
            .iter()
            .filter(|pod| pod.may_write(source, &claim_name))
            .count(),
        false => 0,
    };
    let step = storage_step(
        server.name,
        source,
        StorageSeen {
            claim,
            replicas: read.deployment.as_ref().map(|d| d.replicas),
            deployment: read.deployment.as_ref().map(|d| &d.meta),
            pods,
        },
    );
    match (&step, claim, &read.deployment) {
        (StorageStep::ScaleDown, _, Some(deployment)) => survey.writes.push(Write {
            kind: Kind::Deployment,
            name: source.clone(),
            // With the version read: the check that it is the old stack's holds at the write.
            // Labelled, with the replicas before, so that an abandoned take gives them back.
            patch: json!({
                "metadata": {
                    "resourceVersion": deployment.meta.resource_version,
                    "labels": {SCALED_DOWN_BY: server.owner.uid},
                    "annotations": {
                        REPLICAS_BEFORE: deployment.replicas.unwrap_or(1).to_string(),
                        SCALED_DOWN_FOR: server.name,
                    },
                },
                "spec": {"replicas": 0},
            }),
            takes: true,
        }),
        (StorageStep::Detach, Some(meta), deployment) => {
            survey.writes.push(Write {
                kind: Kind::Claim,
                name: claim_name.clone(),
                patch: detach_patch(meta, server.name, source, at),
                takes: true,
            });
            // The volume changed hands: the scale-down is for good.
            if let Some(deployment) = deployment
                .as_ref()
                .filter(|d| scaled_down_by(&d.meta).is_some())
            {
                survey.writes.push(Write {
                    kind: Kind::Deployment,
                    name: source.clone(),
                    patch: json!({"metadata": {
                        "resourceVersion": deployment.meta.resource_version,
                        "labels": {SCALED_DOWN_BY: null},
                        "annotations": {REPLICAS_BEFORE: null, SCALED_DOWN_FOR: null},
                    }}),
                    takes: true,
                });
            }
        }
        _ => {}
    }
    let adopted = &mut survey.adopted;
    if matches!(step, StorageStep::Taken | StorageStep::Detach) {
        adopted.claim = Some(claim_name);
    }
    adopted.hold = step.hold();
    adopted.said.push(storage_said(source, &step));
}

/// With no readable annotation naming a volume, the one taken before is found by its labels and
/// stays mounted (the OGX operator's rule: data outlives the annotation).
fn kept_volume(server: &Server<'_>, seen: &Seen, adopted: &mut Adopted) {
    let name = server.name;
    match seen.claims_taken.as_slice() {
        [one] => {
            adopted.claim = Some(one.clone());
            adopted.said.push(Said::new(
                ConditionType::StorageAdopted,
                true,
                Reason::StorageAdopted,
                format!("PVC {one} adopted"),
            ));
        }
        // Nothing was ever taken, or what was is gone: said only when it had been said before.
        [] if was_true(server.previous, ConditionType::StorageAdopted) => {
            adopted.said.push(Said::new(
                ConditionType::StorageAdopted,
                false,
                Reason::AdoptionSourceNotFound,
                format!(
                    "no PVC labelled {ADOPTED_FROM} for {name} is left: the server has a volume of its own"
                ),
            ));
        }
        [] => {}
        several => {
            adopted
                .said
                .retain(|s| s.condition != ConditionType::AdoptionConfigInvalid);
            adopted.said.extend(config_said(
                server.previous,
                Some(&format!(
                    "several PVCs are labelled {ADOPTED_FROM} for {name} ({}): remove the label from all but one",
                    several.join(", ")
                )),
            ));
            adopted.hold = Some(Hold::Refused);
        }
    }
}

fn networking(
    server: &Server<'_>,
    requests: &Requests,
    seen: &Seen,
    survey: &mut Survey,
    at: &str,
) {
    let requested = requests.networking.as_deref();
    let handed = hand_back(server, Some(requests), seen, &mut survey.writes);
    let Some(source) = requested else {
        if handed.returned > 0
            || !handed.kept.is_empty()
            || was_true(server.previous, ConditionType::NetworkingAdopted)
        {
            survey.adopted.said.push(removed_said(&handed));
        }
        return;
    };
    let read = seen.networking.clone().unwrap_or_default();
    let service = read.service.as_ref();
    let service_step = transfer_step(service.map(|(meta, _)| meta), source, server.owner);
    let ingress_step = transfer_step(read.ingress.as_ref(), source, server.owner);
    if let (TransferStep::Transfer, Some((meta, selector))) = (&service_step, service) {
        let mut patch = transfer_patch(meta, source, server.owner, at);
        patch["spec"] = selector_patch(selector, server.selector)["spec"].take();
        survey.writes.push(Write {
            kind: Kind::Service,
            name: service_name(source),
            patch,
            takes: true,
        });
    }
    if let (TransferStep::Transfer, Some(meta)) = (&ingress_step, &read.ingress) {
        survey.writes.push(Write {
            kind: Kind::Ingress,
            name: ingress_name(source),
            patch: transfer_patch(meta, source, server.owner, at),
            takes: true,
        });
    }
    survey
        .adopted
        .said
        .extend(networking_said(source, [&service_step, &ingress_step]));
}

/// What the hand-back of the held objects came to.
#[derive(Debug, Default)]
struct Handed {
    /// How many are handed back.
    returned: usize,
    /// The objects kept because the stack they were taken from no longer exists.
    kept: Vec<String>,
}

/// The server uid an old Deployment was scaled down by, if one was ([`SCALED_DOWN_BY`]).
fn scaled_down_by(meta: &ObjectMeta) -> Option<&str> {
    meta.labels
        .as_ref()?
        .get(SCALED_DOWN_BY)
        .map(String::as_str)
}

/// Plans handing back what this server holds that no annotation asks for now (the annotation
/// removed, or naming another stack): every Service and Ingress, to a stack that still exists
/// (one whose stack is gone stays this server's, serving its Pods, rather than select nothing),
/// and the replicas of an old Deployment it scaled down for a volume it did not take.
fn hand_back(
    server: &Server<'_>,
    requests: Option<&Requests>,
    seen: &Seen,
    writes: &mut Vec<Write>,
) -> Handed {
    let mut handed = Handed::default();
    if let Some(requests) = requests {
        give_replicas_back(server, requests, seen, writes);
    }
    let uid = &server.owner.uid;
    for Held { kind, meta } in seen.held.iter().filter(|h| h.kind != Kind::Deployment) {
        let source = meta.labels.as_ref().and_then(|l| l.get(ADOPTED_FROM));
        let (Some(name), Some(source)) = (meta.name.as_ref(), source) else {
            continue;
        };
        if !may_hand_back(meta, source, uid, requests) {
            continue;
        }
        // Taken from a stack of its own name (moved in place since): it is its own again
        // (with annotations it can read).
        let its_own = requests.is_some() && *source == server.name;
        if !seen.live_sources.contains(source) && !its_own {
            handed.kept.push(name.clone());
            continue;
        }
        writes.push(Write {
            kind: *kind,
            name: name.clone(),
            patch: hand_back_patch(meta, source, *kind == Kind::Service),
            takes: false,
        });
        handed.returned += 1;
    }
    handed
}

/// Plans giving the replicas back to every old Deployment scaled down for a volume that did not
/// change hands: this server's own scale-down no longer asked for, or one of a server since
/// deleted (nobody else would give them back while another server names the stack).
fn give_replicas_back(
    server: &Server<'_>,
    requests: &Requests,
    seen: &Seen,
    writes: &mut Vec<Write>,
) {
    for Held { meta, .. } in seen.held.iter().filter(|h| h.kind == Kind::Deployment) {
        let (Some(name), Some(by)) = (meta.name.as_ref(), scaled_down_by(meta)) else {
            continue;
        };
        let orphaned = by != server.owner.uid && !seen.live_servers.contains(by);
        if (by != server.owner.uid && !orphaned) || requests.storage.as_ref() == Some(name) {
            continue;
        }
        let before = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(REPLICAS_BEFORE));
        let replicas = before.and_then(|r| r.parse::<i32>().ok()).unwrap_or(1);
        writes.push(Write {
            kind: Kind::Deployment,
            name: name.clone(),
            patch: json!({
                "metadata": {
                    "resourceVersion": meta.resource_version,
                    "labels": {SCALED_DOWN_BY: null},
                    "annotations": {REPLICAS_BEFORE: null, SCALED_DOWN_FOR: null},
                },
                "spec": {"replicas": replicas},
            }),
            takes: false,
        });
    }
}

/// Whether the Service or Ingress `meta`, taken from the stack `source`, is the server
/// `server_uid`'s to hand back, its annotations read as `requests` (`None`: they cannot be
/// read). An orphan always (the server that took it was deleted and the garbage collector
/// removed its reference; it still selects that server's Pods, and the stack it was taken from
/// stands down while another server names it, so nobody else would give it back); one this
/// server controls once no annotation it can read asks for `source` (unreadable, nothing it
/// holds is let go). The shell reads whether `source` still exists for exactly these.
pub fn may_hand_back(
    meta: &ObjectMeta,
    source: &str,
    server_uid: &str,
    requests: Option<&Requests>,
) -> bool {
    let asked = |r: &Requests| r.networking.as_deref() == Some(source);
    controller_of(meta).is_none()
        || (controlled_by(meta, server_uid) && requests.is_some_and(|r| !asked(r)))
}

fn removed_said(handed: &Handed) -> Said {
    let message = match handed.kept.as_slice() {
        [] => "Adoption annotation removed: the adopted Service and Ingress were handed back (the Service selects the old stack's Pods again, at the same address)".to_owned(),
        kept => format!(
            "Adoption annotation removed: {} stay this server's, serving its Pods at the same address, because the stack they were taken from no longer exists; delete them when no client uses that address",
            kept.join(", ")
        ),
    };
    Said::new(
        ConditionType::NetworkingAdopted,
        false,
        Reason::AdoptionAnnotationRemoved,
        message,
    )
}
