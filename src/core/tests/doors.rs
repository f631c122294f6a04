//! The core's doors as the reconcile walks through them (`controller::reconcile`'s
//! `reconcile_once`): what to read first ([`reads::image`]), what to read once the Deployment and
//! the Secrets are read ([`reads::later`]), what to look at after the act ([`reads::looks`]) and
//! what it all comes to ([`assess`]). Each row is (spec and status, what was read, what was
//! applied, what the look saw, `now`), called exactly as the reconcile calls them: the stack
//! read from the resource, the decision from [`decide`] on what was read.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use llama_stack_resolver::{Catalog, Resolver, ResolverOptions};
use serde_json::{Value, json};

use super::fixtures::{PINNED, operator, resolved, resource};
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::core::adoption::Hold;
use crate::core::assess::{Around, assess};
use crate::core::decide::{Decision, decide};
use crate::core::next_look::{ADOPTION_POLL, RESYNC, YOUNG_ROLLOUT};
use crate::core::observed::{Acted, Applied, Observed, Seen};
use crate::core::reads::{self, PodsNeeded, looks};
use crate::core::stack::Stack;
use crate::naming::DESIRED_HASH;

fn starter() -> Value {
    json!({"distribution": {"name": "starter"}})
}

/// What gather read of a stack whose distribution resolved, with `deployment` as read.
fn read(deployment: Option<Deployment>) -> Observed {
    Observed {
        deployment,
        ..resolved()
    }
}

fn at(time: &str) -> jiff::Timestamp {
    time.parse().unwrap()
}

/// The Deployment the decision applies, as the API server returns it once made at `made`:
/// `available` of its `replicas` replicas, rolled out completely when `available` reaches them.
fn running(decision: &Decision, replicas: i32, available: i32, made: &str) -> Deployment {
    let mut deployment = decision.next.as_ref().unwrap().desired.deployment.clone();
    deployment.metadata.generation = Some(1);
    deployment.metadata.creation_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(made)),
    );
    deployment.spec.as_mut().unwrap().replicas = Some(replicas);
    deployment.status = Some(serde_json::from_value(json!({
        "observedGeneration": 1, "replicas": replicas.max(available),
        "updatedReplicas": available, "availableReplicas": available, "readyReplicas": available,
    }))
    .unwrap());
    deployment
}

fn applied(deployment: Deployment) -> Applied {
    Applied {
        deployment: Some(deployment),
        pvc_phase: None,
        route_url: None,
    }
}

/// After the act, only what the status needs is looked at: nothing when taking over held the
/// server back or a write was refused; the Pods of a rollout that waits (none yet when this
/// reconcile made the Deployment); the server itself once Ready with replicas; only a
/// Deployment applied from a plan not held back is judged.
#[test]
fn the_look_reads_only_what_the_status_needs() {
    let cr = resource(starter(), json!({}));
    let stack = Stack::read(&cr).unwrap();
    let nothing = read(None);
    let decision = decide(&stack, &nothing, &operator()).unwrap();
    let made = "2026-12-06T10:00:00Z";
    let young = at("2026-12-06T10:00:05Z");
    let old = at("2026-12-06T10:30:00Z");
    let waiting = applied(running(&decision, 1, 0, made));
    let ready = applied(running(&decision, 1, 1, made));
    let stopped = applied(running(&decision, 0, 0, made));
    let existing = read(Some(running(&decision, 1, 0, made)));
    // (case, what was read, what was acted, now, pods, judged, the server asked)
    type Row<'a> = (
        &'a str,
        &'a Observed,
        Acted<'a>,
        jiff::Timestamp,
        PodsNeeded,
        bool,
        bool,
    );
    let rows: Vec<Row<'_>> = vec![
        (
            "taking over holds the server",
            &nothing,
            Acted::Held(Hold::Waiting),
            old,
            PodsNeeded::No,
            false,
            false,
        ),
        (
            "a write refused",
            &existing,
            Acted::Refused("conflict"),
            old,
            PodsNeeded::No,
            false,
            false,
        ),
        (
            "the decision blocked: what runs is looked at",
            &existing,
            Acted::Applied(None),
            old,
            PodsNeeded::List,
            false,
            false,
        ),
        (
            "made now, a young rollout",
            &nothing,
            Acted::Applied(Some(&waiting)),
            young,
            PodsNeeded::No,
            true,
            false,
        ),
        (
            "made now, waiting long: no Pod can exist yet",
            &nothing,
            Acted::Applied(Some(&waiting)),
            old,
            PodsNeeded::NoneYet,
            true,
            false,
        ),
        (
            "made before, waiting long",
            &existing,
            Acted::Applied(Some(&waiting)),
            old,
            PodsNeeded::List,
            true,
            false,
        ),
        (
            "Ready with a replica: the server is asked",
            &existing,
            Acted::Applied(Some(&ready)),
            old,
            PodsNeeded::No,
            true,
            true,
        ),
        (
            "Ready at zero replicas: nothing to ask",
            &existing,
            Acted::Applied(Some(&stopped)),
            old,
            PodsNeeded::No,
            true,
            false,
        ),
    ];
    for (case, observed, acted, now, pods, judged, server) in rows {
        let looked = looks(&stack, &decision, observed, acted, now);
        assert_eq!(looked.pods, pods, "{case}");
        assert_eq!(looked.judged.is_some(), judged, "{case}");
        assert_eq!(looked.server.is_some(), server, "{case}");
        let expected = match acted {
            Acted::Applied(Some(applied)) => applied.deployment.as_ref(),
            _ => observed.deployment.as_ref(),
        };
        assert_eq!(
            looked.deployment, expected,
            "{case}: the Deployment as it runs now"
        );
        assert!(
            !looked.replica_sets,
            "{case}: no rollback is due without a memory"
        );
    }
}

/// What a reconcile comes to: held back by taking over, it says only the adoption's conditions
/// and looks again at the adoption's pace; refused, it says why and waits for the resync (the
/// error itself retries); applied, the status follows the Deployment, and a Ready stack looks
/// again at the resync or when its server is due, whichever comes first.
#[test]
fn a_reconcile_comes_to_its_status_and_its_next_look() {
    let cr = resource(starter(), json!({}));
    let stack = Stack::read(&cr).unwrap();
    let observed = read(None);
    let decision = decide(&stack, &observed, &operator()).unwrap();
    let catalog = Catalog::embedded().unwrap();
    let now = at("2026-12-06T10:30:00Z");
    // The look after the act, then the assessment, as the reconcile calls them (the look saw
    // nothing: no Pods, no server answer).
    let come_to = |acted: Acted<'_>, server_due: Option<Duration>| {
        let looked = looks(&stack, &decision, &observed, acted, now);
        let around = Around {
            catalog: &catalog,
            server_due,
            now,
        };
        assess(&stack, &decision, acted, (&looked, Seen::default()), around)
    };
    let ready = applied(running(&decision, 1, 1, "2026-12-06T10:00:00Z"));
    let waiting = applied(running(&decision, 1, 0, "2026-12-06T10:29:56Z"));
    let phase = |finished: &crate::core::report::Finished| {
        serde_json::to_value(&finished.status).unwrap()["phase"].clone()
    };
    let condition = |finished: &crate::core::report::Finished, kind: &str| {
        let status = serde_json::to_value(&finished.status).unwrap();
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .cloned()
    };

    let held = Acted::Held(Hold::Waiting);
    let assessed = come_to(held, None);
    assert_eq!(assessed.requeue, ADOPTION_POLL, "held: the adoption's pace");
    assert_eq!(
        condition(&assessed.finished, "DeploymentUpdated"),
        None,
        "held: nothing of the server's is said"
    );

    let refused = Acted::Refused("admission webhook denied the request");
    let assessed = come_to(refused, None);
    assert_eq!(assessed.requeue, RESYNC);
    let updated = condition(&assessed.finished, "DeploymentUpdated").unwrap();
    assert_eq!(
        (updated["status"].as_str(), updated["reason"].as_str()),
        (Some("False"), Some("ApplyFailed"))
    );
    assert!(
        updated["message"]
            .as_str()
            .unwrap()
            .contains("admission webhook denied"),
        "{updated}"
    );

    let acted = Acted::Applied(Some(&ready));
    let assessed = come_to(acted, None);
    assert_eq!(phase(&assessed.finished), "Ready");
    assert!(assessed.finished.became_ready);
    assert_eq!(assessed.requeue, RESYNC);
    let due = Duration::from_secs(20);
    let assessed = come_to(acted, Some(due));
    assert_eq!(
        assessed.requeue, due,
        "Ready: the server's answers are due first"
    );
    assert_eq!(assessed.rolled_back, None);

    let acted = Acted::Applied(Some(&waiting));
    let assessed = come_to(acted, Some(due));
    assert_ne!(phase(&assessed.finished), "Ready");
    assert!(!assessed.finished.became_ready);
    assert!(
        assessed.requeue >= YOUNG_ROLLOUT - Duration::from_secs(4) && assessed.requeue < RESYNC,
        "a rollout 4 s old is looked at again when it turns {YOUNG_ROLLOUT:?} old: {:?}",
        assessed.requeue
    );
}

/// Once the Deployment and the Secrets are read: the derived Secret's holder is read only for a
/// stack that splits a connection string whose Secret was found; the ReplicaSets only while a
/// rejected revision of this generation may be held back by restoring the last Ready one.
#[test]
fn what_is_read_once_the_deployment_and_the_secrets_are() {
    let postgres = json!({"distribution": {"name": "starter"}, "storage": {"sql": {"type": "postgres",
        "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}}});
    let url = Secret {
        data: Some(BTreeMap::from([(
            "url".to_owned(),
            ByteString(b"postgres://u:p@db:5432/x".to_vec()),
        )])),
        ..Secret::default()
    };
    let found = BTreeMap::from([("pg".to_owned(), Some(url))]);
    let missing = BTreeMap::from([("pg".to_owned(), None)]);
    let memory = |generation: i64| {
        json!({"rollback": {
        "lastReady": {"desiredHash": "hash-good", "image": "registry.corp/good@sha256:44"},
        "rejected": {"desiredHash": "hash-bad", "image": PINNED, "generation": generation,
            "reason": "ServerCrashLooping", "message": "keeps exiting"}}})
    };
    let deployment = |hash: &str| -> Deployment {
        serde_json::from_value(
            json!({"metadata": {"name": "s", "annotations": {DESIRED_HASH: hash}},
            "spec": {"selector": {}, "template": {}}}),
        )
        .unwrap()
    };
    let bad = deployment("hash-bad");
    let good = deployment("hash-good");
    // (case, spec, status, the Deployment read, the Secrets read, derived Secret read, ReplicaSets read)
    type Row<'a> = (
        &'a str,
        Value,
        Value,
        Option<&'a Deployment>,
        &'a BTreeMap<String, Option<Secret>>,
        bool,
        bool,
    );
    let none = BTreeMap::new();
    let rows: Vec<Row<'_>> = vec![
        (
            "no connection string",
            starter(),
            json!({}),
            None,
            &none,
            false,
            false,
        ),
        (
            "a connection string, its Secret found",
            postgres.clone(),
            json!({}),
            None,
            &found,
            true,
            false,
        ),
        (
            "a connection string, its Secret missing",
            postgres,
            json!({}),
            None,
            &missing,
            false,
            false,
        ),
        (
            "a rejection of this generation, the bad revision running",
            starter(),
            memory(3),
            Some(&bad),
            &none,
            false,
            true,
        ),
        (
            "a rejection of this generation, the good one restored",
            starter(),
            memory(3),
            Some(&good),
            &none,
            false,
            false,
        ),
        (
            "a rejection of an older generation",
            starter(),
            memory(2),
            Some(&bad),
            &none,
            false,
            false,
        ),
    ];
    for (case, spec, status, current, secrets, derived, replica_sets) in rows {
        let cr = resource(spec, status);
        let stack = Stack::read(&cr).unwrap();
        let later = reads::later(&stack, current, secrets);
        assert_eq!(later.derived_secret.is_some(), derived, "{case}: {later:?}");
        if let Some(name) = &later.derived_secret {
            assert!(
                name.starts_with("s-"),
                "{case}: the stack's own name leads: {name}"
            );
        }
        assert_eq!(later.replica_sets, replica_sets, "{case}");
    }
}

/// The first read: the reference the distribution resolves from now, and the pin deployed kept
/// instead of looking it up again while it was taken from that reference and no re-pin was
/// asked for.
#[test]
fn the_image_is_the_pin_kept_or_the_reference_looked_up() {
    let resolver = Resolver::new(ResolverOptions::new(Catalog::embedded().unwrap())).unwrap();
    let now = at("2026-12-06T10:00:00Z");
    let reference = "docker.io/ogxai/distribution-starter:1.3.0";
    let pinned = |from: &str, request: Option<&str>| {
        json!({"resolvedDistribution": {
        "image": PINNED, "reference": from, "repinRequest": request, "pinnedAt": "2026-12-01T00:00:00Z"}})
    };
    let repin = |request: &str| {
        let mut cr = resource(starter(), pinned(reference, Some("1")));
        cr.metadata.annotations = Some(BTreeMap::from([(
            crate::naming::REPIN_ANNOTATION.to_owned(),
            request.to_owned(),
        )]));
        cr
    };
    // (case, the resource, the pin kept)
    let rows: Vec<(&str, LlamaStackDistribution, bool)> = vec![
        (
            "nothing deployed yet",
            resource(starter(), json!({})),
            false,
        ),
        (
            "pinned from the same reference",
            resource(starter(), pinned(reference, None)),
            true,
        ),
        (
            "pinned from another reference",
            resource(starter(), pinned("registry.corp/other:1", None)),
            false,
        ),
        ("the re-pin already honoured", repin("1"), true),
        ("a new re-pin asked for", repin("2"), false),
    ];
    for (case, cr, kept) in rows {
        let stack = Stack::read(&cr).unwrap();
        let (looked_up, pin) = reads::image(&stack, &resolver, now);
        assert_eq!(looked_up, reference, "{case}");
        assert_eq!(
            pin.map(|k| (k.image, k.from)),
            kept.then_some((PINNED, reference)),
            "{case}"
        );
    }
    let unknown = resource(
        json!({"distribution": {"name": "no-such-distribution"}}),
        json!({}),
    );
    let stack = Stack::read(&unknown).unwrap();
    let (looked_up, pin) = reads::image(&stack, &resolver, now);
    assert_eq!(
        (looked_up.as_str(), pin),
        ("", None),
        "a name the catalog lacks: the resolution says why"
    );
}

/// Behind Praxis the look lists the Praxis Pods (the gateway's namespace and selector, else the
/// OGX operator's defaults) and the status says whether a Ready one reaches the server and
/// whether its TLS Secret is set; neither changes the phase. Out from behind Praxis, neither
/// condition stays.
#[test]
fn a_server_behind_praxis_says_whether_praxis_reaches_it() {
    use crate::core::door::Door;
    use crate::core::praxis::PraxisLook;
    use crate::core::stack::Model;

    let catalog = Catalog::embedded().unwrap();
    let now = at("2026-12-06T10:30:00Z");
    let come_to = |cr: &LlamaStackDistribution, praxis_ready: Option<Result<usize, String>>| {
        let ogx = Door::OgxServer { metrics_port: None };
        let stack = Stack::read_through(Model::of(cr), ogx).unwrap();
        let observed = read(None);
        let decision = decide(&stack, &observed, &operator()).unwrap();
        let ready = applied(running(&decision, 1, 1, "2026-12-06T10:00:00Z"));
        let acted = Acted::Applied(Some(&ready));
        let looked = looks(&stack, &decision, &observed, acted, now);
        let asked = looked.praxis.clone();
        let seen = Seen {
            praxis_ready,
            ..Seen::default()
        };
        let around = Around {
            catalog: &catalog,
            server_due: None,
            now,
        };
        let assessed = assess(&stack, &decision, acted, (&looked, seen), around);
        (
            asked,
            serde_json::to_value(&assessed.finished.status).unwrap(),
        )
    };
    let said = |status: &Value, kind: &str| {
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .map(|c| (c["status"].clone(), c["reason"].clone()))
    };
    let behind = resource(
        json!({"distribution": {"name": "starter"}, "gateway": {"praxis": {}}}),
        json!({}),
    );

    let (asked, status) = come_to(&behind, Some(Ok(2)));
    assert_eq!(
        asked,
        Some(Ok(PraxisLook {
            namespace: "openshift-ingress".to_owned(),
            selector: "app=payload-processing".to_owned(),
        }))
    );
    assert_eq!(
        said(&status, "PraxisReachable"),
        Some((json!("True"), json!("PraxisPodsReady")))
    );
    assert_eq!(
        said(&status, "TLSConfigured"),
        Some((json!("False"), json!("TLSSecretNotSet")))
    );
    assert_eq!(status["phase"], "Ready", "the conditions only inform");

    let (_, status) = come_to(&behind, Some(Ok(0)));
    assert_eq!(
        said(&status, "PraxisReachable"),
        Some((json!("False"), json!("NoReadyPraxisPods")))
    );
    assert_eq!(
        status["phase"], "Ready",
        "no Praxis yet: the server still serves"
    );

    let (_, status) = come_to(&behind, Some(Err("pods is forbidden".to_owned())));
    assert_eq!(
        said(&status, "PraxisReachable"),
        Some((json!("False"), json!("NoReadyPraxisPods")))
    );

    // Out from behind Praxis: the look asks for nothing, and what was said before goes.
    let said_before = json!({"conditions": [
        {"type": "PraxisReachable", "status": "True", "reason": "PraxisPodsReady", "message": "",
            "lastTransitionTime": "2026-12-06T10:00:00Z"},
        {"type": "TLSConfigured", "status": "False", "reason": "TLSSecretNotSet", "message": "",
            "lastTransitionTime": "2026-12-06T10:00:00Z"}]});
    let out = resource(starter(), said_before);
    let (asked, status) = come_to(&out, None);
    assert_eq!(asked, None);
    assert_eq!(said(&status, "PraxisReachable"), None);
    assert_eq!(said(&status, "TLSConfigured"), None);
}

/// A server behind Praxis that asks for the migration: the decision makes the attempt's Job
/// when none is there, watches the one of its attempt (a failed one is not made again), and
/// the status records where it stands; a preflight that fails makes nothing and says why.
#[test]
fn the_migration_is_decided_once_per_attempt_and_recorded() {
    use crate::core::door::Door;
    use crate::core::migration::step::{JobOutcome, JobSeen, Step};
    use crate::core::stack::Model;
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};

    let cr = resource(
        json!({"distribution": {"name": "starter"},
            "storage": {"sql": {"type": "postgres",
                "connectionString": {"secretKeyRef": {"name": "ogx-pg", "key": "url"}}}},
            "gateway": {"praxis": {"migration": {
                "targetConnectionString": {"secretKeyRef": {"name": "praxis-pg", "key": "url"}}}}}}),
        json!({}),
    );
    let stack =
        Stack::read_through(Model::of(&cr), Door::OgxServer { metrics_port: None }).unwrap();
    let secret = |name: &str, url: &str| {
        let mut secret: Secret = serde_json::from_value(json!({"metadata": {"name": name,
            "uid": format!("uid-{name}"), "resourceVersion": "1"}}))
        .unwrap();
        secret.data = Some(BTreeMap::from([(
            "url".to_owned(),
            ByteString(url.as_bytes().to_vec()),
        )]));
        (name.to_owned(), Some(secret))
    };
    // The image's version label: a build of a release (suffixed) may have
    // `ogx migrate praxis`; the release as published has not.
    let labelled = |mut observed: Observed, suffixed: bool| {
        if let Some(Ok(resolution)) = &mut observed.resolution {
            std::sync::Arc::make_mut(&mut resolution.config).server = Some(ServerRelease {
                line: ServerLine::Ogx,
                version: ServerVersion::parse("1.3.0"),
                evidence: Evidence::OgxVersionLabel,
                suffixed,
            });
        }
        observed
    };
    let read_with = |target: &str, job: Option<JobSeen>| Observed {
        secrets: BTreeMap::from([
            secret("ogx-pg", "postgresql://u:p@ogx-db/ogx"),
            secret("praxis-pg", target),
        ]),
        migration_job: job,
        ..read(None)
    };
    let published = |target: &str, job: Option<JobSeen>| labelled(read_with(target, job), false);
    let observed = |target: &str, job: Option<JobSeen>| labelled(read_with(target, job), true);
    let migration = |observed: &Observed| {
        let decision = decide(&stack, observed, &operator()).unwrap();
        decision
            .next
            .unwrap()
            .migration
            .expect("a migration is asked for")
    };

    // OGX 1.3.0 as released, by its label: it has no `ogx migrate praxis`.
    let lacking = migration(&published("postgresql://u:p@praxis-db/praxis", None));
    assert_eq!(lacking.step, None);
    assert!(lacking.job.is_none());
    assert_eq!(lacking.record.phase, "PreflightFailed");
    assert!(
        lacking.record.message.contains("no `ogx migrate praxis`"),
        "{}",
        lacking.record.message
    );

    let first = migration(&observed("postgresql://u:p@praxis-db/praxis", None));
    assert_eq!(first.step, Some(Step::Create));
    let job = first.job.expect("the attempt's Job");
    let key = first.record.attempt_key.clone().unwrap();
    assert_eq!(
        job.metadata.annotations.unwrap()["ogx.io/migration-attempt"],
        key
    );
    assert_eq!(first.record.phase, "Running");

    let failed = JobSeen {
        attempt: Some(key.clone()),
        ours: true,
        deleting: false,
        outcome: JobOutcome::Failed {
            reason: "BackoffLimitExceeded".to_owned(),
            message: "Job has reached the specified backoff limit".to_owned(),
        },
    };
    let again = migration(&observed("postgresql://u:p@praxis-db/praxis", Some(failed)));
    assert!(matches!(
        again.step,
        Some(Step::Watch(JobOutcome::Failed { .. }))
    ));
    assert!(again.job.is_none(), "the failed attempt is not made again");
    assert_eq!(again.record.phase, "Failed");

    // The target's Secret is a reference: missing, it blocks as any other does.
    let mut unread = observed("postgresql://u:p@praxis-db/praxis", None);
    unread.secrets.remove("praxis-pg");
    let blocked = decide(&stack, &unread, &operator())
        .unwrap()
        .next
        .unwrap_err();
    assert!(
        blocked.message.contains("targetConnectionString"),
        "{}",
        blocked.message
    );
    // Turned off while its Job runs: a soft rollback, the Job stopped, nothing made.
    let off = resource(
        json!({"distribution": {"name": "starter"}}),
        json!({"migration": {"phase": "Running", "attemptKey": key, "jobName": "s-praxis-migration"}}),
    );
    let off = Stack::read_through(Model::of(&off), Door::OgxServer { metrics_port: None }).unwrap();
    let running = JobSeen {
        attempt: Some(key.clone()),
        ours: true,
        deleting: false,
        outcome: JobOutcome::Running,
    };
    let stopped = decide(
        &off,
        &observed("postgresql://u:p@praxis-db/praxis", Some(running)),
        &operator(),
    )
    .unwrap()
    .next
    .unwrap()
    .migration
    .expect("the recorded migration is still said");
    assert_eq!(stopped.step, Some(Step::Replace));
    assert!(stopped.job.is_none());
    assert_eq!(stopped.record.phase, "Pending");
    assert!(stopped.soft_rollback.is_some());

    let same = migration(&observed("postgres://other@OGX-DB:5432/ogx", None));
    assert_eq!(same.step, None);
    assert!(same.job.is_none());
    assert_eq!(same.record.phase, "PreflightFailed");
    assert!(
        same.record.message.contains("same database"),
        "{}",
        same.record.message
    );
}
