//! The act step, the shell's writes ([`act`]): what taking over decided (take_over), then the
//! decision's objects in dependency order (apply): a move in place handed over first (hand_over), what the Pods need
//! (for_the_pods), the Deployment (deployment), what is around the server (around),
//! old revisions pruned (prune). How one owned object is written (write), hand edits found
//! (drift).

mod apply;
mod around;
mod deployment;
mod drift;
mod for_the_pods;
mod hand_over;
mod migration;
mod prune;
mod take_over;
mod write;

use crate::api::conditions::Reason;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, Error, Writing};
use crate::core::adoption::Hold;
use crate::core::decide::Decision;
use crate::core::observed::{Acted, Applied, Observed};
use crate::core::stack::Stack;

/// An Event the act step asks the publish step for (a Normal one: what changed).
#[derive(Debug)]
pub(in crate::controller) struct Noted {
    /// Its reason.
    pub(in crate::controller) reason: Reason,
    /// What it says.
    pub(in crate::controller) note: String,
}

/// What the act step did.
pub(in crate::controller) enum ActOutcome {
    /// Taking over holds the server's own objects back: only its writes were made.
    Held(Hold),
    /// The decision's objects were written (`None`: it blocked, nothing was written).
    Applied(Option<Box<Applied>>),
    /// The API server refused a write.
    Refused {
        /// The refusal.
        error: ApiError,
        /// Its message, with its causes, for the status.
        message: String,
    },
}

impl ActOutcome {
    /// The API server refused `error`'s write; its message, with its causes, for the status.
    fn refused(error: ApiError) -> Self {
        Self::Refused {
            message: crate::error_chain(&error),
            error,
        }
    }

    /// As the core reads it.
    pub(in crate::controller) fn acted(&self) -> Acted<'_> {
        match self {
            Self::Held(hold) => Acted::Held(*hold),
            Self::Applied(applied) => Acted::Applied(applied.as_deref()),
            Self::Refused { message, .. } => Acted::Refused(message),
        }
    }
}

/// Writes what was decided: first what taking over was decided to make (only hand-backs while
/// the server cannot run: the old stack keeps serving), then a move in place's hand-over
/// (whatever the decision: see [`Decision::moves_in_place`]), then, unless taking over holds
/// the server back, the decision's objects. The stack's view of what it took is the decision's.
/// The Events of what changed are added to `noted` as they happen (kept whatever comes after:
/// a later refusal does not undo an earlier write).
pub(in crate::controller) async fn act(
    stack: &mut Stack<'_>,
    ctx: &Context,
    (decision, observed): (&Decision, &Observed),
    noted: &mut Vec<Noted>,
) -> Result<ActOutcome, Error> {
    stack.adoption = decision.take_over.adopted.clone();
    take_over::carry_out(stack, ctx, &decision.take_over.writes)
        .await
        .map_err(|e| Error::Act(Writing::TakeOver, e))?;
    if decision.moves_in_place
        && let Err(error) = hand_over::hand_over(stack, ctx, noted).await
    {
        return Ok(ActOutcome::refused(error));
    }
    if let Some(hold) = decision.take_over.adopted.hold {
        return Ok(ActOutcome::Held(hold));
    }
    let Ok(intent) = &decision.next else {
        return Ok(ActOutcome::Applied(None));
    };
    let moved = decision.moves_in_place;
    Ok(
        match apply::apply(stack, ctx, (intent, observed, moved), noted).await {
            Ok(applied) => ActOutcome::Applied(Some(Box::new(applied))),
            Err(error) => ActOutcome::refused(error),
        },
    )
}
