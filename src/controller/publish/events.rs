//! Kubernetes Events about a stack (its LlamaStackDistribution or OGXServer): what a person
//! should look at.

use kube::runtime::events::{Event, EventType};

use crate::api::conditions::{ConditionType, Reason};
use crate::controller::context::Context;
use crate::core::conditions::Conditions;
use crate::core::subject::Subject;

/// Conditions that go False during every rollout: a person need not look at that, unless a
/// rollout is stuck on something to fix (`rollout::TROUBLE`).
const FLAPPING: [ConditionType; 3] = [
    ConditionType::Available,
    ConditionType::DeploymentReady,
    ConditionType::HealthCheck,
];

/// A Warning per condition that turned False (or changed its reason while False). Conditions
/// turning True are in the status; Events are for what a person must act on.
pub(in crate::controller) async fn failures(
    ctx: &Context,
    subject: &Subject,
    conditions: &Conditions,
) {
    for c in conditions.changed() {
        let trouble = crate::core::rollout::TROUBLE
            .iter()
            .any(|r| r.as_str() == c.reason);
        let summary = crate::core::conditions::SUMMARY
            .iter()
            .any(|t| t.as_str() == c.type_);
        if summary
            || c.status == "True"
            || (!trouble && FLAPPING.iter().any(|t| t.as_str() == c.type_))
        {
            continue;
        }
        publish_word(
            ctx,
            subject,
            EventType::Warning,
            &c.reason,
            c.message.clone(),
        )
        .await;
    }
}

/// Publishes one Event; a failure is only logged (an Event is never worth failing a reconcile).
pub(in crate::controller) async fn publish(
    ctx: &Context,
    subject: &Subject,
    type_: EventType,
    reason: Reason,
    note: String,
) {
    publish_word(ctx, subject, type_, reason.as_str(), note).await;
}

async fn publish_word(
    ctx: &Context,
    subject: &Subject,
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
    if let Err(error) = ctx.recorder.publish(&event, &subject.regarding).await {
        tracing::debug!(%error, "cannot publish an event");
    }
}
