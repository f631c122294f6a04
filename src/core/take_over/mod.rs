//! Taking over another stack's objects, as data: what was read ([`seen::Seen`]), the writes it
//! comes to ([`survey::survey`]) and which of them a decision keeps ([`decided`]). The reads and
//! the writes themselves are the controller's (`controller::act::take_over`); the next step for
//! each object is [`super::adoption`]'s.

#[cfg(test)]
mod road;
pub mod seen;
pub mod survey;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::adoption::{ADOPTED_AT, ADOPTED_FROM, Adopted, Hold, Said};
use super::door::Door;
use super::stack::Stack;
use crate::api::conditions::{ConditionType, Reason};
use crate::naming::DESIRED_HASH;
use crate::ownership::{controlled_by, owned_by_stack};

/// The kinds taking over writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The old stack's Deployment (scaled to zero).
    Deployment,
    /// The old stack's volume (detached).
    Claim,
    /// A Service (taken, or handed back).
    Service,
    /// An Ingress (taken, or handed back).
    Ingress,
}

/// One write taking over needs: a merge patch of one object.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    /// Of what kind.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// The merge patch.
    pub patch: Value,
    /// Whether it takes something from the old stack (made only once the server's decision
    /// holds); a hand-back gives something back, and is made whatever the server's state.
    pub takes: bool,
}

/// What taking over came to, read but not yet written.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    /// The conditions and the volume to mount, as they will be once the writes are made.
    pub adopted: Adopted,
    /// The writes.
    pub writes: Vec<Write>,
}

/// What taking over comes to once the server's own decision is known (pure; `decide` asks it):
/// every write of `survey` when the server `runs` and the volume asked for can be taken, the
/// Service and Ingress only once it is `serving` (an available replica of the revision it runs,
/// and none about to roll: a server that never starts, for a quota without room or an image
/// that never pulls, must not take the old address). Otherwise nothing is taken from the old
/// stack (a hand-back is still made: it gives something back), the conditions say why, and
/// the claim to be detached is not mounted. A server that cannot run holds nothing of its own
/// here (its decision already does); a refused volume holds the server, and takes neither the
/// volume nor the address.
pub fn decided(survey: &Survey, runs: bool, serving: bool) -> Survey {
    let refused = survey.adopted.hold == Some(Hold::Refused);
    let mut decided = survey.clone();
    if runs && !refused {
        if !serving {
            wait_for_the_server(&mut decided);
        }
        return decided;
    }
    if !runs {
        decided.adopted.hold = None;
    }
    let (takes, kept): (Vec<Write>, Vec<Write>) = decided.writes.drain(..).partition(|w| w.takes);
    decided.writes = kept;
    let taken: Vec<Kind> = takes.iter().map(|w| w.kind).collect();
    let why = match runs {
        false => {
            "nothing is taken while this server cannot run (its other conditions say why): the old stack keeps serving as it is"
        }
        true => {
            "nothing is taken while the volume cannot be taken (StorageAdopted or AdoptionConfigInvalid says why): the old stack keeps serving as it is"
        }
    };
    let waits = |condition: ConditionType| {
        Said::new(condition, false, Reason::AdoptionDeferred, why.to_owned())
    };
    let mut deferred = Vec::new();
    if taken
        .iter()
        .any(|k| matches!(k, Kind::Deployment | Kind::Claim))
    {
        deferred.push(ConditionType::StorageAdopted);
    }
    if taken
        .iter()
        .any(|k| matches!(k, Kind::Service | Kind::Ingress))
    {
        deferred.push(ConditionType::NetworkingAdopted);
    }
    for condition in deferred {
        decided.adopted.said.retain(|s| s.condition != condition);
        decided.adopted.said.push(waits(condition));
    }
    if taken.contains(&Kind::Claim) {
        decided.adopted.claim = None;
    }
    decided
}

/// Drops the takes of the Service and Ingress until the server serves; says so.
fn wait_for_the_server(decided: &mut Survey) {
    let (waiting, kept): (Vec<Write>, Vec<Write>) = decided
        .writes
        .drain(..)
        .partition(|w| w.takes && matches!(w.kind, Kind::Service | Kind::Ingress));
    decided.writes = kept;
    if waiting.is_empty() {
        return;
    }
    let names: Vec<&str> = waiting.iter().map(|w| w.name.as_str()).collect();
    let condition = ConditionType::NetworkingAdopted;
    decided.adopted.said.retain(|s| s.condition != condition);
    decided.adopted.said.push(Said::new(
        condition,
        false,
        Reason::WaitingForServer,
        format!(
            "{} taken once this server has an available replica of the revision it runs: until then the old stack's Pods serve there",
            names.join(" and ")
        ),
    ));
}

/// Whether the stack's own Deployment (`current`) has an available replica and this reconcile
/// leaves it as it is (no rollout begins: the `desired` Deployment's hash is the one running, or
/// the running one is `kept`): only then does it take another stack's address.
pub fn serves_as_is(
    stack: &Stack<'_>,
    current: Option<&Deployment>,
    (desired, kept): (&Deployment, bool),
) -> bool {
    let Some(current) = current.filter(|d| controlled_by(&d.metadata, &stack.subject.uid)) else {
        return false;
    };
    let available = current
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .is_some_and(|n| n > 0);
    let hash = |meta: &ObjectMeta| meta.annotations.as_ref()?.get(DESIRED_HASH).cloned();
    let unchanged =
        kept || hash(&current.metadata).is_some_and(|h| Some(h) == hash(&desired.metadata));
    available && unchanged
}

/// The patch that gives the stack `name`, moved in place, its own Service back where another
/// server had taken it (`ogx.io/adopted-from`) and was deleted since: selecting the stack's
/// Pods again, unlabelled. The move hands the Service over whatever the server's decision, and
/// its apply (which would set the selector too) may wait on it: the address must not select a
/// deleted server's Pods meanwhile.
pub fn service_back_patch(name: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {
            "labels": {ADOPTED_FROM: null},
            "annotations": {ADOPTED_AT: null},
        },
        "spec": {"selector": crate::naming::selector_labels(name)},
    })
}

/// Whether the `OGXServer` reconciled as `stack` moves in place: the LlamaStackDistribution of its
/// name still owns its Deployment or its data volume (`deployment` and `claim`, as read) and the
/// server does not control it yet, so every such object is handed over before anything else is
/// written (once per move: the hand-over's lists are made only then). Owned and not controlled
/// counts too: a volume the garbage collector would delete with the LlamaStackDistribution
/// (an undone move leaves it so) must be the server's before that can happen.
pub fn moves_in_place(
    stack: &Stack<'_>,
    deployment: Option<&Deployment>,
    claim: Option<&PersistentVolumeClaim>,
) -> bool {
    let Door::OgxServer { .. } = stack.door else {
        return false;
    };
    let deployment = deployment.map(|d| &d.metadata);
    let claim = claim.map(|c| &c.metadata);
    [deployment, claim]
        .into_iter()
        .flatten()
        .any(|meta| owned_by_stack(meta, stack.name()) && !controlled_by(meta, &stack.subject.uid))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Only an `OGXServer` moves in place, and only while the LlamaStackDistribution of its own
    /// name controls its Deployment or its data volume: a stranger's objects, another stack's,
    /// or ones already handed over start no hand-over.
    #[test]
    fn a_move_in_place_is_an_ogx_server_over_its_namesakes_objects() {
        use crate::api::v1alpha2::LlamaStackDistribution;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

        let model: LlamaStackDistribution = serde_json::from_value(json!({
            "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s", "namespace": "ns", "uid": "u"},
            "spec": {"distribution": {"name": "starter"}}}))
        .unwrap();
        let controlled_by = |kind: &str, api_version: &str, name: &str| ObjectMeta {
            owner_references: Some(vec![
                serde_json::from_value(json!({"apiVersion": api_version, "kind": kind,
                    "name": name, "uid": "old", "controller": true}))
                .unwrap(),
            ]),
            ..ObjectMeta::default()
        };
        let deployment = |meta: ObjectMeta| Deployment {
            metadata: meta,
            ..Deployment::default()
        };
        let claim = |meta: ObjectMeta| PersistentVolumeClaim {
            metadata: meta,
            ..PersistentVolumeClaim::default()
        };
        let llsd = |name| controlled_by("LlamaStackDistribution", "llamastack.io/v1alpha2", name);
        let ogx = Stack::read_through(
            crate::core::stack::Model::of(&model),
            Door::OgxServer { metrics_port: None },
        )
        .unwrap();
        let llsd_door = Stack::read(&model).unwrap();
        let namesakes = deployment(llsd("s"));
        assert!(moves_in_place(&ogx, Some(&namesakes), None));
        assert!(moves_in_place(&ogx, None, Some(&claim(llsd("s")))));
        assert!(
            !moves_in_place(&llsd_door, Some(&namesakes), None),
            "the LLSD door"
        );
        assert!(!moves_in_place(
            &ogx,
            Some(&deployment(llsd("other"))),
            None
        ));
        let handed = deployment(controlled_by("OGXServer", "ogx.io/v1beta1", "s"));
        assert!(
            !moves_in_place(&ogx, Some(&handed), None),
            "already handed over"
        );
        assert!(!moves_in_place(&ogx, None, None));
    }

    fn write(kind: Kind, takes: bool) -> Write {
        Write {
            kind,
            name: "old".to_owned(),
            patch: json!({}),
            takes,
        }
    }

    fn said(condition: ConditionType, reason: Reason) -> Said {
        Said::new(condition, true, reason, String::new())
    }

    /// What a blocked server says of each take it would have made, and what it still does.
    #[test]
    fn a_server_that_cannot_run_defers_every_take_and_keeps_every_hand_back() {
        // The writes surveyed, what each condition then says, and whether the claim is mounted.
        type Case<'a> = (&'a [Write], &'a [(ConditionType, Reason)], bool);
        let cases: [Case<'_>; 5] = [
            // The old Deployment to be scaled down: the volume waits.
            (
                &[write(Kind::Deployment, true)],
                &[(ConditionType::StorageAdopted, Reason::AdoptionDeferred)],
                true,
            ),
            // The claim to be detached: not mounted either.
            (
                &[write(Kind::Claim, true)],
                &[(ConditionType::StorageAdopted, Reason::AdoptionDeferred)],
                false,
            ),
            // The Service and Ingress to be re-pointed.
            (
                &[write(Kind::Service, true), write(Kind::Ingress, true)],
                &[(ConditionType::NetworkingAdopted, Reason::AdoptionDeferred)],
                true,
            ),
            // Both annotations.
            (
                &[write(Kind::Deployment, true), write(Kind::Service, true)],
                &[
                    (ConditionType::StorageAdopted, Reason::AdoptionDeferred),
                    (ConditionType::NetworkingAdopted, Reason::AdoptionDeferred),
                ],
                true,
            ),
            // A hand-back is no take: what it says stands.
            (
                &[write(Kind::Service, false)],
                &[(
                    ConditionType::NetworkingAdopted,
                    Reason::AdoptionAnnotationRemoved,
                )],
                true,
            ),
        ];
        for (writes, expected, claim_kept) in cases {
            let survey = Survey {
                adopted: Adopted {
                    claim: Some("old-pvc".to_owned()),
                    said: vec![
                        said(ConditionType::StorageAdopted, Reason::StorageAdopted),
                        said(
                            ConditionType::NetworkingAdopted,
                            Reason::AdoptionAnnotationRemoved,
                        ),
                    ],
                    hold: Some(Hold::Waiting),
                },
                writes: writes.to_vec(),
            };
            let blocked = decided(&survey, false, true);
            for (condition, reason) in expected {
                let now: Vec<&Said> = blocked
                    .adopted
                    .said
                    .iter()
                    .filter(|s| s.condition == *condition)
                    .collect();
                assert_eq!(now.len(), 1, "{writes:?}: {now:?}");
                assert_eq!(now[0].reason, *reason, "{writes:?}");
                if *reason == Reason::AdoptionDeferred {
                    assert!(!now[0].ok);
                }
            }
            assert_eq!(blocked.adopted.claim.is_some(), claim_kept, "{writes:?}");
            assert_eq!(blocked.adopted.hold, None, "the server's decision holds it");
            let hand_backs: Vec<Write> = writes.iter().filter(|w| !w.takes).cloned().collect();
            assert_eq!(blocked.writes, hand_backs, "only hand-backs are made");
            // A server that runs makes every write, and says what the survey said.
            let runs = decided(&survey, true, true);
            assert_eq!(runs.writes, writes, "{writes:?}");
            assert_eq!(runs.adopted.said, survey.adopted.said);
            assert_eq!(runs.adopted.hold, Some(Hold::Waiting));
        }
    }

    /// A server that runs but does not serve yet (no available replica of the revision it
    /// runs) takes the volume's steps but not the address; once it serves, it does.
    #[test]
    fn the_address_is_taken_only_from_a_server_that_serves() {
        let survey = Survey {
            adopted: Adopted {
                said: vec![said(
                    ConditionType::NetworkingAdopted,
                    Reason::NetworkingAdopted,
                )],
                ..Adopted::default()
            },
            writes: vec![
                write(Kind::Deployment, true),
                write(Kind::Service, true),
                write(Kind::Ingress, true),
                write(Kind::Service, false),
            ],
        };
        let waiting = decided(&survey, true, false);
        let kinds: Vec<(Kind, bool)> = waiting.writes.iter().map(|w| (w.kind, w.takes)).collect();
        assert_eq!(kinds, [(Kind::Deployment, true), (Kind::Service, false)]);
        let networking: Vec<&Said> = waiting
            .adopted
            .said
            .iter()
            .filter(|s| s.condition == ConditionType::NetworkingAdopted)
            .collect();
        assert_eq!(networking.len(), 1);
        assert_eq!(
            (networking[0].ok, networking[0].reason),
            (false, Reason::WaitingForServer)
        );
        assert_eq!(decided(&survey, true, true).writes, survey.writes);
        // A refused volume takes nothing, serving or not.
        let refused = Survey {
            adopted: Adopted {
                hold: Some(Hold::Refused),
                ..survey.adopted.clone()
            },
            writes: vec![write(Kind::Service, true)],
        };
        assert!(decided(&refused, true, true).writes.is_empty());
    }
}
