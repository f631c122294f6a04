use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn owner(kind: &str, api_version: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn llsd(name: &str) -> OwnerReference {
    owner(
        "LlamaStackDistribution",
        "llamastack.io/v1alpha1",
        name,
        "old-uid",
    )
}

fn server() -> OwnerReference {
    owner("OGXServer", "ogx.io/v1beta1", "new", "new-uid")
}

fn meta(name: &str, owners: Vec<OwnerReference>, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        resource_version: Some("7".to_owned()),
        owner_references: Some(owners),
        labels: Some(annotations(labels)),
        ..ObjectMeta::default()
    }
}

#[test]
fn the_annotations_name_stacks_and_the_servers_own_name_asks_for_nothing() {
    let both = annotations(&[(ADOPT_STORAGE, "old"), (ADOPT_NETWORKING, "old")]);
    assert_eq!(
        requests("new", Some(&both)),
        Ok(Requests {
            storage: Some("old".to_owned()),
            networking: Some("old".to_owned()),
        })
    );
    // The same name is the move in place: nothing to take.
    assert_eq!(requests("old", Some(&both)), Ok(Requests::default()));
    assert_eq!(requests("new", None), Ok(Requests::default()));
    for bad in ["", "Old", "-old", "old-", "a_b", &"x".repeat(64)] {
        let invalid = annotations(&[(ADOPT_NETWORKING, bad)]);
        let error = requests("new", Some(&invalid)).unwrap_err();
        assert!(error.starts_with(ADOPT_NETWORKING), "{bad:?}: {error}");
    }
    assert!(
        requests(
            "new",
            Some(&annotations(&[(ADOPT_STORAGE, &"x".repeat(63))]))
        )
        .is_ok()
    );

    assert_eq!(
        gives_up("new", Some(&both), "old"),
        ["its volume", "its Service and Ingress"]
    );
    assert!(gives_up("new", Some(&both), "other").is_empty());
    assert!(
        gives_up("old", Some(&both), "old").is_empty(),
        "the move in place is not adoption"
    );
    // Unreadable, it may name any stack: each stands down until it is fixed.
    let unreadable = annotations(&[(ADOPT_NETWORKING, "Not_A_Name")]);
    assert_eq!(gives_up("new", Some(&unreadable), "any"), [UNREADABLE]);
    assert!(gives_up("new", None, "any").is_empty());
}

#[test]
fn the_volume_is_taken_only_once_the_old_pods_are_gone_and_never_from_another_owner() {
    let claim = meta("old-pvc", vec![llsd("old")], &[]);
    let seen = |replicas, pods| StorageSeen {
        claim: Some(&claim),
        replicas,
        deployment: None,
        pods,
    };
    assert_eq!(
        storage_step("new", "old", seen(Some(None), 1)),
        StorageStep::ScaleDown
    );
    assert_eq!(
        storage_step("new", "old", seen(Some(Some(2)), 2)),
        StorageStep::ScaleDown
    );
    assert_eq!(
        storage_step("new", "old", seen(Some(Some(0)), 1)),
        StorageStep::WaitForPods(1)
    );
    assert_eq!(
        storage_step("new", "old", seen(Some(Some(0)), 0)),
        StorageStep::Detach
    );
    assert_eq!(
        storage_step("new", "old", seen(None, 0)),
        StorageStep::Detach
    );
    assert_eq!(
        storage_step("new", "old", StorageSeen::default()),
        StorageStep::Missing
    );

    let foreign = meta(
        "old-pvc",
        vec![owner("StatefulSet", "apps/v1", "db", "u")],
        &[],
    );
    let refused = storage_step(
        "new",
        "old",
        StorageSeen {
            claim: Some(&foreign),
            replicas: None,
            deployment: None,
            pods: 0,
        },
    );
    let StorageStep::Refused(why) = refused else {
        panic!("{refused:?}");
    };
    assert!(why.contains("apps/v1 StatefulSet \"db\""), "{why}");
    // Another stack's of the same kind is foreign too.
    let other_stack = meta("old-pvc", vec![llsd("another")], &[]);
    assert!(matches!(
        storage_step(
            "new",
            "old",
            StorageSeen {
                claim: Some(&other_stack),
                replicas: None,
                deployment: None,
                pods: 0
            }
        ),
        StorageStep::Refused(_)
    ));

    let ours = meta(
        "old-pvc",
        vec![],
        &[(ADOPTED_FROM, "old"), (labels::INSTANCE, "new")],
    );
    let theirs = meta(
        "old-pvc",
        vec![],
        &[(ADOPTED_FROM, "old"), (labels::INSTANCE, "x")],
    );
    let taken = |m| StorageSeen {
        claim: Some(m),
        replicas: Some(Some(3)),
        deployment: None,
        pods: 3,
    };
    assert_eq!(storage_step("new", "old", taken(&ours)), StorageStep::Taken);
    // Taken from another stack (whatever its name says): never taken again.
    let elsewhere = meta(
        "old-pvc",
        vec![],
        &[(ADOPTED_FROM, "x"), (labels::INSTANCE, "new")],
    );
    assert!(matches!(
        storage_step("new", "old", taken(&elsewhere)),
        StorageStep::Refused(why) if why.contains("taken from x")
    ));
    assert!(matches!(
        storage_step("new", "old", taken(&theirs)),
        StorageStep::Refused(why) if why.contains("OGXServer x")
    ));
}

#[test]
fn holding_follows_the_step() {
    assert_eq!(StorageStep::ScaleDown.hold(), Some(Hold::Waiting));
    assert_eq!(StorageStep::WaitForPods(2).hold(), Some(Hold::Waiting));
    assert_eq!(
        StorageStep::Refused(String::new()).hold(),
        Some(Hold::Refused)
    );
    // A name with no volume behind it (a typo): no fresh volume is made while it stands.
    assert_eq!(StorageStep::Missing.hold(), Some(Hold::Refused));
    for go in [StorageStep::Taken, StorageStep::Detach] {
        assert_eq!(go.hold(), None);
    }
}

#[test]
fn detaching_drops_only_the_controller_and_keeps_the_version_read() {
    let other = OwnerReference {
        controller: None,
        ..owner("ConfigMap", "v1", "keep", "k")
    };
    let claim = meta(
        "old-pvc",
        vec![llsd("old"), other.clone()],
        &[("team", "a")],
    );
    let patch = detach_patch(&claim, "new", "old", "2026-11-27T00:00:00Z");
    assert_eq!(
        patch,
        json!({"metadata": {
            "resourceVersion": "7",
            "ownerReferences": [other],
            "labels": {ADOPTED_FROM: "old", labels::INSTANCE: "new"},
            "annotations": {ADOPTED_AT: "2026-11-27T00:00:00Z"},
        }})
    );
}

#[test]
fn a_service_changes_controller_and_selects_only_the_new_pods() {
    let service_meta = meta("old-service", vec![llsd("old")], &[]);
    assert_eq!(
        transfer_step(Some(&service_meta), "old", &server()),
        TransferStep::Transfer
    );
    assert_eq!(transfer_step(None, "old", &server()), TransferStep::Missing);
    let taken = meta("old-service", vec![server()], &[]);
    assert_eq!(
        transfer_step(Some(&taken), "old", &server()),
        TransferStep::Taken
    );
    let unowned = meta("old-service", vec![], &[(labels::INSTANCE, "old")]);
    assert_eq!(
        transfer_step(Some(&unowned), "old", &server()),
        TransferStep::Transfer,
        "an orphan of the stack (deleted first) is taken, as the OGX operator takes it"
    );

    let patch = transfer_patch(&service_meta, "old", &server(), "t");
    // The old stack stays an owner, no longer the controller: deleting the server leaves the
    // Service (and its address) to it.
    let mut demoted = llsd("old");
    demoted.controller = Some(false);
    demoted.block_owner_deletion = None;
    assert_eq!(
        patch["metadata"]["ownerReferences"],
        json!([demoted, server()])
    );
    assert_eq!(patch["metadata"]["resourceVersion"], "7");

    let current = annotations(&[
        (labels::NAME, "llama-stack"),
        (labels::INSTANCE, "old"),
        ("extra", "x"),
    ]);
    let new = annotations(&[(labels::NAME, "llama-stack"), (labels::INSTANCE, "new")]);
    assert_eq!(
        selector_patch(&current, &new),
        json!({"spec": {"selector": {
            "extra": null, labels::NAME: "llama-stack", labels::INSTANCE: "new"
        }}})
    );
}

#[test]
fn the_conditions_say_what_happened() {
    let said = storage_said("old", &StorageStep::Detach);
    assert_eq!(
        (said.condition, said.ok, said.reason),
        (ConditionType::StorageAdopted, true, Reason::StorageAdopted)
    );
    assert_eq!(said.message, "PVC old-pvc adopted");
    let waiting = storage_said("old", &StorageStep::WaitForPods(2));
    assert_eq!(
        (waiting.ok, waiting.reason),
        (false, Reason::WaitingForLegacyPods)
    );

    let missing = networking_said("old", [&TransferStep::Missing, &TransferStep::Missing]);
    assert_eq!(
        missing.map(|s| (s.ok, s.reason)),
        Some((false, Reason::AdoptionSourceNotFound))
    );
    let one = networking_said("old", [&TransferStep::Transfer, &TransferStep::Missing]);
    assert_eq!(
        one.map(|s| (s.ok, s.reason)),
        Some((true, Reason::NetworkingAdopted))
    );
    let refused = networking_said(
        "old",
        [
            &TransferStep::Taken,
            &TransferStep::Refused("no".to_owned()),
        ],
    );
    assert_eq!(
        refused.map(|s| (s.ok, s.message)),
        Some((false, "no".to_owned()))
    );

    let invalid = Condition {
        type_: "AdoptionConfigInvalid".to_owned(),
        status: "True".to_owned(),
        reason: "AdoptionConfigInvalid".to_owned(),
        message: String::new(),
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ),
        observed_generation: None,
    };
    assert_eq!(config_said(&[], None), None, "never invalid: no condition");
    let cleared = config_said(std::slice::from_ref(&invalid), None);
    assert_eq!(
        cleared.map(|s| (s.ok, s.reason)),
        Some((false, Reason::AnnotationsValid))
    );
    let set = config_said(&[], Some("bad"));
    assert_eq!(
        set.map(|s| (s.ok, s.message)),
        Some((true, "bad".to_owned()))
    );
}

#[test]
fn only_the_named_stacks_objects_are_scaled_or_taken() {
    let claim = meta("old-pvc", vec![llsd("old")], &[]);
    fn seen<'a>(claim: &'a ObjectMeta, deployment: &'a ObjectMeta) -> StorageSeen<'a> {
        StorageSeen {
            claim: Some(claim),
            replicas: Some(Some(1)),
            deployment: Some(deployment),
            pods: 1,
        }
    }
    let seen = |deployment| seen(&claim, deployment);
    let ours = meta("old", vec![llsd("old")], &[]);
    assert_eq!(
        storage_step("new", "old", seen(&ours)),
        StorageStep::ScaleDown
    );
    let labelled = meta("old", vec![], &[(labels::INSTANCE, "old")]);
    assert_eq!(
        storage_step("new", "old", seen(&labelled)),
        StorageStep::ScaleDown,
        "ownerless with the stack's instance label, as the OGX operator allows"
    );
    // A Deployment of that name someone else runs is never scaled to zero.
    for foreign in [
        meta(
            "old",
            vec![owner("Argo", "argoproj.io/v1", "app", "u")],
            &[],
        ),
        meta("old", vec![], &[]),
        meta("old", vec![], &[(labels::INSTANCE, "other")]),
    ] {
        assert!(
            matches!(storage_step("new", "old", StorageSeen { deployment: Some(&foreign), ..seen(&ours) }), StorageStep::Refused(why) if why.contains("not scaled down")),
            "{foreign:?}"
        );
    }
    // An ownerless Service or Ingress without the stack's label is not re-pointed.
    let bare = meta("old-service", vec![], &[]);
    assert!(matches!(
        transfer_step(Some(&bare), "old", &server()),
        TransferStep::Refused(why) if why.contains("not labelled")
    ));
    let labelled = meta("old-service", vec![], &[(labels::INSTANCE, "old")]);
    assert_eq!(
        transfer_step(Some(&labelled), "old", &server()),
        TransferStep::Transfer
    );
}

#[test]
fn a_service_handed_back_selects_the_old_pods_and_has_no_controller() {
    let taken = meta(
        "old-service",
        vec![server()],
        &[(ADOPTED_FROM, "old"), (labels::INSTANCE, "old")],
    );
    let patch = hand_back_patch(&taken, "old", true);
    assert_eq!(patch["metadata"]["ownerReferences"], json!([]));
    assert_eq!(patch["metadata"]["labels"][ADOPTED_FROM], Value::Null);
    assert_eq!(patch["metadata"]["resourceVersion"], "7");
    assert_eq!(
        patch["spec"]["selector"],
        json!({"app.kubernetes.io/instance": "old", "app.kubernetes.io/name": "llama-stack"})
    );
    assert!(hand_back_patch(&taken, "old", false).get("spec").is_none());
}
