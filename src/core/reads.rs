//! What a reconcile reads, as pure decisions from the stack and its recorded status, so that
//! the shell's gather and look steps read nothing the core did not ask for.
//!
//! - **Before the decision** (gather): first, which image reference is resolved and whether the
//!   pin is kept instead ([`image`]); then, once the Deployment and the referenced Secrets are
//!   read ([`later`]), the derived Secret's name ([`derived_secret`]) and whether the ReplicaSets
//!   are read, for a revision a rollback may restore ([`rollback::may_restore`]).
//! - **After the act** (look, [`looks`]): the server Pods while a rollout is under way or
//!   external providers install in them, the newest revision's ReplicaSet when those Pods are
//!   judged for a rollback (only a Deployment applied from a plan that is not held back is
//!   judged), the server itself when the stack is Ready. Each is read only when the status needs
//!   it.

use super::praxis::PraxisLook;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use llama_stack_resolver::Resolver;

use super::decide::Decision;
use super::observed::{Acted, Observed};
use super::pin::{self, Kept};
use super::stack::Stack;
use super::{dereference, report, rollback, rollout};
use crate::naming::derived_secret_name;

/// The reference the stack's distribution resolves from now, and the pin kept instead of
/// looking it up, as of `now` (the pin policy's choice: [`pin::choose`]).
pub(crate) fn image<'a>(
    stack: &Stack<'a>,
    resolver: &Resolver,
    now: jiff::Timestamp,
) -> (String, Option<Kept<'a>>) {
    pin::choose(stack, resolver, now)
}

/// The derived Secret's name, whose holder is read: when the stack has a connection string to
/// split (only then is there a Secret to derive) and every referenced Secret (`secrets`, as
/// read) was found, since the name carries their hash.
pub(crate) fn derived_secret(
    stack: &Stack<'_>,
    secrets: &BTreeMap<String, Option<Secret>>,
) -> Option<String> {
    if !stack.splits_connection_string {
        return None;
    }
    let check = dereference::secrets(stack, secrets).ok()?;
    let hash = check.hash.as_deref().unwrap_or_default();
    Some(derived_secret_name(stack.name(), hash))
}

/// What gather reads once the Deployment and the referenced Secrets are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Later {
    /// The derived Secret's name, whose holder is read ([`derived_secret`]).
    pub derived_secret: Option<String>,
    /// Whether the ReplicaSets are read: a rejected revision may be held back by restoring the
    /// last Ready one from its ReplicaSet ([`rollback::may_restore`]).
    pub replica_sets: bool,
}

/// What gather reads after `current` (the Deployment, as read) and `secrets` (the referenced
/// Secrets, as read).
pub(crate) fn later(
    stack: &Stack<'_>,
    current: Option<&Deployment>,
    secrets: &BTreeMap<String, Option<Secret>>,
) -> Later {
    Later {
        derived_secret: derived_secret(stack, secrets),
        replica_sets: rollback::may_restore(stack, current),
    }
}

/// What the look reads, and of which Deployment.
#[derive(Clone, Debug)]
pub struct Looks<'a> {
    /// The Deployment as it runs now: the one applied, else the one read at the start.
    pub deployment: Option<&'a Deployment>,
    /// The Deployment the rollback memory judges: one applied from a plan not held back.
    pub judged: Option<&'a Deployment>,
    /// Whether the server Pods are listed.
    pub pods: PodsNeeded,
    /// Whether the ReplicaSets are listed once Pods are found: a rollback is due on what the
    /// newest revision's Pods show.
    pub replica_sets: bool,
    /// The Deployment whose server is asked what it runs: one Ready with replicas.
    pub server: Option<&'a Deployment>,
    /// The Praxis Pods to list, for a server behind Praxis (or why its selector lists none).
    pub praxis: Option<Result<PraxisLook, String>>,
}

/// What to look at after the act came to `acted`, at `now`. Nothing when taking over held the
/// server back or the API server refused a write.
pub fn looks<'a>(
    stack: &Stack<'_>,
    decision: &Decision,
    observed: &'a Observed,
    acted: Acted<'a>,
    now: jiff::Timestamp,
) -> Looks<'a> {
    let applied = match acted {
        Acted::Applied(applied) => applied,
        Acted::Held(_) | Acted::Refused(_) => {
            return Looks {
                deployment: observed.deployment.as_ref(),
                judged: None,
                pods: PodsNeeded::No,
                replica_sets: false,
                server: None,
                praxis: None,
            };
        }
    };
    let deployment = match applied {
        Some(applied) => applied.deployment.as_ref(),
        None => observed.deployment.as_ref(),
    };
    let judged = deployment
        .filter(|_| applied.is_some() && decision.next.as_ref().is_ok_and(|i| i.hold.is_none()));
    let rollback_due = judged.is_some_and(|d| rollback::judges_pods(stack, d));
    let wanted = PodsWanted {
        external_providers: stack.has_external_providers(),
        rollout_waiting: rollout_waiting(deployment, now),
        rollback_due,
        created_now: observed.deployment.is_none() && deployment.is_some(),
    };
    let server = deployment.filter(|d| {
        report::is_ready(Some(d)) && d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) > 0
    });
    Looks {
        deployment,
        judged,
        pods: pods_needed(wanted),
        replica_sets: rollback_due,
        server,
        praxis: stack.networking.gateway.map(super::praxis::look),
    }
}

/// Which server Pods a reconcile needs to see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodsNeeded {
    /// None: the status does not use them.
    No,
    /// They are needed, but none can exist yet: the Deployment was created by this very
    /// reconcile, and its controller has made no ReplicaSet.
    NoneYet,
    /// They are needed: list them.
    List,
}

/// How long a rollout goes without progress before its Pods are listed for the status: the
/// timed look at a young rollout comes at that age (`next_look`), so one stuck that long is
/// looked at with its Pods; one that moves on before says nothing a Pod would add.
pub const PODS_AFTER: std::time::Duration = super::next_look::YOUNG_ROLLOUT;

/// What a reconcile knows of the rollout when it decides whether to list the Pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodsWanted {
    /// External providers are installed in the Pods: their init containers are the steps the
    /// status reports.
    pub external_providers: bool,
    /// The rollout is not complete and has gone [`PODS_AFTER`] without progress: a waiting
    /// container says why.
    pub rollout_waiting: bool,
    /// A rollback is due on what the newest revision's Pods show (`rollback::judges_pods`).
    pub rollback_due: bool,
    /// The Deployment did not exist before this reconcile's apply.
    pub created_now: bool,
}

/// Whether the Pods are needed, and can exist.
pub fn pods_needed(wanted: PodsWanted) -> PodsNeeded {
    let needed = wanted.external_providers || wanted.rollout_waiting || wanted.rollback_due;
    match (needed, wanted.created_now) {
        (false, _) => PodsNeeded::No,
        (true, true) => PodsNeeded::NoneYet,
        (true, false) => PodsNeeded::List,
    }
}

/// Whether `deployment`'s rollout is not complete and has gone [`PODS_AFTER`] without progress
/// at `now`.
pub fn rollout_waiting(deployment: Option<&Deployment>, now: jiff::Timestamp) -> bool {
    deployment.is_some_and(|d| {
        !rollout::complete(d)
            && super::next_look::waited(d, crate::naming::FIELD_MANAGER, now)
                .is_none_or(|waited| waited >= PODS_AFTER)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(external: bool, waiting: bool, due: bool, created: bool) -> PodsWanted {
        PodsWanted {
            external_providers: external,
            rollout_waiting: waiting,
            rollback_due: due,
            created_now: created,
        }
    }

    /// The derived Secret's holder is read only for a stack that splits a connection string,
    /// once every referenced Secret is found; its name follows the URL's value.
    #[test]
    fn the_derived_secret_is_looked_for_once_its_name_can_be_known() {
        use k8s_openapi::ByteString;
        use serde_json::json;

        use crate::api::v1alpha2::LlamaStackDistribution;

        let resource = |spec: serde_json::Value| -> LlamaStackDistribution {
            serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2",
                "kind": "LlamaStackDistribution", "metadata": {"name": "s", "namespace": "ns"},
                "spec": spec}))
            .unwrap()
        };
        let url = |url: &str| {
            let secret = Secret {
                data: Some(BTreeMap::from([(
                    "url".to_owned(),
                    ByteString(url.as_bytes().to_vec()),
                )])),
                ..Secret::default()
            };
            BTreeMap::from([("pg".to_owned(), Some(secret))])
        };
        let postgres = resource(json!({"distribution": {"name": "starter"},
            "storage": {"sql": {"type": "postgres",
                "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}}}));
        let plain = resource(json!({"distribution": {"name": "starter"}}));
        let (postgres, plain) = (
            Stack::read(&postgres).unwrap(),
            Stack::read(&plain).unwrap(),
        );
        let found = url("postgres://u:p@db:5432/app");

        assert_eq!(derived_secret(&plain, &found), None);
        let missing = BTreeMap::from([("pg".to_owned(), None)]);
        assert_eq!(derived_secret(&postgres, &missing), None);
        let name = derived_secret(&postgres, &found).expect("a name once the Secret is found");
        assert!(name.starts_with("s-derived-"), "{name}");
        let changed = derived_secret(&postgres, &url("postgres://u:q@db:5432/app"));
        assert!(changed.is_some_and(|other| other != name));
    }

    #[test]
    fn pods_are_listed_only_when_the_status_needs_them_and_they_can_exist() {
        let cases = [
            // (external providers, rollout waiting, rollback due, created by this reconcile)
            (wanted(false, false, false, false), PodsNeeded::No),
            (wanted(false, false, false, true), PodsNeeded::No),
            (wanted(true, false, false, false), PodsNeeded::List),
            (wanted(false, true, false, false), PodsNeeded::List),
            (wanted(false, false, true, false), PodsNeeded::List),
            (wanted(false, true, false, true), PodsNeeded::NoneYet),
            (wanted(true, true, true, true), PodsNeeded::NoneYet),
        ];
        for (wanted, expected) in cases {
            assert_eq!(pods_needed(wanted), expected, "{wanted:?}");
        }
    }

    fn deployment(status: serde_json::Value) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "generation": 2, "creationTimestamp": "2026-11-29T10:00:00Z",
                "managedFields": [{"manager": crate::naming::FIELD_MANAGER, "operation": "Apply",
                    "time": "2026-11-29T10:00:30Z"}]},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_rollout_is_waiting_once_it_has_gone_a_while_without_progress() {
        let at = |time: &str| time.parse::<jiff::Timestamp>().unwrap();
        let rolling = deployment(serde_json::json!({"observedGeneration": 2, "replicas": 1,
            "updatedReplicas": 0, "conditions": [{"type": "Progressing", "status": "True",
            "lastUpdateTime": "2026-11-29T10:00:40Z"}]}));
        assert!(
            !rollout_waiting(Some(&rolling), at("2026-11-29T10:00:45Z")),
            "progress 5 s ago"
        );
        assert!(
            rollout_waiting(Some(&rolling), at("2026-11-29T10:00:50Z")),
            "10 s without"
        );
        let complete = deployment(serde_json::json!({"observedGeneration": 2, "replicas": 1,
            "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}));
        assert!(!rollout_waiting(
            Some(&complete),
            at("2026-11-29T11:00:00Z")
        ));
        assert!(
            !rollout_waiting(None, at("2026-11-29T11:00:00Z")),
            "no Deployment"
        );
    }
}
