//! The Praxis migration Job: the server's own Pod (its image, pinned; its config; the Secrets
//! its config reads; its ServiceAccount, resources and security context) running
//! `ogx migrate praxis` once, as a dry run and then for real ([`migration::script`]).
//!
//! What is not the server's: no probes, ports or lifecycle hooks; no init containers (the
//! external providers are not needed to read and write databases) and no data volume (the
//! migration reads the server's databases, and a volume one node writes would keep the Job from
//! starting beside the running server); no label the server's Service selects by, so a running
//! migration never receives the server's traffic.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    EnvVar, EnvVarSource, PodSpec, PodTemplateSpec, SecretKeySelector,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::object::Common;
use crate::api::v1alpha2::PraxisMigration;
use crate::core::migration::{self, ATTEMPT_ANNOTATION, Attempt};
use crate::naming::labels;

/// How long one attempt may run before it counts as failed.
pub const DEADLINE_SECONDS: i64 = 3600;
/// Pods a failed attempt is retried in (each kept, with its logs).
pub const BACKOFF_LIMIT: i32 = 2;
/// The container's name.
pub const CONTAINER: &str = "praxis-migration";
/// The `app.kubernetes.io/component` of the Job and its Pods.
pub const COMPONENT: &str = "praxis-migration";

/// The Job running `attempt` of `wanted`, from the server's Pod `server`.
pub(super) fn job(
    common: &Common,
    server: &PodSpec,
    wanted: &PraxisMigration,
    attempt: &Attempt,
) -> Option<Job> {
    let mut container = server.containers.first()?.clone();
    container.name = CONTAINER.to_owned();
    container.command = Some(vec!["/bin/sh".to_owned(), "-c".to_owned()]);
    container.args = Some(vec![migration::script(wanted)]);
    container.ports = None;
    container.liveness_probe = None;
    container.readiness_probe = None;
    container.startup_probe = None;
    container.lifecycle = None;
    let data_volumes: Vec<String> = server
        .volumes
        .iter()
        .flatten()
        .filter(|v| v.persistent_volume_claim.is_some())
        .map(|v| v.name.clone())
        .collect();
    if let Some(mounts) = container.volume_mounts.as_mut() {
        mounts.retain(|m| !data_volumes.contains(&m.name));
    }
    let mut env = container.env.take().unwrap_or_default();
    let target = &wanted.target_connection_string.secret_key_ref;
    env.push(EnvVar {
        name: "PRAXIS_DATABASE_URL".to_owned(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: target.name.clone(),
                key: target.key.clone(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    });
    let literal = |name: &str, value: &Option<String>| {
        value.as_ref().map(|value| EnvVar {
            name: name.to_owned(),
            value: Some(value.clone()),
            ..EnvVar::default()
        })
    };
    env.extend(literal(
        migration::FALLBACK_TENANT_VAR,
        &wanted.fallback_tenant,
    ));
    env.extend(literal(
        migration::FALLBACK_OWNER_VAR,
        &wanted.fallback_owner_subject,
    ));
    container.env = Some(env);

    let mut pod_labels: BTreeMap<String, String> = common
        .labels
        .iter()
        .filter(|(key, _)| !common.selector_labels.contains_key(key.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    pod_labels.insert(labels::COMPONENT.to_owned(), COMPONENT.to_owned());
    let pod = PodSpec {
        containers: vec![container],
        init_containers: None,
        volumes: server.volumes.clone().map(|volumes| {
            volumes
                .into_iter()
                .filter(|v| !data_volumes.contains(&v.name))
                .collect()
        }),
        restart_policy: Some("Never".to_owned()),
        ..server.clone()
    };
    Some(Job {
        metadata: ObjectMeta {
            name: Some(attempt.job_name.clone()),
            labels: Some(BTreeMap::from([(
                labels::COMPONENT.to_owned(),
                COMPONENT.to_owned(),
            )])),
            annotations: Some(BTreeMap::from([(
                ATTEMPT_ANNOTATION.to_owned(),
                attempt.key.clone(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(BACKOFF_LIMIT),
            active_deadline_seconds: Some(DEADLINE_SECONDS),
            completions: Some(1),
            parallelism: Some(1),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: Some(BTreeMap::from([(
                        ATTEMPT_ANNOTATION.to_owned(),
                        attempt.key.clone(),
                    )])),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod),
            },
            ..JobSpec::default()
        }),
        status: None,
    })
}
