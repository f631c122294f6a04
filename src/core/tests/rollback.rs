use serde_json::{Value, json};

use super::*;
use crate::api::v1alpha2::LlamaStackDistribution;

/// The instant every judgement here is made at.
const AT: jiff::Timestamp = jiff::Timestamp::constant(1_764_374_400, 0);

/// [`super::judge`] at [`AT`]; and where [`judges_pods`] says the Pods are not looked at (so
/// they are not listed), the same judgement without them.
fn judge(stack: &Stack<'_>, deployment: &Deployment, pods: &[Pod]) -> Judgement {
    let verdict = super::judge(stack, deployment, pods, AT);
    if !judges_pods(stack, deployment) {
        assert_eq!(
            super::judge(stack, deployment, &[], AT),
            verdict,
            "judged without its Pods, as when they are not listed"
        );
    }
    verdict
}

/// The view the rollback judgement takes.
fn view(cr: &LlamaStackDistribution) -> Stack<'_> {
    Stack::read(cr).unwrap()
}

const GOOD: &str = "hash-good";
const BAD: &str = "hash-bad";

/// A stack at generation 3 with `spec` and the rollback memory `memory`.
fn stack(mut spec: Value, memory: Value) -> LlamaStackDistribution {
    spec["distribution"] = json!({"name": "starter"});
    serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u-1", "generation": 3},
        "spec": spec, "status": {"rollback": memory}}),
    )
    .unwrap()
}

fn good_revision() -> Value {
    json!({"desiredHash": GOOD, "image": "reg/img@sha256:aa", "configMap": "s-config-good"})
}

/// A stack whose last Ready revision is the good one.
fn remembering(spec: Value) -> LlamaStackDistribution {
    stack(spec, json!({"lastReady": good_revision()}))
}

/// The Deployment running revision `hash`, wanting `replicas`, with `status`.
fn deployment(hash: &str, replicas: i32, status: Value) -> Deployment {
    serde_json::from_value(json!({"metadata": {"name": "s", "generation": 5,
            "annotations": {DESIRED_HASH: hash}},
        "spec": {"replicas": replicas, "selector": {}, "template": {"spec": {
            "containers": [{"name": "llama-stack", "image": format!("reg/img@sha256:{hash}")}],
            "volumes": [{"name": "config", "configMap": {"name": format!("s-config-{hash}")}}]}}},
        "status": status}))
    .unwrap()
}

/// Status of a rollout of generation 5: one new Pod, not ready, and `old` Pods of an older
/// revision serving.
fn rolling(old: i32) -> Value {
    json!({"observedGeneration": 5, "replicas": 1 + old, "updatedReplicas": 1, "availableReplicas": old})
}

fn complete() -> Value {
    json!({"observedGeneration": 5, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1})
}

fn crash_looping() -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "s-new"}, "status": {"containerStatuses": [{
        "name": "llama-stack", "image": "i", "imageID": "", "ready": false, "restartCount": 2,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "message": "max_tokens: not a valid integer"}}}]}}))
    .unwrap()
}

fn pulling() -> Pod {
    serde_json::from_value(
        json!({"metadata": {"name": "s-new"}, "status": {"containerStatuses": [{
        "name": "llama-stack", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}]}}),
    )
    .unwrap()
}

fn rejected_reason(verdict: Judgement) -> String {
    match verdict {
        Judgement::RollBack { rejected, .. } => rejected.reason,
        other => panic!("expected a rollback, got {other:?}"),
    }
}

#[test]
fn a_revision_with_every_replica_ready_is_remembered_once() {
    let fresh = stack(json!({}), json!({}));
    let verdict = judge(&view(&fresh), &deployment(BAD, 1, complete()), &[]);
    assert_eq!(
        verdict,
        Judgement::Ready(RevisionStatus {
            desired_hash: BAD.to_owned(),
            image: format!("reg/img@sha256:{BAD}"),
            config_map: Some(format!("s-config-{BAD}")),
        })
    );
    let known = remembering(json!({}));
    assert_eq!(
        judge(&view(&known), &deployment(GOOD, 1, complete()), &[]),
        Judgement::Steady
    );
    assert_eq!(
        judge(&view(&known), &deployment(BAD, 0, complete()), &[]),
        Judgement::Steady,
        "a stack scaled to zero proves nothing about its revision"
    );
}

#[test]
fn a_crash_loop_with_nothing_serving_rolls_back_and_names_the_last_words() {
    let verdict = judge(
        &view(&remembering(json!({}))),
        &deployment(BAD, 1, rolling(0)),
        &[crash_looping()],
    );
    let Judgement::RollBack {
        rejected,
        last_ready,
    } = verdict
    else {
        panic!("expected a rollback, got {verdict:?}");
    };
    assert_eq!(rejected.revision.desired_hash, BAD);
    assert_eq!(rejected.revision.image, format!("reg/img@sha256:{BAD}"));
    assert_eq!(rejected.generation, 3);
    assert_eq!(rejected.reason, "ServerCrashLooping");
    assert_eq!(rejected.rejected_at, Some(Time(AT)), "rejected when judged");
    assert_eq!(last_ready.desired_hash, GOOD, "the revision to return to");
    assert!(
        rejected.message.contains("max_tokens: not a valid integer"),
        "{}",
        rejected.message
    );
}

#[test]
fn old_pods_serving_keep_serving_and_nothing_is_rolled_back() {
    let verdict = judge(
        &view(&remembering(json!({}))),
        &deployment(BAD, 1, rolling(1)),
        &[crash_looping()],
    );
    assert_eq!(verdict, Judgement::Steady);
}

#[test]
fn never_leaves_the_crash_loop_to_a_person() {
    let verdict = judge(
        &view(&remembering(json!({"workload": {"rollback": "Never"}}))),
        &deployment(BAD, 1, rolling(0)),
        &[crash_looping()],
    );
    assert_eq!(verdict, Judgement::Steady);
}

#[test]
fn the_pods_are_looked_at_only_when_a_rollback_is_due() {
    let crashing = deployment(BAD, 1, rolling(0));
    assert!(judges_pods(&view(&remembering(json!({}))), &crashing));
    let not_due = [
        (
            "the first revision",
            stack(json!({}), json!({})),
            crashing.clone(),
        ),
        (
            "replicas serving",
            remembering(json!({})),
            deployment(BAD, 1, rolling(1)),
        ),
        (
            "the rollout complete",
            remembering(json!({})),
            deployment(BAD, 1, complete()),
        ),
        (
            "the last Ready revision",
            remembering(json!({})),
            deployment(GOOD, 1, rolling(0)),
        ),
        (
            "rollback: Never",
            remembering(json!({"workload": {"rollback": "Never"}})),
            crashing.clone(),
        ),
        (
            "scaled to zero",
            remembering(json!({})),
            deployment(BAD, 0, rolling(0)),
        ),
    ];
    for (case, cr, deployment) in not_due {
        assert!(!judges_pods(&view(&cr), &deployment), "{case}");
    }
}

#[test]
fn without_a_revision_that_was_ready_there_is_nothing_to_return_to() {
    let first = stack(json!({}), json!({}));
    assert_eq!(
        judge(
            &view(&first),
            &deployment(BAD, 1, rolling(0)),
            &[crash_looping()]
        ),
        Judgement::Steady,
        "the first revision"
    );
    assert_eq!(
        judge(
            &view(&remembering(json!({}))),
            &deployment(GOOD, 1, rolling(0)),
            &[crash_looping()]
        ),
        Judgement::Steady,
        "the last Ready revision itself crashes (a database down): rolling back changes nothing"
    );
}

#[test]
fn an_init_container_crash_loop_rolls_back_too() {
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "s-new"}, "status": {
        "initContainerStatuses": [{"name": "install-provider-acme", "image": "i", "imageID": "", "ready": false,
            "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}))
    .unwrap();
    let verdict = judge(
        &view(&remembering(json!({}))),
        &deployment(BAD, 1, rolling(0)),
        &[pod],
    );
    assert_eq!(rejected_reason(verdict), "InitContainerCrashLooping");
}

#[test]
fn an_image_pull_waits_for_the_progress_deadline_then_rolls_back() {
    let cr = remembering(json!({}));
    assert_eq!(
        judge(&view(&cr), &deployment(BAD, 1, rolling(0)), &[pulling()]),
        Judgement::Steady,
        "a registry may come back: the rollout waits for its deadline"
    );
    let mut stalled = rolling(0);
    stalled["conditions"] = json!([{"type": "Progressing", "status": "False",
        "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"s-1\" has timed out progressing."}]);
    assert_eq!(
        rejected_reason(judge(
            &view(&cr),
            &deployment(BAD, 1, stalled),
            &[pulling()]
        )),
        "RolloutStalled"
    );
}

#[test]
fn a_status_of_an_older_generation_is_not_judged() {
    let behind = json!({"observedGeneration": 4, "replicas": 1, "updatedReplicas": 0, "availableReplicas": 0});
    let verdict = judge(
        &view(&remembering(json!({}))),
        &deployment(BAD, 1, behind),
        &[crash_looping()],
    );
    assert_eq!(verdict, Judgement::Steady);
}

#[test]
fn a_rejection_holds_until_the_spec_or_what_the_revision_is_built_from_changes() {
    let rejected = json!({"desiredHash": BAD, "image": "i", "generation": 3,
        "reason": "ServerCrashLooping", "message": "m"});
    let memory = json!({"lastReady": good_revision(), "rejected": rejected});
    let cr = stack(json!({}), memory.clone());
    let (held_back, last) = held(&view(&cr), BAD).expect("held");
    assert_eq!(held_back.revision.desired_hash, BAD);
    assert_eq!(last.desired_hash, GOOD);
    assert_eq!(
        held(&view(&cr), "hash-other"),
        None,
        "a new image, config or Secret makes a new hash"
    );
    let mut edited = cr.clone();
    edited.metadata.generation = Some(4);
    assert_eq!(
        held(&view(&edited), BAD),
        None,
        "an edited spec is tried again"
    );
    let never = stack(json!({"workload": {"rollback": "Never"}}), memory);
    assert_eq!(held(&view(&never), BAD), None);
}

#[test]
fn the_restored_deployment_is_the_ready_revisions_template_under_the_planned_spec() {
    let planned = deployment(BAD, 2, json!({}));
    let old: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": "s-6d5f",
            "annotations": {DESIRED_HASH: GOOD, "deployment.kubernetes.io/revision": "1"}},
        "spec": {"selector": {}, "template": {
            "metadata": {"labels": {"app": "s", POD_TEMPLATE_HASH: "6d5f"}},
            "spec": {"containers": [{"name": "llama-stack", "image": "reg/img@sha256:aa"}]}}}}))
    .unwrap();
    let newer = {
        let mut rs = old.clone();
        rs.annotations_mut()
            .insert("deployment.kubernetes.io/revision".into(), "3".into());
        rs.metadata.name = Some("s-newer".into());
        rs
    };
    let sets = [old.clone(), newer];
    assert_eq!(
        replica_set_of(&sets, GOOD).and_then(|rs| rs.metadata.name.clone()),
        Some("s-newer".to_owned())
    );
    assert!(replica_set_of(&sets, BAD).is_none());
    let restored = restored(planned, &old).expect("restored");
    assert_eq!(desired_hash(&restored), Some(GOOD));
    let spec = restored.spec.expect("spec");
    assert_eq!(spec.replicas, Some(2), "replicas follow the spec");
    let labels = spec
        .template
        .metadata
        .clone()
        .and_then(|m| m.labels)
        .unwrap_or_default();
    assert_eq!(labels.get("app").map(String::as_str), Some("s"));
    assert!(
        !labels.contains_key(POD_TEMPLATE_HASH),
        "the Deployment controller adds its own"
    );
    assert_eq!(
        rollout::image_of(&Deployment {
            spec: Some(k8s_openapi::api::apps::v1::DeploymentSpec {
                template: spec.template.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        "reg/img@sha256:aa"
    );
}

#[test]
fn messages_name_both_revisions() {
    let rejected: RejectedRevision = serde_json::from_value(json!({"desiredHash": BAD,
        "image": "reg/img@sha256:bb", "configMap": "s-config-bad", "generation": 3,
        "reason": "ServerCrashLooping", "message": "its last words: boom"}))
    .unwrap();
    let last: RevisionStatus = serde_json::from_value(good_revision()).unwrap();
    for message in [
        held_message(&rejected, &last),
        impossible_message(&rejected, &last),
    ] {
        for part in [
            "reg/img@sha256:bb",
            "s-config-bad",
            "ServerCrashLooping",
            "boom",
            "s-config-good",
        ] {
            assert!(message.contains(part), "{part} in {message}");
        }
    }
}

/// A Pod owned by the ReplicaSet `owner` (uid).
fn owned_by(mut pod: Pod, owner: &str) -> Pod {
    pod.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": owner, "uid": owner, "controller": true}))
        .unwrap(),
    ]);
    pod
}

fn replica_set(uid: &str, revision: &str) -> ReplicaSet {
    serde_json::from_value(json!({"metadata": {"name": uid, "uid": uid,
        "annotations": {REVISION: revision}}}))
    .unwrap()
}

/// An older revision crash-looping (its database down) while a fix rolls out: the fix's own Pod
/// is only pulling its image, so nothing is rolled back; the old revision's trouble is not the
/// fix's.
#[test]
fn only_the_newest_revisions_pods_are_judged() {
    let cr = remembering(json!({}));
    let mut rolling_out = deployment(BAD, 1, rolling(0));
    rolling_out
        .annotations_mut()
        .insert(REVISION.to_owned(), "7".to_owned());
    let sets = [replica_set("rs-6", "6"), replica_set("rs-7", "7")];
    let pods = [
        owned_by(crash_looping(), "rs-6"),
        owned_by(pulling(), "rs-7"),
    ];
    let judged = newest_revision_pods(&rolling_out, &sets, &pods);
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0], pods[1]);
    assert_eq!(judge(&view(&cr), &rolling_out, &judged), Judgement::Steady);
    // The same crash loop in the newest revision's own Pod is judged, and rolled back from.
    let own = [owned_by(crash_looping(), "rs-7")];
    let judged = newest_revision_pods(&rolling_out, &sets, &own);
    assert_eq!(
        rejected_reason(judge(&view(&cr), &rolling_out, &judged)),
        "ServerCrashLooping"
    );
    // Before the Deployment controller made the newest ReplicaSet, no Pod is its.
    assert!(newest_revision_pods(&rolling_out, &sets[..1], &pods).is_empty());
}

/// Past the progress deadline because the new Pod waits for a node: the cluster lacks room, the
/// revision has not failed; nothing is rolled back.
#[test]
fn a_pod_waiting_for_a_node_is_not_rolled_back_from() {
    let cr = remembering(json!({}));
    let mut stalled = rolling(0);
    stalled["conditions"] = json!([{"type": "Progressing", "status": "False",
        "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"s-1\" has timed out progressing."}]);
    let waiting: Pod = serde_json::from_value(json!({"metadata": {"name": "s-new"}, "status": {
        "phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/1 nodes are available: 1 Insufficient cpu."}]}}))
    .unwrap();
    assert_eq!(
        judge(&view(&cr), &deployment(BAD, 1, stalled), &[waiting]),
        Judgement::Steady
    );
}
