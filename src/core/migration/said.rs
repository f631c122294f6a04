//! What the status says of the migration: `status.migration` (the OGX operator's record) and
//! its four conditions, from the preflight and the next step. The words are the OGX operator's
//! where it has them.

use super::Attempt;
use super::step::{JobOutcome, Step};
use crate::api::conditions::{ConditionType, Reason};
use crate::core::adoption::Said;

/// What turning the migration off after asking for it comes to (the status's
/// `softRollbackWarning`, and the webhook's warning when the spec says so).
pub const SOFT_ROLLBACK: &str = "the Praxis migration is no longer asked for: a soft rollback only. What it moved stays in Praxis's database and the server keeps its own; a migration Job still running is stopped, a finished or failed one is kept for its logs. Ask for it again to run a new attempt (a validated migration never runs again)";

/// `Pending`, `PreflightFailed`, `Running`, `Failed` or `Validated`.
pub type Phase = &'static str;

/// `status.migration`, as this reconcile found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Where it stands.
    pub phase: Phase,
    /// The attempt (none when the preflight failed).
    pub attempt_key: Option<String>,
    /// Its Job (none when the preflight failed).
    pub job_name: Option<String>,
    /// For a person.
    pub message: String,
}

/// What the status says after the preflight came to `preflight` and the migration to `step`.
pub fn said(preflight: Result<(&Attempt, &Step), &str>) -> (Record, Vec<Said>) {
    let (attempt, step) = match preflight {
        Err(why) => {
            let record = Record {
                phase: "PreflightFailed",
                attempt_key: None,
                job_name: None,
                message: why.to_owned(),
            };
            let conditions = vec![
                Said::new(
                    ConditionType::MigrationPreflightReady,
                    false,
                    Reason::MigrationPreflightFailed,
                    why.to_owned(),
                ),
                cutover_blocked(),
            ];
            return (record, conditions);
        }
        Ok(found) => found,
    };
    let job = &attempt.job_name;
    let record = |phase, message: String| Record {
        phase,
        attempt_key: Some(attempt.key.clone()),
        job_name: Some(job.clone()),
        message,
    };
    let passed = Said::new(
        ConditionType::MigrationPreflightReady,
        true,
        Reason::MigrationPreflightPassed,
        "Migration preflight checks passed".to_owned(),
    );
    let pending = |reason, message: String| {
        vec![
            passed.clone(),
            Said::new(ConditionType::MigrationJobSucceeded, false, reason, message),
            Said::new(
                ConditionType::MigrationValidated,
                false,
                Reason::MigrationValidationPending,
                "The migration has not completed".to_owned(),
            ),
            cutover_blocked(),
        ]
    };
    match step {
        Step::Create => {
            let message = format!("Migration Job {job:?} created; waiting for completion");
            (
                record("Running", message.clone()),
                pending(Reason::MigrationJobPending, message),
            )
        }
        Step::Replace | Step::Wait => {
            let message = "Waiting for the previous migration Job to finish terminating before starting a new attempt".to_owned();
            (
                record("Running", message.clone()),
                pending(Reason::MigrationJobPending, message),
            )
        }
        Step::Watch(JobOutcome::Running) => {
            let message = format!("Migration Job {job:?} is active");
            (
                record("Running", message.clone()),
                pending(Reason::MigrationJobRunning, message),
            )
        }
        Step::NotOurs => {
            let message = format!(
                "Job {job:?} exists and is not this server's: nothing is made or deleted; delete or rename it"
            );
            let conditions = pending(Reason::MigrationJobNotOwned, message.clone());
            (record("Pending", message), conditions)
        }
        Step::Watch(JobOutcome::Failed { reason, message }) => {
            let said = format!(
                "Migration Job {job:?} failed: {reason} ({message}); read its logs with `kubectl logs job/{job}`, and delete the Job to retry"
            );
            let conditions = vec![
                passed,
                Said::new(
                    ConditionType::MigrationJobSucceeded,
                    false,
                    Reason::MigrationJobFailed,
                    said.clone(),
                ),
                Said::new(
                    ConditionType::MigrationValidated,
                    false,
                    Reason::MigrationValidationFailed,
                    said.clone(),
                ),
                Said::new(
                    ConditionType::PraxisCutoverReady,
                    false,
                    Reason::PraxisCutoverNotReady,
                    "Cutover is blocked because the migration Job did not succeed".to_owned(),
                ),
            ];
            (record("Failed", said), conditions)
        }
        Step::Watch(JobOutcome::Succeeded) | Step::Done => {
            let message = format!("Migration Job {job:?} completed");
            let conditions = vec![
                passed,
                Said::new(
                    ConditionType::MigrationJobSucceeded,
                    true,
                    Reason::MigrationJobSucceeded,
                    message.clone(),
                ),
                Said::new(
                    ConditionType::MigrationValidated,
                    true,
                    Reason::MigrationValidated,
                    message.clone(),
                ),
                Said::new(
                    ConditionType::PraxisCutoverReady,
                    true,
                    Reason::PraxisCutoverReady,
                    "Migration Job completed; cutover may proceed".to_owned(),
                ),
            ];
            (record("Validated", message), conditions)
        }
    }
}

/// `PraxisCutoverReady` False until the migration completes.
fn cutover_blocked() -> Said {
    Said::new(
        ConditionType::PraxisCutoverReady,
        false,
        Reason::PraxisCutoverNotReady,
        "Cutover is blocked until the migration Job completes successfully".to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Attempt {
        Attempt {
            key: "0123456789abcdef".to_owned(),
            job_name: "s-praxis-migration".to_owned(),
        }
    }

    fn condition(conditions: &[Said], kind: ConditionType) -> (bool, Reason) {
        let said = conditions
            .iter()
            .find(|s| s.condition == kind)
            .unwrap_or_else(|| panic!("{kind} not said: {conditions:?}"));
        (said.ok, said.reason)
    }

    #[test]
    fn each_step_is_said_in_the_record_and_the_four_conditions() {
        let failed = Step::Watch(JobOutcome::Failed {
            reason: "BackoffLimitExceeded".to_owned(),
            message: "Job has reached the specified backoff limit".to_owned(),
        });
        type Said2 = (bool, Reason);
        let rows: Vec<(Step, Phase, Said2, Said2)> = vec![
            (
                Step::Create,
                "Running",
                (false, Reason::MigrationJobPending),
                (false, Reason::PraxisCutoverNotReady),
            ),
            (
                Step::Replace,
                "Running",
                (false, Reason::MigrationJobPending),
                (false, Reason::PraxisCutoverNotReady),
            ),
            (
                Step::Watch(JobOutcome::Running),
                "Running",
                (false, Reason::MigrationJobRunning),
                (false, Reason::PraxisCutoverNotReady),
            ),
            (
                Step::NotOurs,
                "Pending",
                (false, Reason::MigrationJobNotOwned),
                (false, Reason::PraxisCutoverNotReady),
            ),
            (
                failed,
                "Failed",
                (false, Reason::MigrationJobFailed),
                (false, Reason::PraxisCutoverNotReady),
            ),
            (
                Step::Watch(JobOutcome::Succeeded),
                "Validated",
                (true, Reason::MigrationJobSucceeded),
                (true, Reason::PraxisCutoverReady),
            ),
            (
                Step::Done,
                "Validated",
                (true, Reason::MigrationJobSucceeded),
                (true, Reason::PraxisCutoverReady),
            ),
        ];
        for (step, phase, job, cutover) in rows {
            let (record, conditions) = said(Ok((&attempt(), &step)));
            assert_eq!(record.phase, phase, "{step:?}");
            assert_eq!(record.attempt_key.as_deref(), Some("0123456789abcdef"));
            assert_eq!(record.job_name.as_deref(), Some("s-praxis-migration"));
            assert_eq!(
                condition(&conditions, ConditionType::MigrationPreflightReady),
                (true, Reason::MigrationPreflightPassed)
            );
            assert_eq!(
                condition(&conditions, ConditionType::MigrationJobSucceeded),
                job,
                "{step:?}"
            );
            assert_eq!(
                condition(&conditions, ConditionType::PraxisCutoverReady),
                cutover,
                "{step:?}"
            );
        }
        let (record, _) = said(Ok((
            &attempt(),
            &Step::Watch(JobOutcome::Failed {
                reason: "DeadlineExceeded".to_owned(),
                message: "Job was active longer than specified deadline".to_owned(),
            }),
        )));
        assert!(
            record
                .message
                .contains("kubectl logs job/s-praxis-migration"),
            "{}",
            record.message
        );
        assert!(
            record.message.contains("DeadlineExceeded"),
            "{}",
            record.message
        );
    }

    #[test]
    fn a_failed_preflight_makes_no_attempt_and_says_why() {
        let (record, conditions) = said(Err(
            "spec.praxisMode.migrationJob.targetConnectionString names the same database",
        ));
        assert_eq!(
            (record.phase, record.attempt_key, record.job_name),
            ("PreflightFailed", None, None)
        );
        assert_eq!(
            condition(&conditions, ConditionType::MigrationPreflightReady),
            (false, Reason::MigrationPreflightFailed)
        );
        assert_eq!(
            condition(&conditions, ConditionType::PraxisCutoverReady),
            (false, Reason::PraxisCutoverNotReady)
        );
    }
}
