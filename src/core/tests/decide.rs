//! The decision of a reconcile as tables: a stack and what was read, in; what is applied or what
//! blocks the stack, out. No cluster: the cluster suites prove the reads and writes around it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use llama_stack_resolver::ResolveError;
use serde_json::{Value, json};

use super::*;
use crate::api::conditions::{ConditionType, Reason};
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::core::observed::Reach;
use crate::core::tests::fixtures::{PINNED, operator, resolution, resolved, resource};
use crate::naming::DESIRED_HASH;
use k8s_openapi::api::apps::v1::Deployment;

const OWN_IMAGE: &str = "registry.corp/own:1";

fn starter() -> Spec {
    Spec(json!({"distribution": {"name": "starter"}}))
}

/// What a row changes in what was read.
type Change = Box<dyn Fn(&mut Observed)>;

/// A spec, extended row by row.
#[derive(Clone)]
struct Spec(Value);

impl Spec {
    fn with(mut self, extra: Value) -> Self {
        let object = self.0.as_object_mut().unwrap();
        object.extend(extra.as_object().unwrap().clone());
        self
    }
}

fn rejected_credentials() -> ResolveError {
    ResolveError::CredentialsRejected {
        image: PINNED.to_owned(),
        registry: "docker.io".to_owned(),
        tried: "ns/pull".to_owned(),
    }
}

fn secret(key: &str, value: &str) -> Secret {
    Secret {
        data: Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(value.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    }
}

fn postgres() -> Value {
    json!({"storage": {"sql": {"type": "postgres",
        "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}}})
}

fn with_url(url: &str) -> impl Fn(&mut Observed) {
    let url = url.to_owned();
    move |o: &mut Observed| {
        o.secrets = BTreeMap::from([("pg".to_owned(), Some(secret("url", &url)))]);
    }
}

fn decide_on(
    cr: &LlamaStackDistribution,
    observed: &Observed,
    operator: &Operator<'_>,
) -> Decision {
    let stack = Stack::read(cr).unwrap();
    decide(&stack, observed, operator).unwrap()
}

/// What a server with every `ogx.io/adopt-*` annotation read: the old Deployment to scale down,
/// its claim to detach, its Service and Ingress to re-point, and a Service of an adoption given
/// up to hand back.
fn taking_everything() -> take_over::Survey {
    use take_over::{Kind, Write};
    let write = |kind, name: &str, takes| Write {
        kind,
        name: name.to_owned(),
        patch: json!({"metadata": {"labels": {"taken": "yes"}}}),
        takes,
    };
    take_over::Survey {
        adopted: adoption::Adopted {
            claim: Some("old-pvc".to_owned()),
            said: Vec::new(),
            hold: Some(adoption::Hold::Waiting),
        },
        writes: vec![
            write(Kind::Deployment, "old", true),
            write(Kind::Claim, "old-pvc", true),
            write(Kind::Service, "old-service", true),
            write(Kind::Ingress, "old-ingress", true),
            write(Kind::Service, "given-up-service", false),
        ],
    }
}

/// A blocked server takes nothing from the old stack (its replicas, Service, Ingress and claim
/// stay as they are), says so on both adoption conditions, mounts no claim it would have taken,
/// and still hands back what an adoption given up took.
fn assert_takes_nothing(what: &str, take_over: &take_over::Survey) {
    let made: Vec<(&str, bool)> = (take_over.writes.iter())
        .map(|w| (w.name.as_str(), w.takes))
        .collect();
    assert_eq!(made, [("given-up-service", false)], "{what}");
    for condition in [
        ConditionType::StorageAdopted,
        ConditionType::NetworkingAdopted,
    ] {
        let said: Vec<_> = (take_over.adopted.said.iter())
            .filter(|s| s.condition == condition)
            .map(|s| (s.ok, s.reason))
            .collect();
        assert_eq!(
            said,
            [(false, Reason::AdoptionDeferred)],
            "{what}: {condition:?}"
        );
    }
    assert_eq!(take_over.adopted.claim, None, "{what}");
    assert_eq!(take_over.adopted.hold, None, "{what}");
}

/// Each problem the user must fix blocks the stack with its condition, reason and a message
/// naming it; the first problem in the decision's order is the one reported, and whether the
/// Secrets were all found is said beside it once they were checked.
#[test]
fn what_blocks_a_stack_and_what_it_says() {
    struct Row {
        what: &'static str,
        spec: Spec,
        status: Value,
        operator: Operator<'static>,
        observed: Box<dyn Fn(&mut Observed)>,
        blocked: (ConditionType, Reason),
        says: &'static str,
        secrets_found: Option<usize>,
    }
    let row = |what, spec, observed: Box<dyn Fn(&mut Observed)>, blocked, says| Row {
        what,
        spec,
        status: json!({}),
        operator: operator(),
        observed,
        blocked,
        says,
        secrets_found: None,
    };
    let generated = ConditionType::ConfigGenerated;
    let providers = json!({"externalProviders": {"inference": [
        {"providerId": "acme", "image": "registry.corp/acme-provider:1"}]}});
    let table = [
        Row {
            operator: Operator {
                image: None,
                ..operator()
            },
            ..row(
                "external providers while the operator does not know its image (checked first)",
                starter().with(providers.clone()),
                Box::new(|o| o.pull_secret_unusable = Some("unusable".to_owned())),
                (generated, Reason::ExternalProviderInvalid),
                "set OPERATOR_IMAGE",
            )
        },
        row(
            "a pull secret kubelet could not use",
            starter(),
            Box::new(|o| {
                o.pull_secret_unusable = Some("pull secret ns/p: no .dockerconfigjson".to_owned());
                o.resolution = None;
            }),
            (generated, Reason::RegistryError),
            "pull secret ns/p: no .dockerconfigjson",
        ),
        row(
            "the registry refuses every credential",
            starter(),
            Box::new(|o| o.resolution = Some(Err(Arc::new(rejected_credentials())))),
            (generated, Reason::RegistryError),
            "rejected every pull secret",
        ),
        row(
            "an image without a base config while the spec asks for generation",
            Spec(json!({"distribution": {"image": OWN_IMAGE}, "disabled": ["safety"]})),
            Box::new(|o| {
                let error = ResolveError::BaseConfigRequired {
                    image: OWN_IMAGE.to_owned(),
                };
                o.resolution = Some(Err(Arc::new(error)));
            }),
            (generated, Reason::BaseConfigRequired),
            "no config labels (com.ogx.config.* or io.llamastack.config.*) and the operator has no embedded config for it, so there is no base config to generate from, and spec.disabled asks for a generated config",
        ),
        row(
            "baseConfig names a ConfigMap that does not exist",
            starter().with(json!({"baseConfig": {"configMapName": "base"}})),
            Box::new(|_| {}),
            (generated, Reason::ConfigGenerationFailed),
            "ConfigMap \"base\" not found in namespace \"ns\". Referenced by: spec.baseConfig.configMapName",
        ),
        row(
            "overrideConfig names a ConfigMap that does not exist",
            starter().with(json!({"overrideConfig": {"configMapName": "mine"}})),
            Box::new(|_| {}),
            (generated, Reason::ConfigGenerationFailed),
            "ConfigMap \"mine\" not found in namespace \"ns\"",
        ),
        Row {
            status: json!({"resolvedDistribution": {"image": PINNED,
                "reference": "docker.io/ogxai/distribution-starter:1.3.0"}}),
            ..row(
                "a running pin, the registry down and only the embedded fallback to offer",
                starter(),
                Box::new(|o| {
                    o.deployment = Some(Default::default());
                    o.resolution = Some(Ok(resolution(false, Some(rejected_credentials()))));
                }),
                (generated, Reason::RegistryError),
                "keeping the running image and config until the registry answers",
            )
        },
        row(
            "the user's ConfigMap holds a llama-stack 0.x config and the image runs OGX",
            starter().with(json!({"overrideConfig": {"configMapName": "mine"}})),
            Box::new(|o| {
                o.user_config = Some(ConfigMap {
                    data: Some(BTreeMap::from([(
                        "run.yaml".to_owned(),
                        include_str!("../../../configs/starter/config.yaml").to_owned(),
                    )])),
                    ..ConfigMap::default()
                });
            }),
            (generated, Reason::ConfigServerMismatch),
            "run.yaml of ConfigMap \"mine\" is written for llama-stack 0.x (it names the APIs datasetio, eval, safety, scoring, which OGX does not have), but the image runs ogx 1.3.0 (catalog)",
        ),
        row(
            "a referenced Secret is missing",
            starter().with(postgres()),
            Box::new(|o| o.secrets = BTreeMap::from([("pg".to_owned(), None)])),
            (ConditionType::SecretsResolved, Reason::SecretNotFound),
            "Secret \"pg\" not found in namespace \"ns\"",
        ),
        Row {
            secrets_found: Some(1),
            ..row(
                "the connection string is not a PostgreSQL URL",
                starter().with(postgres()),
                Box::new(with_url("mysql://nope")),
                (generated, Reason::ConfigGenerationFailed),
                "is not a PostgreSQL URL",
            )
        },
        Row {
            secrets_found: Some(1),
            ..row(
                "the derived Secret's name is held by a Secret the stack does not control",
                starter().with(postgres()),
                Box::new(|o| {
                    with_url("postgres://u:pw@db:5432/kv")(o);
                    o.derived_secret = Some(ObjectMeta::default());
                }),
                (generated, Reason::ConfigGenerationFailed),
                "exists and is not this stack's",
            )
        },
        Row {
            // Checked after the Secrets (none here): they are reported found beside it.
            secrets_found: Some(0),
            ..row(
                "the CA bundle's ConfigMap is missing",
                starter().with(
                    json!({"networking": {"tls": {"caBundle": {"configMapName": "corporate-ca"}}}}),
                ),
                Box::new(|_| {}),
                (generated, Reason::CABundleInvalid),
                "ConfigMap \"corporate-ca\" not found in namespace \"ns\"",
            )
        },
    ];
    for row in table {
        let cr = resource(row.spec.0.clone(), row.status.clone());
        let mut observed = resolved();
        observed.take_over = taking_everything();
        (row.observed)(&mut observed);
        let decision = decide_on(&cr, &observed, &row.operator);
        assert_takes_nothing(row.what, &decision.take_over);
        let blocked = match decision.next {
            Err(blocked) => blocked,
            Ok(intent) => panic!("{}: applied {:?}", row.what, intent.planned.mount),
        };
        assert_eq!(
            (blocked.condition, blocked.reason),
            row.blocked,
            "{}: {}",
            row.what,
            blocked.message
        );
        assert!(
            blocked.message.contains(row.says),
            "{}: {:?} does not say {:?}",
            row.what,
            blocked.message,
            row.says
        );
        assert!(!blocked.message.contains("pw@"), "{}: a password", row.what);
        assert_eq!(decision.secrets_found, row.secrets_found, "{}", row.what);
    }
}

/// What runs when nothing blocks: the generated config on the resolved image, the user's
/// ConfigMap as is, or the image's own config; the derived Secret when the stack owns its name.
#[test]
fn what_a_stack_that_is_not_blocked_runs() {
    let user_config = ConfigMap {
        data: Some(BTreeMap::from([(
            "config.yaml".to_owned(),
            "version: 2\nimage_name: mine\napis: []\nproviders: {}\n".to_owned(),
        )])),
        ..ConfigMap::default()
    };
    let own = |o: &mut Observed| {
        let error = ResolveError::BaseConfigRequired {
            image: OWN_IMAGE.to_owned(),
        };
        o.resolution = Some(Err(Arc::new(error)));
    };
    let derived_is_ours = |o: &mut Observed| {
        with_url("postgres://u:pw@db:5432/kv")(o);
        let mut meta = ObjectMeta::default();
        meta.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                uid: "u-1".to_owned(),
                controller: Some(true),
                ..Default::default()
            },
        ]);
        o.derived_secret = Some(meta);
    };
    let cm = user_config.clone();
    let base_cm = cm.clone();
    let own_base_cm = cm.clone();
    let rows: [(&str, Spec, Change, &str, Option<usize>); 6] = [
        (
            "generated on the user's base config",
            starter().with(json!({"baseConfig": {"configMapName": "mine"}})),
            Box::new(move |o| o.user_config = Some(base_cm.clone())),
            "generated",
            Some(0),
        ),
        (
            "an image without labels, generated on the user's base config",
            Spec(
                json!({"distribution": {"image": OWN_IMAGE}, "baseConfig": {"configMapName": "mine"}}),
            ),
            Box::new(move |o| {
                own(o);
                o.user_config = Some(own_base_cm.clone());
            }),
            "generated on its own image",
            Some(0),
        ),
        (
            "generated",
            starter(),
            Box::new(|_| {}),
            "generated",
            Some(0),
        ),
        (
            "the user's ConfigMap",
            starter().with(json!({"overrideConfig": {"configMapName": "mine"}})),
            Box::new(move |o| o.user_config = Some(cm.clone())),
            "user",
            Some(0),
        ),
        (
            "the image's own config",
            Spec(json!({"distribution": {"image": OWN_IMAGE}})),
            Box::new(own),
            "image",
            Some(0),
        ),
        (
            "a connection string split into the stack's own derived Secret",
            starter().with(postgres()),
            Box::new(derived_is_ours),
            "generated",
            Some(1),
        ),
    ];
    for (what, spec, change, runs, secrets_found) in rows {
        let cr = resource(spec.0.clone(), json!({}));
        let mut observed = resolved();
        observed.take_over = taking_everything();
        change(&mut observed);
        let decision = decide_on(&cr, &observed, &operator());
        // Every take is made but the address's: the server has no available replica yet.
        let surveyed = &observed.take_over;
        let made: Vec<&str> = (decision.take_over.writes.iter())
            .map(|w| w.name.as_str())
            .collect();
        assert_eq!(made, ["old", "old-pvc", "given-up-service"], "{what}");
        assert_eq!(
            decision.take_over.adopted.claim, surveyed.adopted.claim,
            "{what}"
        );
        assert_eq!(
            decision.take_over.adopted.hold, surveyed.adopted.hold,
            "{what}"
        );
        let networking: Vec<_> = (decision.take_over.adopted.said.iter())
            .filter(|s| s.condition == ConditionType::NetworkingAdopted)
            .map(|s| s.reason)
            .collect();
        assert_eq!(networking, [Reason::WaitingForServer], "{what}");
        let intent = decision
            .next
            .unwrap_or_else(|b| panic!("{what}: blocked: {}", b.message));
        assert_eq!(decision.secrets_found, secrets_found, "{what}");
        assert_eq!(intent.hold, None, "{what}");
        let names = object_names(&intent.desired);
        match (runs, &intent.planned.mount) {
            ("generated", ServerConfig::Generated(name)) => {
                assert!(name.starts_with("s-config-"), "{what}: {name}");
                assert_eq!(names.get("ConfigMap"), Some(name), "{what}");
                assert_eq!(intent.planned.image, PINNED, "{what}");
            }
            ("generated on its own image", ServerConfig::Generated(name)) => {
                assert!(name.starts_with("s-config-"), "{what}: {name}");
                assert_eq!(intent.planned.image, OWN_IMAGE, "{what}");
            }
            ("user", ServerConfig::User { config_map, key }) => {
                assert_eq!((config_map.as_str(), key.as_str()), ("mine", "config.yaml"));
                assert_eq!(names.get("ConfigMap"), None, "{what}: nothing generated");
            }
            ("image", ServerConfig::Image) => {
                assert_eq!(intent.planned.image, OWN_IMAGE, "{what}");
                assert_eq!(names.get("ConfigMap"), None, "{what}: nothing mounted");
            }
            (_, mount) => panic!("{what}: runs {mount:?}, not the {runs} config"),
        }
        assert_eq!(
            names.contains_key("Secret"),
            secrets_found == Some(1),
            "{what}: the derived Secret exactly when a connection string is split"
        );
    }
}

/// A stack never mounts a volume an `OGXServer` other than it took (`ogx.io/adopted-from`):
/// the old stack, resumed, would run a second server on it. The server that took it mounts it.
#[test]
fn a_volume_another_server_took_is_not_mounted() {
    let storage = starter().with(json!({"workload": {"storage": {"size": "10Gi"}}}));
    let taken = |holder: &str| {
        let holder = holder.to_owned();
        move |o: &mut Observed| {
            let mut claim = k8s_openapi::api::core::v1::PersistentVolumeClaim::default();
            claim.metadata.name = Some("s-pvc".to_owned());
            claim.metadata.labels = Some(BTreeMap::from([
                ("ogx.io/adopted-from".to_owned(), "s".to_owned()),
                ("app.kubernetes.io/instance".to_owned(), holder.clone()),
            ]));
            o.claim = Some(claim);
        }
    };
    let cr = resource(storage.0, json!({}));
    let mut observed = resolved();
    taken("my-server")(&mut observed);
    let blocked = decide_on(&cr, &observed, &operator()).next.unwrap_err();
    assert_eq!(
        (blocked.condition, blocked.reason),
        (ConditionType::ConfigGenerated, Reason::AdoptedByOGXServer)
    );
    assert!(
        blocked
            .message
            .contains("PVC s-pvc was taken from s by OGXServer my-server"),
        "{}",
        blocked.message
    );
    let mut observed = resolved();
    taken("s")(&mut observed);
    assert!(
        decide_on(&cr, &observed, &operator()).next.is_ok(),
        "the server that took it mounts it"
    );
}

/// Offline (`render`), only the manifests given were read: what the cluster would block on (a
/// Secret, a CA bundle or a client certificate not found, a user's ConfigMap not among them) does
/// not block, and nothing is made of values not read: no Secret hash rolls the Pods, no bundle
/// or derived Secret is built, and a user's ConfigMap is mounted with its content unknown. The
/// same reads in the cluster block the stack.
#[test]
fn offline_the_decision_goes_on_without_what_only_the_cluster_holds() {
    let tls = json!({"networking": {"tls": {"enabled": true,
        "clientIdentity": {"certificate": {"name": "client", "key": "tls.crt"},
            "privateKey": {"name": "client-key", "key": "tls.key"}}}}});
    let nothing: fn(&mut Observed) = |_| {};
    let key_found: fn(&mut Observed) = |o| {
        o.secrets = BTreeMap::from([("client-key".to_owned(), Some(secret("tls.key", "k")))]);
    };
    /// What is missing, the spec naming it, what the cluster read, and its reason there.
    type Row = (&'static str, Spec, fn(&mut Observed), Reason);
    let rows: [Row; 4] = [
        (
            "a referenced Secret",
            starter().with(postgres()),
            nothing,
            Reason::SecretNotFound,
        ),
        (
            "a CA bundle",
            starter().with(json!({"networking": {"tls": {"caBundle": {"configMapName": "cas"}}}})),
            nothing,
            Reason::CABundleInvalid,
        ),
        (
            "a client certificate",
            starter().with(tls),
            key_found,
            Reason::ClientCertificateInvalid,
        ),
        (
            "the user's whole config",
            starter().with(json!({"overrideConfig": {"configMapName": "mine"}})),
            nothing,
            Reason::ConfigGenerationFailed,
        ),
    ];
    for (what, spec, read, in_cluster) in rows {
        let cr = resource(spec.0, json!({}));
        let mut observed = resolved();
        read(&mut observed);
        let cluster = decide_on(&cr, &observed, &operator());
        let blocked = cluster.next.expect_err(what);
        assert_eq!(blocked.reason, in_cluster, "{what}: {}", blocked.message);

        let offline = Observed {
            reach: Reach::Manifests,
            ..observed
        };
        let decision = decide_on(&cr, &offline, &operator());
        assert_eq!(
            decision.secrets_found, None,
            "{what}: the Secrets were not read"
        );
        let intent = decision
            .next
            .unwrap_or_else(|b| panic!("{what}: {}", b.message));
        let names = object_names(&intent.desired);
        assert!(
            !names.contains_key("Secret") && !names.contains_key("CaBundle"),
            "{what}: nothing built from values not read: {names:?}"
        );
        let template = intent.desired.deployment.spec.unwrap().template;
        let annotations = template.metadata.unwrap().annotations.unwrap_or_default();
        assert!(
            !annotations.contains_key(crate::naming::SECRETS_HASH)
                && !annotations.contains_key(crate::naming::CA_BUNDLE_HASH),
            "{what}: no hash of values not read: {annotations:?}"
        );
        if let ServerConfig::User { config_map, key } = &intent.planned.mount {
            assert_eq!((config_map.as_str(), key.as_str()), ("mine", "config.yaml"));
            assert!(
                !annotations.contains_key(crate::naming::CONFIG_HASH),
                "the content of a ConfigMap not read has no hash: {annotations:?}"
            );
        }
    }
}

/// The objects of a decision, by kind and name, for tables and comparisons.
fn object_names(desired: &Desired) -> std::collections::BTreeMap<&'static str, String> {
    use kube::ResourceExt;
    let mut names = std::collections::BTreeMap::new();
    names.insert("Deployment", desired.deployment.name_any());
    names.insert("Service", desired.service.name_any());
    if let Some(cm) = &desired.config_map {
        names.insert("ConfigMap", cm.name_any());
    }
    if let Some(secret) = &desired.derived_secret {
        names.insert("Secret", secret.name_any());
    }
    if let Some(bundle) = &desired.ca_bundle {
        names.insert("CaBundle", bundle.name_any());
    }
    names
}

/// The revision the plan builds, as its desired hash (the rollback memory names revisions so).
fn planned_hash(spec: &Spec) -> String {
    let cr = resource(spec.0.clone(), json!({}));
    let decision = decide_on(&cr, &resolved(), &operator());
    let intent = decision.next.unwrap();
    rollback::desired_hash(&intent.desired.deployment)
        .unwrap()
        .to_owned()
}

/// A ReplicaSet of the revision with `hash`, running `image`.
fn replica_set(hash: &str, image: &str) -> ReplicaSet {
    serde_json::from_value(json!({"metadata": {"name": "s-old", "annotations": {
            DESIRED_HASH: hash, "deployment.kubernetes.io/revision": "1"}},
        "spec": {"selector": {}, "template": {
            "metadata": {"labels": {"app": "s", "pod-template-hash": "abc"}},
            "spec": {"containers": [{"name": "llama-stack", "image": image}]}}}}))
    .unwrap()
}

/// A revision rolled back from is held back while the plan builds it again: the running last
/// Ready revision is kept as it is, or restored from its ReplicaSet, or (its ReplicaSet gone)
/// the plan is applied and the hold says why; a rollback policy of `Never` holds nothing. The
/// ReplicaSets are read exactly when a restore can be needed.
#[test]
fn a_rejected_revision_is_held_back_while_the_plan_builds_it_again() {
    let good = "hash-good";
    let good_image = "registry.corp/good@sha256:44";
    let spec = starter();
    let rejected = planned_hash(&spec);
    let memory = json!({"rollback": {
        "lastReady": {"desiredHash": good, "image": good_image},
        "rejected": {"desiredHash": rejected, "image": PINNED, "generation": 3,
            "reason": "ServerCrashLooping", "message": "keeps exiting"}}});
    let running = |hash: &str| -> Deployment {
        serde_json::from_value(
            json!({"metadata": {"name": "s", "annotations": {DESIRED_HASH: hash}},
            "spec": {"selector": {}, "template": {}}}),
        )
        .unwrap()
    };
    type Row = (
        &'static str,
        Spec,
        Option<Deployment>,
        Option<Vec<ReplicaSet>>,
    );
    let rows: [(Row, Option<Held>); 4] = [
        (
            (
                "the last Ready revision runs",
                spec.clone(),
                Some(running(good)),
                None,
            ),
            Some(Held::KeepRunning),
        ),
        (
            (
                "the rejected revision runs, the last Ready one's ReplicaSet is kept",
                spec.clone(),
                Some(running(&rejected)),
                Some(vec![replica_set(good, good_image)]),
            ),
            Some(Held::Restore),
        ),
        (
            (
                "the rejected revision runs, nothing to return to",
                spec.clone(),
                Some(running(&rejected)),
                Some(vec![]),
            ),
            Some(Held::NothingToRestore),
        ),
        (
            (
                "rollback: Never",
                spec.clone()
                    .with(json!({"workload": {"rollback": "Never"}})),
                Some(running(&rejected)),
                None,
            ),
            None,
        ),
    ];
    for ((what, spec, deployment, replica_sets), expected) in rows {
        let cr = resource(spec.0.clone(), memory.clone());
        let stack = Stack::read(&cr).unwrap();
        assert_eq!(
            rollback::may_restore(&stack, deployment.as_ref()),
            replica_sets.is_some(),
            "{what}: whether gather reads the ReplicaSets"
        );
        let observed = Observed {
            deployment,
            replica_sets,
            ..resolved()
        };
        let intent = decide(&stack, &observed, &operator())
            .unwrap()
            .next
            .unwrap();
        assert_eq!(intent.hold.as_ref().map(|h| h.how), expected, "{what}");
        let built = rollback::desired_hash(&intent.desired.deployment).unwrap();
        let image = crate::core::rollout::image_of(&intent.desired.deployment);
        match expected {
            Some(Held::Restore) => {
                assert_eq!((built, image.as_str()), (good, good_image), "{what}");
                let labels = intent
                    .desired
                    .deployment
                    .spec
                    .as_ref()
                    .unwrap()
                    .template
                    .metadata
                    .as_ref()
                    .unwrap()
                    .labels
                    .as_ref()
                    .unwrap();
                assert!(
                    !labels.contains_key("pod-template-hash"),
                    "{what}: {labels:?}"
                );
            }
            _ => assert_eq!(
                (built, image.as_str()),
                (rejected.as_str(), PINNED),
                "{what}"
            ),
        }
        assert_eq!(
            intent.keeps_deployment(),
            expected == Some(Held::KeepRunning),
            "{what}"
        );
        if let Some(hold) = &intent.hold {
            assert_eq!(hold.last_ready.desired_hash, good, "{what}");
            assert_eq!(hold.rejected.revision.desired_hash, rejected, "{what}");
        }
    }
}

mod report {
    //! From a decision, what the apply wrote and what runs, to the status (pure).

    use k8s_openapi::api::apps::v1::Deployment;

    use super::*;
    use crate::api::common::DistributionPhase;
    use crate::api::v1alpha2::LlamaStackDistributionStatus;
    use crate::core::observed::Applied;
    use crate::core::report::{Facts, report};

    fn at(time: &str) -> jiff::Timestamp {
        time.parse().unwrap()
    }

    /// A Deployment whose one replica runs the newest revision and serves.
    fn serving(desired: &Deployment) -> Deployment {
        let mut deployment = desired.clone();
        deployment.metadata.generation = Some(1);
        deployment.status = Some(
            serde_json::from_value(json!({"observedGeneration": 1, "replicas": 1,
                "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}))
            .unwrap(),
        );
        deployment
    }

    /// The finished status of a reconcile of `cr` that applied `decision` (or was refused with
    /// `refused`), at `now`.
    fn status_after(
        cr: &LlamaStackDistribution,
        decision: &Decision,
        applied: Result<Option<&Applied>, &str>,
        judgement: &rollback::Judgement,
        now: jiff::Timestamp,
    ) -> LlamaStackDistributionStatus {
        let stack = Stack::read(cr).unwrap();
        let deployment = applied.ok().flatten().and_then(|a| a.deployment.as_ref());
        let facts = Facts {
            decision,
            applied,
            deployment,
            pods: None,
            judgement,
            server: None,
            praxis: Vec::new(),
        };
        let catalog = llama_stack_resolver::Catalog::embedded().unwrap();
        report(&stack, facts, &catalog, now).into_status(cr.metadata.generation)
    }

    fn condition(status: &LlamaStackDistributionStatus, type_: &str) -> (String, String, String) {
        let c = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} in {:?}", status.conditions));
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    /// A stack applied and serving is Ready with the config and image it runs; reported again at a
    /// later time with nothing changed, its status is exactly the stored one (so nothing is
    /// written at rest and no time moves).
    #[test]
    fn a_serving_stack_is_ready_and_at_rest_its_status_does_not_change() {
        let cr = resource(starter().0, json!({}));
        let decision = decide_on(&cr, &resolved(), &operator());
        let intent = decision.next.as_ref().unwrap();
        let applied = Applied {
            deployment: Some(serving(&intent.desired.deployment)),
            ..Applied::default()
        };
        let first = at("2026-11-27T10:00:00Z");
        let steady = rollback::Judgement::Steady;
        let status = status_after(&cr, &decision, Ok(Some(&applied)), &steady, first);
        assert_eq!(status.phase, Some(DistributionPhase::Ready));
        let generated = condition(&status, "ConfigGenerated");
        assert_eq!(
            (generated.0.as_str(), generated.1.as_str()),
            ("True", "ConfigGenerationSucceeded")
        );
        let resolved_status = status.resolved_distribution.clone().unwrap();
        assert_eq!(resolved_status.image.as_deref(), Some(PINNED));
        assert_eq!(resolved_status.pinned_at.map(|t| t.0), Some(first));
        let generation = status.config_generation.clone().unwrap();
        assert_eq!(generation.generated_at.map(|t| t.0), Some(first));
        assert_eq!(
            generation.config_map_name.as_deref(),
            intent.planned.mount.config_map()
        );

        assert!(
            status
                .conditions
                .iter()
                .flatten()
                .all(|c| c.last_transition_time.0 == first),
            "every condition changed at {first}"
        );
        let stored = resource(starter().0, serde_json::to_value(&status).unwrap());
        let later = at("2026-11-27T11:00:00Z");
        let again = status_after(&stored, &decision, Ok(Some(&applied)), &steady, later);
        assert_eq!(again, status, "a reconcile at rest changes nothing");
    }

    /// What the status says of a blocked stack, a write the API server refused, a revision held
    /// back and one just rolled back from.
    #[test]
    fn the_status_says_what_blocked_was_refused_or_rolled_back() {
        let now = at("2026-11-27T10:00:00Z");
        let steady = rollback::Judgement::Steady;

        let cr = resource(starter().with(postgres()).0, json!({}));
        let mut observed = resolved();
        observed.secrets = BTreeMap::from([("pg".to_owned(), None)]);
        let blocked = decide_on(&cr, &observed, &operator());
        let status = status_after(&cr, &blocked, Ok(None), &steady, now);
        let (ok, reason, message) = condition(&status, "SecretsResolved");
        assert_eq!((ok.as_str(), reason.as_str()), ("False", "SecretNotFound"));
        assert!(message.contains("Secret \"pg\" not found"), "{message}");
        assert_eq!(
            status.resolved_distribution, None,
            "nothing applied, nothing recorded"
        );

        let cr = resource(starter().0, json!({}));
        let decision = decide_on(&cr, &resolved(), &operator());
        // The API server's refusal as the controller passes it on: the write and its cause.
        let refusal = "apply Deployment ns/s: denied by the quota";
        let status = status_after(&cr, &decision, Err(refusal), &steady, now);
        let (ok, reason, message) = condition(&status, "DeploymentUpdated");
        assert_eq!((ok.as_str(), reason.as_str()), ("False", "ApplyFailed"));
        assert!(message.contains("denied by the quota"), "{message}");

        let spec = starter();
        let rejected = planned_hash(&spec);
        let memory = json!({"rollback": {
            "lastReady": {"desiredHash": "hash-good", "image": "registry.corp/good@sha256:44"},
            "rejected": {"desiredHash": rejected, "image": PINNED, "generation": 3,
                "reason": "ServerCrashLooping", "message": "keeps exiting"}}});
        let cr = resource(spec.0.clone(), memory);
        let observed = Observed {
            replica_sets: Some(vec![replica_set(
                "hash-good",
                "registry.corp/good@sha256:44",
            )]),
            ..resolved()
        };
        let held = decide_on(&cr, &observed, &operator());
        let applied = Applied::default();
        let status = status_after(&cr, &held, Ok(Some(&applied)), &steady, now);
        let (ok, reason, message) = condition(&status, "DeploymentUpdated");
        assert_eq!((ok.as_str(), reason.as_str()), ("False", "RolledBack"));
        assert!(message.contains("keeps exiting"), "{message}");

        let cr = resource(starter().0, json!({}));
        let decision = decide_on(&cr, &resolved(), &operator());
        let rejection: crate::api::v1alpha2::RejectedRevision = serde_json::from_value(json!({
            "desiredHash": "hash-new", "image": PINNED, "generation": 3,
            "reason": "ServerCrashLooping", "message": "exit 1"}))
        .unwrap();
        let last_ready: crate::api::v1alpha2::RevisionStatus =
            serde_json::from_value(json!({"desiredHash": "hash-good", "image": "i"})).unwrap();
        let judged = rollback::Judgement::RollBack {
            rejected: rejection.clone(),
            last_ready,
        };
        let status = status_after(&cr, &decision, Ok(Some(&applied)), &judged, now);
        let memory = status.rollback.clone().unwrap();
        assert_eq!(memory.rejected, Some(Box::new(rejection)));
        assert_eq!(condition(&status, "DeploymentUpdated").1, "RolledBack");
    }
}

/// The old address is taken only from a server whose own Deployment (controlled by it) has an
/// available replica and that this reconcile leaves as it is: not while a rollout begins, and
/// not on the word of a Deployment of its name another resource controls.
#[test]
fn the_address_is_taken_only_from_a_server_that_serves_as_it_is() {
    use k8s_openapi::api::apps::v1::DeploymentStatus;

    let cr = resource(starter().0, json!({}));
    let mut observed = resolved();
    observed.take_over = taking_everything();
    let first = decide_on(&cr, &observed, &operator());
    let desired = first.next.as_ref().unwrap().desired.deployment.clone();
    let running = |available: i32, controller: &str, hash: Option<&str>| {
        let mut deployment = desired.clone();
        deployment.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2",
                "kind": "LlamaStackDistribution", "name": "s", "uid": controller,
                "controller": true}))
            .unwrap(),
        ]);
        if let Some(hash) = hash {
            deployment
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(crate::naming::DESIRED_HASH.to_owned(), hash.to_owned());
        }
        deployment.status = Some(DeploymentStatus {
            available_replicas: Some(available),
            ..DeploymentStatus::default()
        });
        deployment
    };
    let takes_address = |deployment| {
        let mut observed = resolved();
        observed.take_over = taking_everything();
        observed.deployment = Some(deployment);
        let decision = decide_on(&cr, &observed, &operator());
        decision
            .take_over
            .writes
            .iter()
            .any(|w| w.name == "old-service" && w.takes)
    };
    assert!(takes_address(running(1, "u-1", None)), "serving as it is");
    assert!(
        !takes_address(running(0, "u-1", None)),
        "no available replica"
    );
    assert!(
        !takes_address(running(1, "another", None)),
        "a Deployment of its name another resource controls"
    );
    assert!(
        !takes_address(running(1, "u-1", Some("an older revision"))),
        "a rollout begins"
    );
}
