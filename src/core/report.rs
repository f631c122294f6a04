//! The report: what one reconcile decided, did and saw, as conditions, a phase and the status
//! fields ([`report`], pure). The controller's publish step writes it (with Events for the
//! transitions) only when something differs from what is stored.

use super::migration::plan::MigrationPlan;
use crate::api::v1alpha2::MigrationStatus;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::adoption::Said;
use super::builders::ServerConfig;
use super::conditions::{Blocked, Conditions, phase};
use super::decide::{Decision, Held};
use super::external_status::{newest, provider_statuses};
use super::observed::{Applied, Providers, ServerInfo};
use super::plan::Planned;
use super::rollback::Judgement;
use super::stack::Stack;
use super::{rollback, rollout};

use crate::api::common::{
    DistributionConfig, DistributionPhase, ExternalProviderPhase, VersionInfo,
};
use crate::api::conditions::{ConditionType, Reason};
use crate::api::v1alpha2::{
    ConfigGenerationStatus, LlamaStackDistributionStatus, RejectedRevision,
    ResolvedDistributionStatus, RevisionStatus,
};
use crate::naming::service_name;

/// What one reconcile decided, did and saw after, for its status.
pub(crate) struct Facts<'a> {
    /// The decision.
    pub(crate) decision: &'a Decision,
    /// What the apply step wrote (`None`: the decision blocked, nothing was written), or the API
    /// server's refusal of a write (its message, with its causes).
    pub(crate) applied: Result<Option<&'a Applied>, &'a str>,
    /// The Deployment now: the one applied, else the one read at the start.
    pub(crate) deployment: Option<&'a Deployment>,
    /// The server Pods, when they were listed (see `observe::server_pods`).
    pub(crate) pods: Option<&'a [Pod]>,
    /// The rollback judgement of the Deployment as observed after the apply.
    pub(crate) judgement: &'a Judgement,
    /// What the server said of itself, when it was due to be asked.
    pub(crate) server: Option<ServerInfo>,
    /// `PraxisReachable` and `TLSConfigured`, as far as they were judged this time (a server
    /// behind Praxis only).
    pub(crate) praxis: Vec<Said>,
}

/// The status of a stack whose server taking over holds back: only what taking over came to.
pub(crate) fn held_back(stack: &Stack<'_>, now: jiff::Timestamp) -> Report {
    let mut report = Report::new(stack.recorded.status, stack.generation(), now);
    report.say(&stack.adoption.said);
    report
}

/// The status of a stack after one reconcile (pure): `facts` on the status the resource carries,
/// with `now` as the time of anything that changed.
pub(crate) fn report(
    stack: &Stack<'_>,
    facts: Facts<'_>,
    catalog: &llama_stack_resolver::Catalog,
    now: jiff::Timestamp,
) -> Report {
    let mut report = Report::new(stack.recorded.status, stack.generation(), now);
    report.say(&stack.adoption.said);
    report.praxis(stack.networking.gateway.is_some(), &facts.praxis);
    let decision = facts.decision;
    if let Some(count) = decision.secrets_found {
        report.secrets_resolved(count);
    }
    let applied = match (&decision.next, facts.applied) {
        (_, Err(error)) => {
            // The API server's refusal (a policy engine, a quota) belongs in the status, where
            // users look, not only in the operator's log.
            report.apply_failed(error);
            report.workload(stack, facts.deployment, None, None);
            return report;
        }
        (Err(blocked), Ok(_)) => {
            report.block(blocked.clone());
            None
        }
        (Ok(intent), Ok(applied)) => {
            report.config_applied(stack, &intent.planned);
            report.distributions(stack, catalog);
            if let Some(migration) = &intent.migration {
                report.migration(migration, stack.generation());
            }
            match &intent.hold {
                Some(hold) if hold.how == Held::NothingToRestore => {
                    report.rollback_not_possible(&hold.rejected, &hold.last_ready);
                }
                Some(hold) => report.hold(&hold.rejected, &hold.last_ready),
                None => report.rejection_lifted(),
            }
            applied
        }
    };
    if applied.is_some() {
        let with_providers = stack.has_external_providers();
        report.external_providers(stack, facts.pods.filter(|_| with_providers));
    }
    report.workload(stack, facts.deployment, applied, facts.pods);
    match facts.judgement {
        Judgement::Steady => {}
        Judgement::Ready(revision) => report.revision_ready(revision.clone()),
        Judgement::RollBack {
            rejected,
            last_ready,
        } => report.rolled_back(rejected.clone(), last_ready),
    }
    if let Some(info) = facts.server {
        report.server_info(info);
    }
    report
}

/// The status being assembled during one reconcile, starting from the stored one.
pub(crate) struct Report {
    previous: LlamaStackDistributionStatus,
    status: LlamaStackDistributionStatus,
    conditions: Conditions,
    /// The time of anything that changes in this reconcile.
    now: jiff::Timestamp,
    /// Whether a Deployment exists, and whether the stack is Ready (see [`Report::workload`]).
    has_deployment: bool,
    ready: bool,
    /// Whether a write of this generation was refused: it is not observed yet.
    unapplied: bool,
}

impl Report {
    /// Starts from the status `previous` the resource of generation `generation` carries.
    pub(crate) fn new(
        previous: Option<&LlamaStackDistributionStatus>,
        generation: Option<i64>,
        now: jiff::Timestamp,
    ) -> Self {
        let previous = previous.cloned().unwrap_or_default();
        let conditions = Conditions::new(
            previous.conditions.as_deref().unwrap_or_default(),
            generation,
            now,
        );
        Self {
            status: previous.clone(),
            previous,
            conditions,
            now,
            has_deployment: false,
            ready: false,
            unapplied: false,
        }
    }

    /// Whether the stack is Ready, as [`Report::workload`] found it.
    pub(crate) fn ready(&self) -> bool {
        self.ready
    }

    /// Records that the API server refused a write of an owned object.
    fn apply_failed(&mut self, error: &str) {
        self.unapplied = true;
        self.conditions.set(
            ConditionType::DeploymentUpdated,
            false,
            Reason::ApplyFailed,
            error.to_owned(),
        );
    }

    /// Sets each condition as `said` (what taking over came to, what Praxis was found to be).
    pub(crate) fn say(&mut self, said: &[Said]) {
        for said in said {
            self.conditions
                .set(said.condition, said.ok, said.reason, said.message.clone());
        }
    }

    /// What a server behind Praxis (`behind`) was found to be; a server no longer behind it
    /// says nothing of Praxis.
    fn praxis(&mut self, behind: bool, said: &[Said]) {
        if behind {
            self.say(said);
        } else {
            self.conditions.remove(ConditionType::PraxisReachable);
            self.conditions.remove(ConditionType::TLSConfigured);
        }
    }

    /// Where the Praxis migration stands (`status.migration`) and its conditions.
    fn migration(&mut self, plan: &MigrationPlan, generation: Option<i64>) {
        let record = &plan.record;
        self.status.migration = Some(MigrationStatus {
            phase: Some(record.phase.to_owned()),
            observed_generation: generation,
            attempt_key: record.attempt_key.clone(),
            job_name: record.job_name.clone(),
            message: Some(record.message.clone()),
            soft_rollback_warning: plan.soft_rollback.map(str::to_owned),
        });
        self.say(&plan.said);
        if plan.soft_rollback.is_some() {
            let validated = record.phase == "Validated";
            for condition in [
                ConditionType::MigrationPreflightReady,
                ConditionType::MigrationJobSucceeded,
                ConditionType::PraxisCutoverReady,
            ] {
                self.conditions.remove(condition);
            }
            if !validated {
                self.conditions.remove(ConditionType::MigrationValidated);
            }
        }
    }

    /// Records a problem the user must fix.
    pub(crate) fn block(&mut self, blocked: Blocked) {
        self.conditions.block(blocked);
    }

    /// Every referenced Secret was found.
    fn secrets_resolved(&mut self, count: usize) {
        self.conditions.set(
            ConditionType::SecretsResolved,
            true,
            Reason::AllSecretsFound,
            format!("Resolved {count} secret references"),
        );
    }

    /// The config half of the status after a successful apply.
    fn config_applied(&mut self, stack: &Stack<'_>, planned: &Planned) {
        let (reason, message) = config_message(planned);
        let conditions = &mut self.conditions;
        conditions.set(ConditionType::ConfigGenerated, true, reason, message);
        let cm_name = planned.mount.config_map().map(str::to_owned);
        conditions.set(
            ConditionType::DeploymentUpdated,
            true,
            Reason::DeploymentUpdateSucceeded,
            match &cm_name {
                Some(cm) => format!("Deployment {} updated with config {cm}", stack.name()),
                None => format!(
                    "Deployment {} updated with the image's own config",
                    stack.name()
                ),
            },
        );
        let generated_at = match &self.status.config_generation {
            Some(g) if g.config_map_name == cm_name => g.generated_at.clone(),
            _ => Some(Time(self.now)),
        };
        let counted = |n: usize| i32::try_from(n).ok().filter(|_| cm_name.is_some());
        self.status.config_generation = Some(ConfigGenerationStatus {
            config_map_name: cm_name.clone(),
            generated_at,
            provider_count: counted(planned.generated.provider_count),
            resource_count: counted(planned.generated.resource_count),
            config_version: i32::try_from(planned.generated.config_version)
                .ok()
                .filter(|_| cm_name.is_some()),
        });
        self.resolved_distribution(planned);
    }

    /// `status.resolvedDistribution`: the image the plan runs, and when it last changed (a
    /// lookup that finds the same digest changes nothing, so a quiet cluster writes no status).
    fn resolved_distribution(&mut self, planned: &Planned) {
        let previous = self.status.resolved_distribution.take().unwrap_or_default();
        let pinned_at = previous
            .pinned_at
            .filter(|_| previous.image.as_ref() == Some(&planned.image))
            .unwrap_or(Time(self.now));
        self.status.resolved_distribution = Some(ResolvedDistributionStatus {
            image: Some(planned.image.clone()),
            config_source: Some(planned.source),
            config_hash: Some(planned.base_hash.clone()).filter(|h| !h.is_empty()),
            reference: Some(planned.pin.reference.clone()).filter(|r| !r.is_empty()),
            pinned_at: Some(pinned_at),
            repin_request: planned.pin.request.clone(),
            server_line: Some(planned.server.line.as_str().to_owned()),
            server_version: planned.server.version.map(|v| v.to_string()),
            server_line_source: Some(planned.server.evidence.as_str().to_owned()),
            image_config: planned.base_file.clone(),
        });
    }

    /// `status.distributionConfig`'s `activeDistribution` (the name, or `custom` for an image,
    /// as the upstream operator wrote it) and `availableDistributions` (every name that
    /// resolves, `image-overrides` applied).
    fn distributions(&mut self, stack: &Stack<'_>, catalog: &llama_stack_resolver::Catalog) {
        let known = self.status.distribution_config.take().unwrap_or_default();
        let active = match &stack.distribution {
            llama_stack_resolver::Distribution::Name(name) => name.clone(),
            llama_stack_resolver::Distribution::Image(_) => "custom".to_owned(),
        };
        self.status.distribution_config = Some(DistributionConfig {
            active_distribution: Some(active),
            available_distributions: Some(catalog.available()),
            ..known
        });
    }

    /// `status.externalProviders[]` and `ExternalProvidersReady` from the newest server Pod;
    /// `None` when the resource has no external providers.
    fn external_providers(&mut self, stack: &Stack<'_>, pods: Option<&[Pod]>) {
        let Some(pods) = pods else {
            self.status.external_providers = None;
            self.conditions
                .remove(ConditionType::ExternalProvidersReady);
            return;
        };
        let providers = &stack.external_providers;
        let previous = self.status.external_providers.clone().unwrap_or_default();
        let statuses = provider_statuses(providers, newest(pods), &previous, self.now);
        let ready = statuses
            .iter()
            .filter(|s| s.phase == ExternalProviderPhase::Ready)
            .count();
        let failed = statuses
            .iter()
            .find(|s| s.phase == ExternalProviderPhase::Failed);
        let (ok, reason, message) = match failed {
            Some(failed) => (
                false,
                Reason::ExternalProviderFailed,
                failed.message.clone().unwrap_or_default(),
            ),
            None if ready == statuses.len() => (
                true,
                Reason::ExternalProvidersReady,
                format!("{ready} external provider(s) installed and validated"),
            ),
            None => (
                false,
                Reason::ExternalProvidersInstalling,
                format!("{ready} of {} external provider(s) ready", statuses.len()),
            ),
        };
        self.conditions
            .set(ConditionType::ExternalProvidersReady, ok, reason, message);
        self.status.external_providers = Some(statuses);
    }

    /// Readiness and the workload conditions from the Deployment (the one applied, or the one
    /// kept when the reconcile was blocked) and, when the apply ran, what it wrote.
    fn workload(
        &mut self,
        stack: &Stack<'_>,
        deployment: Option<&Deployment>,
        applied: Option<&Applied>,
        pods: Option<&[Pod]>,
    ) {
        let replicas = Replicas::of(deployment);
        let trouble = deployment
            .filter(|d| !rollout::complete(d))
            .and_then(|d| rollout::trouble(d, pods.unwrap_or_default()));
        let ready = replicas.record(&mut self.conditions, trouble);
        if applied.is_some() {
            self.conditions.set(
                ConditionType::ServiceReady,
                true,
                Reason::ServiceReady,
                "Service is ready",
            );
        }
        self.storage(stack, applied.and_then(|a| a.pvc_phase.as_deref()));
        self.status.available_replicas = Some(replicas.available);
        self.status.service_url = deployment.map(|_| service_url(stack));
        let route_url = applied.and_then(|a| a.route_url.clone());
        if applied.is_some() {
            self.status.route_url = route_url;
        }
        self.has_deployment = deployment.is_some();
        self.ready = ready;
    }

    /// Remembers `revision` as the last one whose every replica was Ready (what a rollback
    /// returns to).
    fn revision_ready(&mut self, revision: RevisionStatus) {
        let memory = self.status.rollback.get_or_insert_with(Default::default);
        memory.last_ready = Some(revision);
    }

    /// Records that the newest revision was rejected: the Deployment returns to `last_ready`
    /// in the next reconcile (the status is written first, so a restart in between finishes
    /// the rollback instead of forgetting it).
    fn rolled_back(&mut self, rejected: RejectedRevision, last_ready: &RevisionStatus) {
        self.hold(&rejected, last_ready);
        let memory = self.status.rollback.get_or_insert_with(Default::default);
        memory.rejected = Some(Box::new(rejected));
    }

    /// Says, in `DeploymentUpdated`, that a rejected revision is held back.
    fn hold(&mut self, rejected: &RejectedRevision, last_ready: &RevisionStatus) {
        self.conditions.set(
            ConditionType::DeploymentUpdated,
            false,
            Reason::RolledBack,
            rollback::held_message(rejected, last_ready),
        );
    }

    /// Says that a rollback was due and the last Ready revision's ReplicaSet is gone.
    fn rollback_not_possible(&mut self, rejected: &RejectedRevision, last_ready: &RevisionStatus) {
        self.conditions.set(
            ConditionType::DeploymentUpdated,
            false,
            Reason::RollbackNotPossible,
            rollback::impossible_message(rejected, last_ready),
        );
    }

    /// Forgets a rejection that no longer stands (the plan built another revision).
    fn rejection_lifted(&mut self) {
        if let Some(memory) = self.status.rollback.as_mut() {
            memory.rejected = None;
        }
    }

    /// Records what the running server said (or that it did not answer: the last answer stays).
    fn server_info(&mut self, info: ServerInfo) {
        match info {
            ServerInfo::Answered { version, providers } => {
                let previous = self.status.version.clone().unwrap_or_default();
                // The time moves only with the version, so that a read changes nothing at rest.
                let last_updated =
                    if previous.llama_stack_server_version.as_deref() == Some(version.as_str()) {
                        previous.last_updated
                    } else {
                        Some(Time(self.now))
                    };
                let message = format!(
                    "/v1/version says {version}; /v1/providers lists {}",
                    providers.count()
                );
                self.status.version = Some(VersionInfo {
                    operator_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                    llama_stack_server_version: Some(version),
                    last_updated,
                });
                let known = self.status.distribution_config.clone().unwrap_or_default();
                let (providers, providers_digest) = match providers {
                    Providers::Listed(list) => (Some(list), None),
                    Providers::Remembered(digest) => (None, Some(digest)),
                };
                self.status.distribution_config = Some(DistributionConfig {
                    providers,
                    providers_digest,
                    ..known
                });
                self.conditions.set(
                    ConditionType::ServerResponding,
                    true,
                    Reason::ServerResponded,
                    message,
                );
            }
            ServerInfo::NotResponding(why) => {
                self.conditions.set(
                    ConditionType::ServerResponding,
                    false,
                    Reason::ServerNotResponding,
                    why,
                );
            }
        }
    }

    fn storage(&mut self, stack: &Stack<'_>, pvc_phase: Option<&str>) {
        let wanted = stack.storage.is_some();
        match pvc_phase {
            None if !wanted => self.conditions.remove(ConditionType::StorageReady),
            None => {}
            Some("Bound") => self.conditions.set(
                ConditionType::StorageReady,
                true,
                Reason::StorageReady,
                "Storage is ready",
            ),
            Some(phase) => self.conditions.set(
                ConditionType::StorageReady,
                false,
                Reason::StorageNotBound,
                format!("PVC {} is not bound: {phase}", stack.claim_name()),
            ),
        }
    }

    /// The status as it is written: the phase, the summary conditions and the `generation`
    /// observed. Returns the reason recorded in the metrics (the phase, or why it failed) and
    /// whether the stack just became Ready.
    fn finish(&mut self, generation: Option<i64>) -> (String, bool) {
        let phase = phase(&self.conditions, self.has_deployment, self.ready);
        let reason = match phase {
            DistributionPhase::Failed => self
                .conditions
                .failure_reason()
                .unwrap_or_else(|| "Failed".to_owned()),
            other => format!("{other:?}"),
        };
        let became_ready = phase == DistributionPhase::Ready
            && self.previous.phase != Some(DistributionPhase::Ready);
        self.conditions.summarize(phase);
        self.status.phase = Some(phase);
        // A generation whose write was refused is not observed: kstatus and `kubectl wait`
        // must not take the old Pods for the new spec.
        if !self.unapplied {
            self.status.observed_generation = generation;
        }
        self.status.conditions = Some(self.conditions.clone().into_sorted());
        (reason, became_ready)
    }

    /// The finished status (what [`Report::publish`] compares and writes), for tables.
    #[cfg(test)]
    pub(crate) fn into_status(mut self, generation: Option<i64>) -> LlamaStackDistributionStatus {
        self.finish(generation);
        self.status
    }

    /// The finished report: the phase set, and what [`Finished`] carries for the publish step.
    pub fn finished(mut self, generation: Option<i64>) -> Finished {
        let (reason, became_ready) = self.finish(generation);
        Finished {
            reason,
            became_ready,
            previous: self.previous,
            status: self.status,
            conditions: self.conditions,
        }
    }
}

/// A finished report: what the publish step compares, tells and writes.
pub struct Finished {
    /// The reason recorded in the metrics (the phase).
    pub reason: String,
    /// Whether the stack became Ready in this reconcile (an Event says so).
    pub became_ready: bool,
    /// The status the resource carried.
    pub previous: LlamaStackDistributionStatus,
    /// The status to write, when it differs from `previous`.
    pub status: LlamaStackDistributionStatus,
    /// The conditions, for the Events of failures.
    pub conditions: Conditions,
}

/// Whether a stack whose Deployment is `deployment` is Ready (what [`report`] finds too), for
/// the reads that wait for readiness.
pub(crate) fn is_ready(deployment: Option<&Deployment>) -> bool {
    Replicas::of(deployment).ready()
}

/// The message of a stack scaled to zero.
const STOPPED: &str = "scaled to zero replicas: no server runs until replicas is raised";

/// The replica counts of a Deployment, as the conditions judge them.
struct Replicas {
    /// The Deployment's own count: under an HPA, the autoscaler's choice.
    desired: i32,
    available: i32,
    updated: i32,
    /// Pods of every revision (`status.replicas`).
    running: i32,
    ready: i32,
    exists: bool,
    /// The newest revision has every replica, available, and no older Pod is left.
    complete: bool,
}

impl Replicas {
    fn of(deployment: Option<&Deployment>) -> Self {
        let desired = deployment
            .and_then(|d| d.spec.as_ref())
            .and_then(|s| s.replicas)
            .unwrap_or(1);
        let st = deployment.and_then(|d| d.status.as_ref());
        Self {
            desired,
            available: st.and_then(|s| s.available_replicas).unwrap_or(0),
            updated: st.and_then(|s| s.updated_replicas).unwrap_or(0),
            running: st.and_then(|s| s.replicas).unwrap_or(0),
            ready: st.and_then(|s| s.ready_replicas).unwrap_or(0),
            exists: deployment.is_some(),
            complete: deployment.is_some_and(rollout::complete),
        }
    }

    /// Whether every wanted replica runs the newest revision and serves (or none is wanted).
    fn ready(&self) -> bool {
        let available_ok = self.exists && self.desired > 0 && self.available >= self.desired;
        let stopped = self.exists && self.desired == 0 && self.complete;
        (available_ok || stopped) && self.complete
    }

    /// Sets `Available` (replicas serving, of any revision), `DeploymentReady` (the newest
    /// revision rolled out, or what stops it) and `HealthCheck`; returns whether it is Ready.
    fn record(&self, conditions: &mut Conditions, trouble: Option<rollout::Trouble>) -> bool {
        let Self {
            desired,
            available,
            updated,
            running,
            ready: ready_count,
            exists,
            complete,
        } = *self;
        let available_ok = exists && desired > 0 && available >= desired;
        // Scaled to zero on purpose: every wanted replica (none) runs the current revision.
        let stopped = exists && desired == 0 && complete;
        let ready = self.ready();
        if stopped {
            conditions.set(
                ConditionType::Available,
                false,
                Reason::ScaledToZero,
                STOPPED,
            );
            conditions.set(
                ConditionType::DeploymentReady,
                true,
                Reason::ScaledToZero,
                STOPPED,
            );
            conditions.set(
                ConditionType::HealthCheck,
                false,
                Reason::ScaledToZero,
                STOPPED,
            );
            return true;
        }
        let reason = if available_ok {
            Reason::MinimumReplicasAvailable
        } else {
            Reason::ReplicasUnavailable
        };
        let message = format!("{available}/{desired} replicas available");
        conditions.set(ConditionType::Available, available_ok, reason, message);
        let (reason, message) = match (exists, ready, trouble) {
            (_, true, _) => (Reason::DeploymentReady, "Deployment is ready".to_owned()),
            (true, false, Some(trouble)) => (trouble.reason, trouble.message),
            (false, _, _) => (
                Reason::DeploymentPending,
                "Deployment is pending".to_owned(),
            ),
            (true, false, None) => (Reason::DeploymentScaling, {
                // Old Pods are named only while there are some: the counts of a first rollout
                // would change the message (and cost a status write) at every step.
                let older = running - updated;
                let mut message =
                    format!("Deployment is scaling: {ready_count}/{desired} replicas ready");
                if older > 0 {
                    message.push_str(&format!(
                        ", {updated} updated, {older} of an older revision still running"
                    ));
                }
                message
            }),
        };
        conditions.set(ConditionType::DeploymentReady, ready, reason, message);
        // Pods are Ready only while their readiness probe on /v1/health passes.
        let (reason, message) = if ready_count > 0 {
            (
                Reason::HealthCheckPassed,
                format!("/v1/health passes on {ready_count} replicas"),
            )
        } else {
            (
                Reason::HealthCheckFailed,
                "no replica passes /v1/health yet".to_owned(),
            )
        };
        conditions.set(ConditionType::HealthCheck, ready_count > 0, reason, message);
        ready
    }
}

/// The in-cluster URL of the server.
fn service_url(stack: &Stack<'_>) -> String {
    let ns = stack.namespace();
    let port = stack.networking.port;
    format!(
        "http://{}.{ns}.svc.cluster.local:{port}",
        service_name(stack.name())
    )
}

/// `ConfigGenerated`'s reason and message for a plan: where the config comes from, what it holds,
/// whether the registry was reachable, and the plan's warnings.
fn config_message(planned: &Planned) -> (Reason, String) {
    let counts = format!(
        "{} providers and {} models",
        planned.generated.provider_count, planned.generated.resource_count
    );
    let (reason, what) = match &planned.mount {
        ServerConfig::Image => (
            Reason::ImageOwnConfig,
            format!(
                "Running the config of image {} with its own entrypoint: the image has no config labels (com.ogx.config.* or io.llamastack.config.*), the operator no embedded config for it, and the resource asks for nothing to generate",
                planned.image
            ),
        ),
        ServerConfig::User { config_map, key } => (
            Reason::ConfigGenerationSucceeded,
            format!("Using {key} of ConfigMap {config_map} with {counts}"),
        ),
        ServerConfig::Generated(_) => (
            Reason::ConfigGenerationSucceeded,
            format!("Generated config.yaml with {counts}"),
        ),
    };
    let message = match &planned.stale {
        Some(why) => format!(
            "{what} (registry unreachable, using {}: {why})",
            planned.image
        ),
        None => what,
    };
    let message = match planned.warnings.as_slice() {
        [] => message,
        warnings => format!("{message}; {}", warnings.join("; ")),
    };
    (reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replicas(desired: i32, available: i32, complete: bool) -> Replicas {
        Replicas {
            desired,
            available,
            updated: desired,
            running: desired,
            ready: available,
            exists: true,
            complete,
        }
    }

    fn scaling_message(replicas: Replicas) -> String {
        let mut conditions = Conditions::new(&[], Some(1), jiff::Timestamp::now());
        replicas.record(&mut conditions, None);
        conditions
            .into_sorted()
            .into_iter()
            .find(|c| c.type_ == "DeploymentReady")
            .map(|c| c.message)
            .unwrap_or_default()
    }

    #[test]
    fn a_first_rollout_reports_one_message_until_ready_and_a_replacement_names_the_old_pods() {
        let first = |updated, running| Replicas {
            updated,
            running,
            ..replicas(1, 0, false)
        };
        assert_eq!(
            scaling_message(first(0, 0)),
            "Deployment is scaling: 0/1 replicas ready"
        );
        assert_eq!(scaling_message(first(1, 1)), scaling_message(first(0, 0)));
        let replacing = Replicas {
            updated: 1,
            running: 3,
            ..replicas(2, 2, false)
        };
        assert_eq!(
            scaling_message(replacing),
            "Deployment is scaling: 2/2 replicas ready, 1 updated, 2 of an older revision still running"
        );
    }

    fn reasons(conditions: Conditions) -> Vec<(String, String, String)> {
        conditions
            .into_sorted()
            .into_iter()
            .map(|c| (c.type_, c.status, c.reason))
            .collect()
    }

    #[test]
    fn a_stack_scaled_to_zero_is_ready_and_says_nothing_serves() {
        let mut conditions = Conditions::new(&[], Some(1), jiff::Timestamp::now());
        assert!(replicas(0, 0, true).record(&mut conditions, None));
        let words = reasons(conditions);
        for (type_, status) in [
            ("Available", "False"),
            ("DeploymentReady", "True"),
            ("HealthCheck", "False"),
        ] {
            assert!(
                words.contains(&(
                    type_.to_owned(),
                    status.to_owned(),
                    "ScaledToZero".to_owned()
                )),
                "{type_}={status} ScaledToZero in {words:?}"
            );
        }
    }

    #[test]
    fn old_pods_serving_a_failed_rollout_are_available_but_not_ready() {
        let mut conditions = Conditions::new(&[], Some(1), jiff::Timestamp::now());
        let crash = rollout::Trouble {
            reason: Reason::ServerCrashLooping,
            message: "keeps exiting".to_owned(),
        };
        assert!(!replicas(1, 1, false).record(&mut conditions, Some(crash)));
        let words = reasons(conditions);
        assert!(words.contains(&(
            "Available".into(),
            "True".into(),
            "MinimumReplicasAvailable".into()
        )));
        assert!(words.contains(&(
            "DeploymentReady".into(),
            "False".into(),
            "ServerCrashLooping".into()
        )));
    }
}
