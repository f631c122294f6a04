//! What a reconcile came to, as a pure decision from what it decided, did and saw: the rollback
//! judgement of the Deployment, the status ([`report::report`]) and when to look again
//! ([`next_look::after`]).

use std::time::Duration;

use super::adoption::Hold;
use super::decide::Decision;
use super::next_look::{self, ADOPTION_POLL, Outcome, RESYNC};
use super::observed::{Acted, Seen};
use super::reads::Looks;
use super::report::{self, Facts, Finished};
use super::rollback::{self, Judgement};
use super::stack::Stack;

/// What one reconcile came to.
pub(crate) struct Assessment {
    /// The status, to publish, and what its Events say.
    pub(crate) finished: Finished,
    /// How long until the next reconcile.
    pub requeue: Duration,
    /// The reason of the revision rolled back in this reconcile, if one was.
    pub rolled_back: Option<String>,
}

/// What the operator knows besides the stack, for the assessment.
#[derive(Clone, Copy)]
pub(crate) struct Around<'a> {
    /// The catalog the distribution names resolve in (the status lists its names).
    pub catalog: &'a llama_stack_resolver::Catalog,
    /// When the server's answers are due again (Ready stacks only).
    pub server_due: Option<Duration>,
    /// The time of anything that changes.
    pub now: jiff::Timestamp,
}

/// Assesses a reconcile of `stack`: `decision` on `observed`, acted on as `acted`, looked at as
/// `looks` found `seen`. The judgement first (only a Deployment applied is judged), then the
/// status, then when to look again.
pub(crate) fn assess(
    stack: &Stack<'_>,
    decision: &Decision,
    acted: Acted<'_>,
    (looks, seen): (&Looks<'_>, Seen),
    around: Around<'_>,
) -> Assessment {
    let now = around.now;
    let judgement = match acted {
        Acted::Applied(_) => judgement(stack, looks, &seen, now),
        Acted::Held(_) | Acted::Refused(_) => Judgement::Steady,
    };
    let applied = match acted {
        // While taking over holds the server back, only what it came to is said.
        Acted::Held(_) => None,
        Acted::Refused(error) => Some(Err(error)),
        Acted::Applied(applied) => Some(Ok(applied)),
    };
    // A refused write leaves the look with the Deployment read at the start and nothing else.
    let said = match applied {
        None => report::held_back(stack, now),
        Some(applied) => {
            let reachable = looks
                .praxis
                .as_ref()
                .and_then(|looked| super::praxis::reachable(looked, seen.praxis_ready.as_ref()));
            let facts = Facts {
                decision,
                applied,
                deployment: looks.deployment,
                pods: seen.pods.as_deref(),
                judgement: &judgement,
                server: seen.server,
                praxis: reachable
                    .into_iter()
                    .chain(decision.praxis_tls.clone())
                    .collect(),
            };
            report::report(stack, facts, around.catalog, now)
        }
    };
    let ready = said.ready();
    let finished = said.finished(stack.generation());
    let rolled_back = match judgement {
        Judgement::RollBack { rejected, .. } => Some(rejected.reason),
        _ => None,
    };
    let requeue = match acted {
        Acted::Held(Hold::Waiting) => ADOPTION_POLL,
        Acted::Held(Hold::Refused) | Acted::Refused(_) => RESYNC,
        Acted::Applied(_) => next_look::after(Outcome {
            retry: decision.next.as_ref().err().map(|blocked| blocked.retry),
            ready,
            rolled_back: rolled_back.is_some(),
            waited: looks
                .deployment
                .and_then(|d| next_look::waited(d, crate::naming::FIELD_MANAGER, now)),
            server_due: around.server_due,
        }),
    };
    Assessment {
        finished,
        requeue,
        rolled_back,
    }
}

/// What the rollback memory makes of the judged Deployment: only the newest revision's Pods are
/// judged (found through its ReplicaSet, read while a rollback is due on what they show).
fn judgement(stack: &Stack<'_>, looks: &Looks<'_>, seen: &Seen, now: jiff::Timestamp) -> Judgement {
    let Some(judged) = looks.judged else {
        return Judgement::Steady;
    };
    // The ReplicaSets were read only when the look asked for them and found Pods.
    let newest = match (seen.pods.as_deref(), seen.replica_sets.as_deref()) {
        (Some(pods), Some(sets)) => rollback::newest_revision_pods(judged, sets, pods),
        _ => Vec::new(),
    };
    rollback::judge(stack, judged, &newest, now)
}
