//! The migration as the decision carries it: the preflight, the next step, the Job to make and
//! what the status says, for a server behind Praxis that asks for the migration.

use k8s_openapi::api::batch::v1::Job;

use super::said::{self, Record};
use super::step::{self, JobOutcome, Step};
use crate::core::adoption::Said;
use crate::core::builders::{self, Desired, Inputs};
use crate::core::observed::Observed;
use crate::core::stack::Stack;

/// What the migration comes to in this reconcile.
#[derive(Clone, Debug)]
pub struct MigrationPlan {
    /// The next step; `None` when the preflight failed (nothing is made or deleted).
    pub step: Option<Step>,
    /// The attempt's Job, to make when the step is [`Step::Create`].
    pub job: Option<Job>,
    /// `status.migration`.
    pub record: Record,
    /// Its conditions.
    pub said: Vec<Said>,
    /// Set when the migration, asked for before, is not any more
    /// ([`said::SOFT_ROLLBACK`]): the status keeps its record, its conditions go but
    /// `MigrationValidated`.
    pub soft_rollback: Option<&'static str>,
}

/// The migration of `stack`, if it asks for one: its preflight on the server the image runs
/// ([`super::server_line`]) and on what was read, its attempt
/// on the image and config `desired` runs, its next step from the Job of its name as read
/// ([`Observed::migration_job`]) and the status recorded.
pub fn plan(
    stack: &Stack<'_>,
    observed: &Observed,
    inputs: &Inputs<'_>,
    desired: &Desired,
) -> Option<MigrationPlan> {
    let Some(wanted) = stack.networking.gateway.and_then(|g| g.migration.as_ref()) else {
        return turned_off(stack, observed);
    };
    let config = desired
        .config_map
        .as_ref()
        .and_then(|c| c.metadata.name.clone())
        .unwrap_or_else(|| "the image's own".to_owned());
    let preflight = match super::server_line::lacks_command(&inputs.server, inputs.image) {
        Some(why) => Err(why),
        None => super::preflight(
            wanted,
            stack.generator_input.storage.as_deref(),
            &observed.secrets,
            (stack.name(), inputs.image, &config),
        ),
    };
    let attempt = match preflight {
        Ok(attempt) => attempt,
        Err(why) => {
            let (record, said) = said::said(Err(&why));
            return Some(MigrationPlan {
                step: None,
                job: None,
                record,
                said,
                soft_rollback: None,
            });
        }
    };
    let validated = stack
        .recorded
        .status
        .and_then(|s| s.migration.as_ref())
        .is_some_and(|m| m.phase.as_deref() == Some("Validated"));
    let next = step::step(&attempt, observed.migration_job.as_ref(), validated);
    let job = (next == Step::Create)
        .then(|| builders::migration_job(stack, inputs, wanted, &attempt))
        .flatten();
    let (record, said) = said::said(Ok((&attempt, &next)));
    Some(MigrationPlan {
        step: Some(next),
        job,
        record,
        said,
        soft_rollback: None,
    })
}

/// A migration the status recorded that the spec no longer asks for (`migrationJob` removed or
/// disabled, or Praxis mode left): a soft rollback. Praxis keeps what was moved; an attempt's
/// Job still running is stopped (its Pods with it), a finished one kept for its logs; a
/// validated record stays, any other says the migration waits to be asked for again.
fn turned_off(stack: &Stack<'_>, observed: &Observed) -> Option<MigrationPlan> {
    let recorded = stack.recorded.status?.migration.as_ref()?;
    let running = observed
        .migration_job
        .as_ref()
        .is_some_and(|job| job.ours && !job.deleting && job.outcome == JobOutcome::Running);
    let validated = recorded.phase.as_deref() == Some("Validated");
    let record = Record {
        phase: if validated { "Validated" } else { "Pending" },
        attempt_key: recorded.attempt_key.clone(),
        job_name: recorded.job_name.clone(),
        message: if validated {
            recorded.message.clone().unwrap_or_default()
        } else {
            "The migration is not asked for".to_owned()
        },
    };
    Some(MigrationPlan {
        step: running.then_some(Step::Replace),
        job: None,
        record,
        said: Vec::new(),
        soft_rollback: Some(said::SOFT_ROLLBACK),
    })
}
