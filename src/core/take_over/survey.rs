//! What taking over comes to, from what was seen ([`Seen`]): every take, hand-back and hold of
//! one `OGXServer`, as writes not yet made ([`survey`]). Pure; the shell reads before and writes
//! after, and [`super::decided`] keeps the takes only where the server will run.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference};
use serde_json::json;

use super::seen::{Held, OldDeployment, Seen, other_writers};
use super::{Kind, Survey, Write};
use crate::api::conditions::{ConditionType, Reason};
use crate::core::adoption::{
    ADOPTED_FROM, Adopted, Hold, REPLICAS_BEFORE, Requests, SCALED_DOWN_BY, SCALED_DOWN_FOR, Said,
    StorageSeen, StorageStep, TransferStep, config_said, detach_patch, hand_back_patch,
    networking_said, reclaim_patch, selector_patch, storage_said, storage_step, transfer_patch,
    transfer_step, was_true,
};
use crate::core::subject::stack_controller;
use crate::naming::{ingress_name, labels, pvc_name, service_name};
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
    give_claims_back(server, requests, seen, &mut survey);
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
    survey.writes.extend(storage_writes(
        server,
        source,
        &step,
        (claim, &read.deployment),
        at,
    ));
    let adopted = &mut survey.adopted;
    if matches!(step, StorageStep::Taken | StorageStep::Detach) {
        adopted.claim = Some(claim_name);
    }
    adopted.hold = step.hold();
    adopted.said.push(storage_said(source, &step));
}

/// The writes of the volume's `step` for the stack `source` (its claim and Deployment as read):
/// the old Deployment scaled to zero (labelled, with the replicas before, so an abandoned take
/// gives them back), or the claim detached and the scale-down made for good.
fn storage_writes(
    server: &Server<'_>,
    source: &str,
    step: &StorageStep,
    (claim, deployment): (Option<&ObjectMeta>, &Option<OldDeployment>),
    at: &str,
) -> Vec<Write> {
    let claim_name = pvc_name(source);
    let mut writes = Vec::new();
    match (step, claim, deployment) {
        (StorageStep::ScaleDown, _, Some(deployment)) => writes.push(Write {
            kind: Kind::Deployment,
            name: source.to_owned(),
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
            writes.push(Write {
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
                writes.push(Write {
                    kind: Kind::Deployment,
                    name: source.to_owned(),
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
    writes
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
    let addresses = seen
        .held
        .iter()
        .filter(|h| matches!(h.kind, Kind::Service | Kind::Ingress));
    for Held { kind, meta } in addresses {
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
        if !seen.live_sources.contains_key(source) && !its_own {
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

/// The stack the claim `meta` was taken from, when it is labelled as taken by the server
/// `server` and that server no longer asks for it (its annotations read as `requests`): it has
/// no volume to mount it in (`has_storage` false), or `ogx.io/adopt-storage` names another
/// stack. With a volume and no stack named, the claim taken before is the server's still (the
/// OGX operator's rule: data outlives the annotation). The shell reads whether the stack still
/// exists, and the namespace's Pods, for exactly these.
pub fn no_longer_asked<'a>(
    meta: &'a ObjectMeta,
    server: &str,
    requests: &Requests,
    has_storage: bool,
) -> Option<&'a str> {
    let labels = meta.labels.as_ref()?;
    let source = labels.get(ADOPTED_FROM)?;
    let taken_by_it = labels.get(labels::INSTANCE).map(String::as_str) == Some(server);
    if !taken_by_it || controller_of(meta).is_some() {
        return None;
    }
    let asked = has_storage
        && requests
            .storage
            .as_ref()
            .is_none_or(|named| named == source);
    (!asked).then_some(source.as_str())
}

/// Plans giving every claim this server took and no longer asks for ([`no_longer_asked`]) back
/// to the stack it was taken from, as it was before the take (its controller, its instance
/// label), once nothing of the server's may write it: its Deployment does not mount it and no
/// Pod that may still run does (one writer per volume). The stack then mounts its own data
/// again; without this the claim would stay labelled for a server that never mounts it, the
/// stack would refuse to mount it while that server exists, and nobody would own it. One whose
/// stack is gone stays as it is (the data is kept; the server mounts it again if it is given a
/// volume and no annotation names another). Said under `StorageAdopted` unless the storage's
/// own step said something already.
fn give_claims_back(server: &Server<'_>, requests: &Requests, seen: &Seen, survey: &mut Survey) {
    let claims = seen.held.iter().filter(|h| h.kind == Kind::Claim);
    for Held { meta, .. } in claims {
        let name = meta.name.as_deref().unwrap_or_default();
        let Some(source) = no_longer_asked(meta, server.name, requests, seen.has_storage) else {
            continue;
        };
        let writers = other_writers(&seen.pods, source, name);
        let message = if seen.mounted.iter().any(|m| m == name) || writers > 0 {
            format!(
                "PVC {name}, taken from {source}, is no longer asked for: it goes back to {source} once no Pod of this server mounts it"
            )
        } else if let Some(uid) = seen.live_sources.get(source) {
            survey.writes.push(Write {
                kind: Kind::Claim,
                name: name.to_owned(),
                patch: reclaim_patch(meta, source, &stack_controller(source, uid)),
                takes: false,
            });
            format!(
                "PVC {name} is no longer asked for: it was given back to {source}, which it was taken from"
            )
        } else {
            format!(
                "PVC {name} is no longer asked for, and {source}, which it was taken from, no longer exists: it stays, labelled {ADOPTED_FROM}, with its data. Delete it when that data is no longer needed"
            )
        };
        let said = &mut survey.adopted.said;
        if !said
            .iter()
            .any(|s| s.condition == ConditionType::StorageAdopted)
        {
            said.push(Said::new(
                ConditionType::StorageAdopted,
                false,
                Reason::AdoptionAnnotationRemoved,
                message,
            ));
        }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::core::take_over::seen::PodSeen;

    /// A claim `old-pvc` taken from `old` for the server `new`.
    fn taken_claim() -> ObjectMeta {
        serde_json::from_value(json!({"name": "old-pvc", "resourceVersion": "9",
            "labels": {ADOPTED_FROM: "old", "app.kubernetes.io/instance": "new"},
            "annotations": {crate::core::adoption::ADOPTED_AT: "2026-12-06T00:00:00Z"}}))
        .unwrap()
    }

    /// When a claim taken for a server goes back to the stack it was taken from: only once the
    /// server no longer asks for it (no volume, or another stack named), nothing of the server's
    /// may write it, and the stack still exists; each case says why under `StorageAdopted`.
    #[test]
    fn a_claim_no_longer_asked_for_goes_back_once_nothing_of_the_server_writes_it() {
        let owner = OwnerReference {
            api_version: "ogx.io/v1beta1".to_owned(),
            kind: "OGXServer".to_owned(),
            name: "new".to_owned(),
            uid: "u-new".to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let selector = crate::naming::selector_labels("new");
        let server = Server {
            name: "new",
            owner: &owner,
            selector: &selector,
            previous: &[],
        };
        let running = |instance: &str, claims: &[&str], phase: &str| PodSeen {
            phase: Some(phase.to_owned()),
            instance: Some(instance.to_owned()),
            claims: claims.iter().map(|c| (*c).to_owned()).collect(),
        };
        // (case, volume, adopt-storage, mounted by the server, Pods, the stack lives,
        //  given back, what StorageAdopted says of it)
        type Case<'a> = (
            &'a str,
            bool,
            Option<&'a str>,
            bool,
            Vec<PodSeen>,
            bool,
            bool,
            &'a str,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "no volume any more",
                false,
                Some("old"),
                false,
                vec![],
                true,
                true,
                "given back to old",
            ),
            (
                "another stack named",
                true,
                Some("other"),
                false,
                vec![],
                true,
                true,
                "given back",
            ),
            (
                "a volume, no stack named: kept",
                true,
                None,
                false,
                vec![],
                true,
                false,
                "",
            ),
            (
                "a volume, its stack named: kept",
                true,
                Some("old"),
                false,
                vec![],
                true,
                false,
                "",
            ),
            (
                "still mounted by the Deployment",
                false,
                None,
                true,
                vec![],
                true,
                false,
                "once no Pod",
            ),
            (
                "a Pod of the server still on it",
                false,
                None,
                false,
                vec![running("new", &["old-pvc"], "Running")],
                true,
                false,
                "once no Pod",
            ),
            (
                "a finished Job's Pod does not count",
                false,
                None,
                false,
                vec![running("backup", &["old-pvc"], "Succeeded")],
                true,
                true,
                "given back",
            ),
            (
                "the stack is gone: kept with its data",
                false,
                None,
                false,
                vec![],
                false,
                false,
                "no longer exists",
            ),
        ];
        for (case, has_storage, storage, mounted, pods, lives, given, says) in cases {
            let seen = Seen {
                requests: Ok(Requests {
                    storage: storage.map(str::to_owned),
                    networking: None,
                }),
                has_storage,
                held: vec![Held {
                    kind: Kind::Claim,
                    meta: taken_claim(),
                }],
                live_sources: lives
                    .then(|| ("old".to_owned(), "u-old".to_owned()))
                    .into_iter()
                    .collect(),
                mounted: mounted.then(|| "old-pvc".to_owned()).into_iter().collect(),
                pods,
                ..Seen::default()
            };
            let mut survey = Survey::default();
            give_claims_back(&server, seen.requests.as_ref().unwrap(), &seen, &mut survey);
            let back: Vec<&Write> = survey
                .writes
                .iter()
                .filter(|w| w.kind == Kind::Claim)
                .collect();
            assert_eq!(
                back.len(),
                usize::from(given),
                "{case}: {:?}",
                survey.writes
            );
            if let [write] = back.as_slice() {
                assert!(
                    !write.takes,
                    "{case}: a hand-back is made whatever the server's state"
                );
                let patch = &write.patch["metadata"];
                assert_eq!(patch["resourceVersion"], "9", "{case}");
                assert_eq!(
                    patch["labels"][ADOPTED_FROM],
                    serde_json::Value::Null,
                    "{case}"
                );
                assert_eq!(
                    patch["labels"]["app.kubernetes.io/instance"], "old",
                    "{case}"
                );
                let controller = &patch["ownerReferences"][0];
                assert_eq!(
                    (
                        &controller["kind"],
                        &controller["name"],
                        &controller["uid"],
                        &controller["controller"]
                    ),
                    (
                        &json!("LlamaStackDistribution"),
                        &json!("old"),
                        &json!("u-old"),
                        &json!(true)
                    ),
                    "{case}"
                );
            }
            let said: Vec<&Said> = survey
                .adopted
                .said
                .iter()
                .filter(|s| s.condition == ConditionType::StorageAdopted)
                .collect();
            match says {
                "" => assert!(said.is_empty(), "{case}: {said:?}"),
                words => {
                    assert_eq!(said.len(), 1, "{case}: {said:?}");
                    assert!(
                        !said[0].ok && said[0].message.contains(words),
                        "{case}: {said:?}"
                    );
                }
            }
        }
        // Unreadable annotations let nothing go.
        let unreadable = Seen {
            requests: Err("ogx.io/adopt-storage: not a name".to_owned()),
            held: vec![Held {
                kind: Kind::Claim,
                meta: taken_claim(),
            }],
            live_sources: [("old".to_owned(), "u-old".to_owned())].into(),
            ..Seen::default()
        };
        let surveyed = survey(&server, &unreadable, "2026-12-06T00:00:00Z");
        assert!(surveyed.writes.is_empty(), "{:?}", surveyed.writes);
        // Another server's claim, or one with a controller, is not this one's to give.
        let mut others = taken_claim();
        others
            .labels
            .as_mut()
            .unwrap()
            .insert("app.kubernetes.io/instance".to_owned(), "third".to_owned());
        let none = Requests::default();
        assert_eq!(no_longer_asked(&others, "new", &none, false), None);
        let mut controlled = taken_claim();
        controlled.owner_references = Some(vec![owner.clone()]);
        assert_eq!(no_longer_asked(&controlled, "new", &none, false), None);
        assert_eq!(
            no_longer_asked(&taken_claim(), "new", &none, false),
            Some("old")
        );
    }
}
