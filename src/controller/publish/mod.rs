//! The publish step: the status a reconcile came to, written when it differs from the stored one,
//! with the Events of its transitions.

mod events;
mod status;

pub(in crate::controller) use events::noted;

use std::time::Instant;

use kube::runtime::events::EventType;

use crate::api::conditions::Reason;
use crate::controller::context::Context;
use crate::controller::error::ApiError;
use crate::controller::memory::{recent_writes, slim_cache};
use crate::core::report::Finished;
use crate::core::subject::Subject;

/// Sets the phase, publishes Events for the transitions and writes the status when it
/// differs from the stored one. Returns the reason recorded in the metrics (the phase, or
/// why it failed).
pub(in crate::controller) async fn publish(
    finished: Finished,
    subject: &Subject,
    ctx: &Context,
) -> Result<String, ApiError> {
    let Finished {
        reason,
        became_ready,
        previous,
        mut status,
        conditions,
    } = finished;
    // The cache keeps the providers as a digest (`slim_cache`): compared as such.
    let (mut compared, mut stored) = (status.clone(), previous);
    slim_cache::slim_status(&mut compared);
    slim_cache::slim_status(&mut stored);
    if compared == stored {
        return Ok(reason);
    }
    let uid = &subject.uid;
    let digest = recent_writes::digest(&slim_cache::remembered(&compared));
    let now = Instant::now();
    if ctx.recent_writes.just_written(uid, digest, now) {
        // The cache has not caught up with this very write: its Events are out already.
        return Ok(reason);
    }
    if slim_cache::has_digests(&status) {
        // Between reads of the server (or before the first one in this process) the providers
        // are a digest of those stored, and so are the available distributions of a reconcile
        // that did not plan: those are written again.
        let fresh = status::fresh(ctx, subject).await?;
        slim_cache::restore(&mut status, &fresh);
    }
    events::failures(ctx, subject, &conditions).await;
    if became_ready {
        let replicas = status
            .available_replicas
            .map(|n| format!("{n} replicas available"))
            .unwrap_or_default();
        events::publish(ctx, subject, EventType::Normal, Reason::Ready, replicas).await;
    }
    status::write(ctx, subject, &status).await?;
    ctx.recent_writes.wrote(uid, digest, now);
    Ok(reason)
}
