//! Taking over another stack's objects, as data: the writes a survey found and which of them
//! a decision keeps ([`decided`]). The reads and the writes themselves are the controller's
//! (`controller::take_over`); the next step for each object is [`super::adoption`]'s.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::Value;

use super::adoption::{Adopted, Said};
use super::door::Door;
use super::stack::Stack;
use crate::api::conditions::{ConditionType, Reason};
use crate::ownership::controlled_by_stack;

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
/// every write of `survey` when the server `runs`. Otherwise nothing is taken from the old stack
/// (a hand-back is still made: it gives something back), the conditions say why, the claim to be
/// detached is not mounted, and nothing holds the server's own objects (its decision already
/// does).
pub fn decided(survey: &Survey, runs: bool) -> Survey {
    if runs {
        return survey.clone();
    }
    let mut decided = survey.clone();
    decided.adopted.hold = None;
    let (takes, kept): (Vec<Write>, Vec<Write>) = decided.writes.drain(..).partition(|w| w.takes);
    decided.writes = kept;
    let taken: Vec<Kind> = takes.iter().map(|w| w.kind).collect();
    let waits = |condition: ConditionType| {
        Said::new(
            condition,
            false,
            Reason::AdoptionDeferred,
            "nothing is taken while this server cannot run (its other conditions say why): the old stack keeps serving as it is".to_owned(),
        )
    };
    for (condition, kinds) in [
        (
            ConditionType::StorageAdopted,
            &[Kind::Deployment, Kind::Claim][..],
        ),
        (
            ConditionType::NetworkingAdopted,
            &[Kind::Service, Kind::Ingress][..],
        ),
    ] {
        if taken.iter().any(|k| kinds.contains(k)) {
            decided.adopted.said.retain(|s| s.condition != condition);
            decided.adopted.said.push(waits(condition));
        }
    }
    if taken.contains(&Kind::Claim) {
        decided.adopted.claim = None;
    }
    decided
}

/// Whether the `OGXServer` reconciled as `stack` moves in place: the LlamaStackDistribution of its
/// name still controls its Deployment or its data volume (`deployment` and `claim`, as read), so
/// every object that one controls is handed over before anything else is written (once per
/// move: the hand-over's lists are made only then).
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
        .any(|meta| controlled_by_stack(meta, stack.name))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::core::adoption::Hold;

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
        let ogx = Stack::read_through(&model, Door::OgxServer { metrics_port: None }).unwrap();
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
            let blocked = decided(&survey, false);
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
            let runs = decided(&survey, true);
            assert_eq!(runs.writes, writes, "{writes:?}");
            assert_eq!(runs.adopted.said, survey.adopted.said);
            assert_eq!(runs.adopted.hold, Some(Hold::Waiting));
        }
    }
}
