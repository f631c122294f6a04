//! Kubernetes Events about a stack (its LlamaStackDistribution or OGXServer): what a person
//! should look at.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};

use crate::api::conditions::{ConditionType, Reason};
use crate::controller::act::Noted;
use crate::controller::context::Context;
use crate::controller::memory::event_series::Write;
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

/// Publishes the Events the act step noted of what changed, in their order.
pub(in crate::controller) async fn noted(ctx: &Context, subject: &Subject, noted: Vec<Noted>) {
    for Noted { reason, note } in noted {
        publish(ctx, subject, EventType::Normal, reason, note).await;
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
    if let Err(error) = write(ctx, &event, &subject.regarding).await {
        tracing::debug!(%error, "cannot publish an event");
    }
}

/// Writes `event` about the object `regarding`: a new Event, or the next of its series
/// (`ctx.recorder` says which, and remembers what was written).
async fn write(
    ctx: &Context,
    event: &Event,
    regarding: &ObjectReference,
) -> Result<(), kube::Error> {
    let now = jiff::Timestamp::now();
    let namespace = regarding.namespace.as_deref().unwrap_or("default");
    let events: Api<K8sEvent> = Api::namespaced(ctx.client.clone(), namespace);
    let (key, next) = ctx.recorder.next(event, regarding, now);
    let name = match next {
        Write::Repeat { name, series } => {
            let patch = serde_json::json!({ "series": series });
            events
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            name
        }
        Write::Create(created) => {
            let name = created.metadata.name.clone().unwrap_or_default();
            events.create(&PostParams::default(), &created).await?;
            name
        }
    };
    ctx.recorder.published(key, name, now);
    Ok(())
}
