//! One reconcile of a LlamaStackDistribution: plan the config, check what it references, apply
//! what changed (nothing when nothing did), then report what is observed in the status.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::apply::{
    Change, create_config_map, ensure, ensure_in, ensure_pvc, prune_config_maps, sync_object,
};
use super::builders::{self, Desired, FIELD_MANAGER, Inputs};
use super::plan::{Planned, plan};
use super::referenced::{check_secrets, derive_url_secrets, read_ca_bundle};
use super::status::{Conditions, phase};
use super::{Context, Error};
use crate::api::common::DistributionPhase;
use crate::api::v1alpha2::{
    ConfigGenerationStatus, LlamaStackDistribution, LlamaStackDistributionStatus,
    ResolvedDistributionStatus,
};
use crate::webhook::references::references;

/// Steady state: re-resolve tags and re-check references this often.
const RESYNC: Duration = Duration::from_secs(300);
/// A spec problem the user must fix: retry this often (watches usually come first).
const RETRY_SPEC: Duration = Duration::from_secs(30);
/// A missing reference: retry this often (the reference watch usually comes first).
const RETRY_REFERENCE: Duration = Duration::from_secs(15);
/// A rollout in progress: look again this often.
const RETRY_ROLLOUT: Duration = Duration::from_secs(10);

/// What the apply half saw or wrote, for the status.
#[derive(Default)]
struct Observed {
    deployment: Option<Deployment>,
    service: bool,
    pvc_phase: Option<String>,
    route_url: Option<String>,
    requeue: Option<Duration>,
}

/// Reconciles one LlamaStackDistribution, and records it in the metrics.
pub async fn reconcile(
    cr: Arc<LlamaStackDistribution>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let started = std::time::Instant::now();
    let result = reconcile_once(&cr, &ctx).await;
    let (ok, reason) = match &result {
        Ok((_, reason)) => (true, reason.as_str()),
        Err(_) => (false, "ApiError"),
    };
    ctx.metrics.reconciled(ok, reason, started.elapsed());
    result.map(|(action, _)| action)
}

/// One reconcile; on success also the reason for the metrics (the phase, or why it failed).
async fn reconcile_once(
    cr: &LlamaStackDistribution,
    ctx: &Context,
) -> Result<(Action, String), Error> {
    let ns = cr.namespace().unwrap_or_default();
    let name = cr.name_any();
    let previous = cr.status.clone().unwrap_or_default();
    let mut conditions = Conditions::new(
        previous.conditions.as_deref().unwrap_or_default(),
        cr.metadata.generation,
    );
    let mut status = previous.clone();
    let current = Api::<Deployment>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&name)
        .await
        .map_err(super::api_err(format!("read Deployment {ns}/{name}")))?;
    let observed = converge(cr, ctx, &mut conditions, &mut status, current).await?;
    let ready = observe(cr, &observed, &mut conditions, &mut status);
    let phase = phase(&conditions, observed.deployment.is_some(), ready);
    let reason = match phase {
        DistributionPhase::Failed => conditions
            .failure_reason()
            .unwrap_or_else(|| "Failed".to_owned()),
        other => format!("{other:?}"),
    };
    status.phase = Some(phase);
    status.observed_generation = cr.metadata.generation;
    publish_events(ctx, cr, &conditions).await;
    status.conditions = Some(conditions.into_sorted());
    if status != previous {
        write_status(ctx, &ns, &name, &status).await?;
    }
    let requeue = observed
        .requeue
        .unwrap_or(if ready { RESYNC } else { RETRY_ROLLOUT });
    Ok((Action::requeue(requeue), reason))
}

async fn write_status(
    ctx: &Context,
    ns: &str,
    name: &str,
    status: &LlamaStackDistributionStatus,
) -> Result<(), Error> {
    let llsds: Api<LlamaStackDistribution> = Api::namespaced(ctx.client.clone(), ns);
    let patch = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "status": status});
    llsds
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .map_err(super::api_err(format!("update the status of {ns}/{name}")))?;
    Ok(())
}

/// Plans and applies. Spec problems end in a condition and leave every object as it was.
async fn converge(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    conditions: &mut Conditions,
    status: &mut LlamaStackDistributionStatus,
    current: Option<Deployment>,
) -> Result<Observed, Error> {
    let unchanged = |requeue| Observed {
        deployment: current.clone(),
        requeue: Some(requeue),
        ..Observed::default()
    };
    let planned = match plan(cr, ctx).await {
        Ok(planned) => planned,
        Err(failure) => {
            // FR-101: the image the name resolves to changed (operator upgrade) and its base config
            // does not take the spec: say so, and keep the running Deployment.
            let running = status
                .resolved_distribution
                .as_ref()
                .and_then(|r| r.image.as_deref());
            let upgraded = failure.reason == "ConfigGenerationFailed"
                && current.is_some()
                && matches!((running, failure.image.as_deref()), (Some(old), Some(new)) if old != new);
            if upgraded {
                let message = format!(
                    "Config generation failed after operator upgrade: {}",
                    failure.message
                );
                conditions.set("ConfigGenerated", false, "UpgradeConfigFailure", message);
            } else {
                conditions.set("ConfigGenerated", false, failure.reason, failure.message);
            }
            return Ok(unchanged(RETRY_SPEC));
        }
    };
    let refs = references(&serde_json::to_value(cr).unwrap_or_default());
    let secrets = check_secrets(&ctx.client, cr, &refs).await?;
    if let Some(message) = secrets.missing {
        conditions.set("SecretsResolved", false, "SecretNotFound", message);
        return Ok(unchanged(RETRY_REFERENCE));
    }
    let message = format!("Resolved {} secret references", secrets.count);
    conditions.set("SecretsResolved", true, "AllSecretsFound", message);
    if let Some(message) = derive_url_secrets(cr, ctx, &planned.generated, &secrets).await? {
        conditions.set("ConfigGenerated", false, "ConfigGenerationFailed", message);
        return Ok(unchanged(RETRY_SPEC));
    }
    let ca_bundle = match read_ca_bundle(&ctx.client, cr).await? {
        None => None,
        Some(Ok(pem)) => Some(pem),
        Some(Err(message)) => {
            conditions.set("ConfigGenerated", false, "CABundleInvalid", message);
            return Ok(unchanged(RETRY_REFERENCE));
        }
    };
    let inputs = Inputs {
        image: &planned.image,
        generated: Some(&planned.generated),
        config_map: &planned.config_map,
        generated_config_map: planned.generated_config_map,
        ca_bundle: ca_bundle.as_deref(),
        secrets_hash: secrets.hash.as_deref(),
        pull_secrets: &planned.pull_secrets,
        operator_namespace: ctx.operator_namespace(),
        routes_available: ctx.routes_available(),
        operator_image: ctx.operator_image().unwrap_or_default(),
        existing_selector: current
            .as_ref()
            .and_then(|d| d.spec.as_ref())
            .and_then(|s| s.selector.match_labels.as_ref()),
    };
    let desired = builders::desired(cr, &inputs).map_err(|source| Error::Build {
        what: "owned objects",
        source,
    })?;
    let observed = apply(cr, ctx, &desired, current.as_ref()).await?;
    record_config(cr, &planned, conditions, status);
    observe_external_providers(cr, ctx, conditions, status).await?;
    if let Some(deployment) = &observed.deployment {
        prune_when_rollout_settles(cr, ctx, deployment, &planned.config_map).await?;
    }
    Ok(observed)
}

/// Writes what differs, in dependency order: the config, the ServiceAccount and CA bundle the
/// Pods need, the data volume, then the Deployment (once), then the objects around it.
async fn apply(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    desired: &Desired,
    current: Option<&Deployment>,
) -> Result<Observed, Error> {
    let ns = cr.namespace().unwrap_or_default();
    let uid = cr.uid().unwrap_or_default();
    let client = &ctx.client;
    if let Some(cm) = &desired.config_map
        && create_config_map(&Api::namespaced(client.clone(), &ns), cm).await?
    {
        ctx.metrics.config_generated();
    }
    let sa_name = builders::managed_service_account_name(cr);
    let sa = desired.service_account.as_ref();
    ensure_in::<ServiceAccount>(client, &ns, &sa_name, sa, &uid).await?;
    let ca = desired.ca_bundle.as_ref();
    ensure_in::<ConfigMap>(client, &ns, &builders::ca_bundle_name(cr), ca, &uid).await?;
    let pvc_phase = match &desired.pvc {
        Some(pvc) => Some(
            ensure_pvc(
                &Api::<PersistentVolumeClaim>::namespaced(client.clone(), &ns),
                pvc,
            )
            .await?,
        ),
        None => None,
    };

    // The Deployment was read at the start of the reconcile: no second read.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let (change, deployment) = sync_object(
        &deployments,
        "Deployment",
        &cr.name_any(),
        Some(&desired.deployment),
        current.cloned(),
        &uid,
    )
    .await?;
    if change == Change::Applied {
        ctx.metrics.rollout();
        let reason = if current.is_some() {
            "RolloutStarted"
        } else {
            "Created"
        };
        let note = format!(
            "Deployment {} applied with image {} and config {}",
            cr.name_any(),
            image_of(&desired.deployment),
            config_of(&desired.deployment)
        );
        publish(ctx, cr, EventType::Normal, reason, note).await;
    }

    let service = Some(&desired.service);
    ensure_in::<Service>(client, &ns, &builders::service_name(cr), service, &uid).await?;
    let policy = desired.network_policy.as_ref();
    let policy_name = builders::network_policy_name(cr);
    ensure_in::<NetworkPolicy>(client, &ns, &policy_name, policy, &uid).await?;
    let ingress_name = builders::ingress_name(cr);
    let (_, ingress) =
        ensure_in::<Ingress>(client, &ns, &ingress_name, desired.ingress.as_ref(), &uid).await?;
    let mut route_url = ingress.as_ref().and_then(ingress_url);
    if ctx.routes_available() {
        let route_api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &ns, &builders::route_resource());
        let route = desired.route.as_ref();
        let (_, route) = ensure(&route_api, "Route", &ingress_name, route, &uid).await?;
        if let Some(host) = route.as_ref().and_then(|r| r.data["spec"]["host"].as_str()) {
            route_url = Some(format!("https://{host}"));
        }
    }
    let hpa = desired.hpa.as_ref();
    ensure_in::<HorizontalPodAutoscaler>(client, &ns, &builders::hpa_name(cr), hpa, &uid).await?;
    let pdb = desired.pdb.as_ref();
    ensure_in::<PodDisruptionBudget>(client, &ns, &builders::pdb_name(cr), pdb, &uid).await?;
    Ok(Observed {
        deployment,
        service: true,
        pvc_phase,
        route_url,
        requeue: None,
    })
}

fn image_of(d: &Deployment) -> String {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn config_of(d: &Deployment) -> String {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.volumes.as_ref())
        .and_then(|v| v.iter().find(|v| v.name == "config"))
        .and_then(|v| v.config_map.as_ref())
        .map(|c| c.name.clone())
        .unwrap_or_default()
}

/// `http://<load balancer or host>` of an Ingress; empty until it has an address.
fn ingress_url(ingress: &Ingress) -> Option<String> {
    let lb = ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .and_then(|l| l.first())
        .and_then(|l| l.hostname.clone().or_else(|| l.ip.clone()));
    let host = ingress
        .spec
        .as_ref()
        .and_then(|s| s.rules.as_ref())
        .and_then(|r| r.first())
        .and_then(|r| r.host.clone());
    Some(
        host.or(lb)
            .map(|h| format!("http://{h}"))
            .unwrap_or_default(),
    )
}

/// `status.externalProviders[]` and `ExternalProvidersReady` from the newest server Pod.
async fn observe_external_providers(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    conditions: &mut Conditions,
    status: &mut LlamaStackDistributionStatus,
) -> Result<(), Error> {
    use super::external_status::{newest, provider_statuses};
    use crate::api::common::ExternalProviderPhase;
    let providers = builders::external::of(cr);
    if providers.is_empty() {
        status.external_providers = None;
        conditions.remove("ExternalProvidersReady");
        return Ok(());
    }
    let ns = cr.namespace().unwrap_or_default();
    let selector = format!(
        "app.kubernetes.io/instance={},app.kubernetes.io/managed-by={FIELD_MANAGER}",
        cr.name_any()
    );
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(ctx.client.clone(), &ns)
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
        .map_err(super::api_err(format!(
            "list the Pods of {ns}/{}",
            cr.name_any()
        )))?;
    let previous = status.external_providers.clone().unwrap_or_default();
    let statuses = provider_statuses(&providers, newest(&pods.items), &previous);
    match statuses
        .iter()
        .find(|s| s.phase == ExternalProviderPhase::Failed)
    {
        Some(failed) => conditions.set(
            "ExternalProvidersReady",
            false,
            "ExternalProviderFailed",
            failed.message.clone().unwrap_or_default(),
        ),
        None if statuses
            .iter()
            .all(|s| s.phase == ExternalProviderPhase::Ready) =>
        {
            conditions.set(
                "ExternalProvidersReady",
                true,
                "ExternalProvidersReady",
                format!(
                    "{} external provider(s) installed and validated",
                    statuses.len()
                ),
            )
        }
        None => conditions.set(
            "ExternalProvidersReady",
            false,
            "ExternalProvidersInstalling",
            format!(
                "{} of {} external provider(s) ready",
                statuses
                    .iter()
                    .filter(|s| s.phase == ExternalProviderPhase::Ready)
                    .count(),
                statuses.len()
            ),
        ),
    }
    status.external_providers = Some(statuses);
    Ok(())
}

/// The config half of the status after a successful apply.
fn record_config(
    cr: &LlamaStackDistribution,
    planned: &Planned,
    conditions: &mut Conditions,
    status: &mut LlamaStackDistributionStatus,
) {
    let counts = format!(
        "{} providers and {} models",
        planned.generated.provider_count, planned.generated.resource_count
    );
    let message = match &planned.stale {
        Some(why) => format!(
            "Generated config.yaml with {counts} (registry unreachable, using {}: {why})",
            planned.image
        ),
        None => format!("Generated config.yaml with {counts}"),
    };
    conditions.set(
        "ConfigGenerated",
        true,
        "ConfigGenerationSucceeded",
        message,
    );
    let cm_name = planned.config_map.clone();
    conditions.set(
        "DeploymentUpdated",
        true,
        "DeploymentUpdateSucceeded",
        format!("Deployment {} updated with config {cm_name}", cr.name_any()),
    );
    let previous = status.config_generation.as_ref();
    let generated_at = match previous {
        Some(g) if g.config_map_name.as_ref() == Some(&cm_name) => g.generated_at.clone(),
        _ => Some(Time(jiff::Timestamp::now())),
    };
    status.config_generation = Some(ConfigGenerationStatus {
        config_map_name: Some(cm_name),
        generated_at,
        provider_count: i32::try_from(planned.generated.provider_count).ok(),
        resource_count: i32::try_from(planned.generated.resource_count).ok(),
        config_version: i32::try_from(planned.generated.config_version).ok(),
    });
    status.resolved_distribution = Some(ResolvedDistributionStatus {
        image: Some(planned.image.clone()),
        config_source: Some(planned.source),
        config_hash: Some(planned.base_hash.clone()),
    });
}

/// Prunes generated ConfigMaps once per settled rollout (not on every resync: a LIST of
/// ConfigMaps and ReplicaSets per object per resync would dominate a large cluster's load).
async fn prune_when_rollout_settles(
    cr: &LlamaStackDistribution,
    ctx: &Context,
    deployment: &Deployment,
    config_map: &str,
) -> Result<(), Error> {
    let generation = deployment.metadata.generation.unwrap_or_default();
    let settled = deployment.status.as_ref().is_some_and(|s| {
        s.observed_generation == Some(generation) && s.replicas == s.updated_replicas
    });
    let key = cr.uid().unwrap_or_default();
    if !ctx.needs_prune(&key, (generation, settled)) {
        return Ok(());
    }
    let ns = cr.namespace().unwrap_or_default();
    prune_config_maps(&ctx.client, &ns, &cr.name_any(), config_map).await?;
    ctx.pruned(&key, (generation, settled));
    Ok(())
}

/// Readiness and the v1alpha1 conditions from what was observed; returns whether it is Ready.
fn observe(
    cr: &LlamaStackDistribution,
    observed: &Observed,
    conditions: &mut Conditions,
    status: &mut LlamaStackDistributionStatus,
) -> bool {
    let deployment = observed.deployment.as_ref();
    // The Deployment's own replica count: under an HPA that is the autoscaler's choice.
    let desired = deployment
        .and_then(|d| d.spec.as_ref())
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let st = deployment.and_then(|d| d.status.as_ref());
    let available = st.and_then(|s| s.available_replicas).unwrap_or(0);
    let updated = st.and_then(|s| s.updated_replicas).unwrap_or(0);
    let ready_count = st.and_then(|s| s.ready_replicas).unwrap_or(0);
    let available_ok = deployment.is_some() && desired > 0 && available >= desired;
    let ready = available_ok && updated >= desired;
    conditions.set(
        "Available",
        available_ok,
        if available_ok {
            "MinimumReplicasAvailable"
        } else {
            "ReplicasUnavailable"
        },
        format!("{available}/{desired} replicas available"),
    );
    match (deployment, ready) {
        (_, true) => conditions.set(
            "DeploymentReady",
            true,
            "DeploymentReady",
            "Deployment is ready",
        ),
        (None, _) => conditions.set(
            "DeploymentReady",
            false,
            "DeploymentPending",
            "Deployment is pending",
        ),
        (Some(_), false) => conditions.set(
            "DeploymentReady",
            false,
            "DeploymentScaling",
            format!(
                "Deployment is scaling: {ready_count}/{desired} replicas ready, {updated} updated"
            ),
        ),
    }
    // Pods are Ready only while their readiness probe on /v1/health passes.
    if ready_count > 0 {
        conditions.set(
            "HealthCheck",
            true,
            "HealthCheckPassed",
            format!("/v1/health passes on {ready_count} replicas"),
        );
    } else {
        conditions.set(
            "HealthCheck",
            false,
            "HealthCheckFailed",
            "no replica passes /v1/health yet",
        );
    }
    if observed.service {
        conditions.set("ServiceReady", true, "ServiceReady", "Service is ready");
    }
    match &observed.pvc_phase {
        None if cr
            .spec
            .workload
            .as_ref()
            .and_then(|w| w.storage.as_ref())
            .is_none() =>
        {
            conditions.remove("StorageReady")
        }
        None => {}
        Some(phase) if phase == "Bound" => {
            conditions.set("StorageReady", true, "StorageReady", "Storage is ready")
        }
        Some(phase) => conditions.set(
            "StorageReady",
            false,
            "StorageNotBound",
            format!("PVC {} is not bound: {phase}", builders::pvc_name(cr)),
        ),
    }
    status.available_replicas = Some(available);
    let ns = cr.namespace().unwrap_or_default();
    let port = cr.spec.networking.as_ref().map_or(8321, |n| n.port);
    status.service_url = deployment.map(|_| {
        format!(
            "http://{}.{ns}.svc.cluster.local:{port}",
            builders::service_name(cr)
        )
    });
    if observed.service || observed.route_url.is_some() {
        status.route_url = observed.route_url.clone();
    }
    ready
}

/// One Event per condition that changed (status or reason): Warning when it turned False.
async fn publish_events(ctx: &Context, cr: &LlamaStackDistribution, conditions: &Conditions) {
    for c in conditions.changed() {
        // Readiness flaps during every rollout; Events are for what a person must look at.
        if matches!(
            c.type_.as_str(),
            "Available" | "DeploymentReady" | "HealthCheck"
        ) && c.status == "False"
        {
            continue;
        }
        let type_ = if c.status == "True" {
            EventType::Normal
        } else {
            EventType::Warning
        };
        publish(ctx, cr, type_, &c.reason, c.message.clone()).await;
    }
}

async fn publish(
    ctx: &Context,
    cr: &LlamaStackDistribution,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &cr.object_ref(&())).await {
        tracing::debug!(%error, "cannot publish an event");
    }
}
