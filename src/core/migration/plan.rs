//! The migration as the decision carries it: the preflight, the next step, the Job to make and
//! what the status says, for a server behind Praxis that asks for the migration.

use k8s_openapi::api::batch::v1::Job;

use super::said::{self, Record};
use super::step::{self, Step};
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
}

/// The migration of `stack`, if it asks for one: its preflight on what was read, its attempt
/// on the image and config `desired` runs, its next step from the Job of its name as read
/// ([`Observed::migration_job`]) and the status recorded.
pub fn plan(
    stack: &Stack<'_>,
    observed: &Observed,
    inputs: &Inputs<'_>,
    desired: &Desired,
) -> Option<MigrationPlan> {
    let wanted = stack.networking.gateway?.migration.as_ref()?;
    let config = desired
        .config_map
        .as_ref()
        .and_then(|c| c.metadata.name.clone())
        .unwrap_or_else(|| "the image's own".to_owned());
    let preflight = super::preflight(
        wanted,
        stack.generator_input.storage.as_deref(),
        &observed.secrets,
        (stack.name(), inputs.image, &config),
    );
    let attempt = match preflight {
        Ok(attempt) => attempt,
        Err(why) => {
            let (record, said) = said::said(Err(&why));
            return Some(MigrationPlan {
                step: None,
                job: None,
                record,
                said,
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
    })
}
