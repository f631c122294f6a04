//! Replicas under load and under disruption: HorizontalPodAutoscaler and PodDisruptionBudget.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec as BudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::object::Common;
use crate::api::v1alpha2::PodDisruptionBudgetSpec;
use crate::core::stack::Stack;
use crate::naming::{hpa_name, pdb_name};

/// CPU utilization target when autoscaling names no metric.
const DEFAULT_CPU_TARGET: i32 = 80;

/// The fewest replicas that can be running: the fixed count, or the autoscaler's minimum.
pub fn minimum_replicas(stack: &Stack) -> i32 {
    match &stack.workload.autoscaling {
        Some(a) => a.min_replicas.unwrap_or(1).max(1),
        None => stack.workload.replicas.unwrap_or(1),
    }
}

pub(super) fn hpa(stack: &Stack) -> Option<HorizontalPodAutoscaler> {
    let autoscaling = stack.workload.autoscaling.as_ref()?;
    let target = |resource: &str, percent: i32| MetricSpec {
        type_: "Resource".to_owned(),
        resource: Some(ResourceMetricSource {
            name: resource.to_owned(),
            target: MetricTarget {
                type_: "Utilization".to_owned(),
                average_utilization: Some(percent),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    };
    let mut metrics = Vec::new();
    if let Some(cpu) = autoscaling.target_cpu_utilization_percentage {
        metrics.push(target("cpu", cpu));
    }
    if let Some(memory) = autoscaling.target_memory_utilization_percentage {
        metrics.push(target("memory", memory));
    }
    if metrics.is_empty() {
        metrics.push(target("cpu", DEFAULT_CPU_TARGET));
    }
    let min = autoscaling.min_replicas.unwrap_or(1).max(1);
    Some(HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some(hpa_name(stack.name())),
            ..ObjectMeta::default()
        },
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".to_owned()),
                kind: "Deployment".to_owned(),
                name: stack.name().to_owned(),
            },
            min_replicas: Some(min),
            max_replicas: autoscaling.max_replicas.max(min),
            metrics: Some(metrics),
            behavior: None,
        }),
        ..HorizontalPodAutoscaler::default()
    })
}

/// The user's budget when they set one (as the upstream operator did, whatever the replica
/// count; [`pdb_warning`] says when it blocks every drain). Without one, a budget only when at
/// least two replicas always run, at most one Pod down at a time: with one replica, any budget
/// that protects it would block every node drain.
pub(super) fn pdb(stack: &Stack, common: &Common) -> Option<PodDisruptionBudget> {
    let user = user_budget(stack);
    if user.is_none() && minimum_replicas(stack) < 2 {
        return None;
    }
    let mut spec = BudgetSpec {
        selector: Some(common.selector.clone()),
        ..BudgetSpec::default()
    };
    match user {
        Some(budget) if budget.min_available.is_some() => {
            spec.min_available.clone_from(&budget.min_available);
        }
        Some(budget) if budget.max_unavailable.is_some() => {
            spec.max_unavailable.clone_from(&budget.max_unavailable);
        }
        _ => spec.max_unavailable = Some(IntOrString::Int(1)),
    }
    Some(PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(pdb_name(stack.name())),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        ..PodDisruptionBudget::default()
    })
}

fn user_budget<'a>(stack: &Stack<'a>) -> Option<&'a PodDisruptionBudgetSpec> {
    stack.workload.pod_disruption_budget.as_ref()
}

/// Whether a budget lets no Pod of `replicas` be evicted: a node drain then waits for a person.
fn blocks_every_eviction(budget: &PodDisruptionBudgetSpec, replicas: i32) -> bool {
    // What the disruption controller computes: percentages round up for minAvailable, and
    // maxUnavailable percentages round up too.
    let count = |value: &IntOrString| match value {
        IntOrString::Int(n) => Some(i64::from(*n)),
        IntOrString::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map(|p| (p * i64::from(replicas) + 99) / 100),
    };
    let replicas = i64::from(replicas);
    match (&budget.min_available, &budget.max_unavailable) {
        (Some(min), _) => count(min).is_some_and(|m| m >= replicas),
        (None, Some(max)) => count(max).is_some_and(|m| m <= 0),
        (None, None) => false,
    }
}

/// A warning when the user's budget lets no server Pod be evicted at the fewest replicas that
/// run: every node drain then waits until someone scales up or edits the budget.
pub fn pdb_warning(stack: &Stack) -> Option<String> {
    let budget = user_budget(stack)?;
    let replicas = minimum_replicas(stack);
    blocks_every_eviction(budget, replicas).then(|| {
        format!(
            "workload.podDisruptionBudget lets no Pod of {replicas} replica(s) be evicted, so every node drain waits for a person; raise the replicas or allow one Pod down (maxUnavailable: 1)"
        )
    })
}
