//! What the migration does next, from the attempt the preflight made and the Job of its name as
//! read: make the attempt's Job, watch it, or first let an earlier attempt's Job go. The same
//! attempt is never made twice (a Job of its key, whatever became of it, is watched, not made
//! again: a failed one stays, with its Pods and their logs, until a person deletes it); a
//! migration once validated never runs again (a second run after the cut-over would bring back
//! into Praxis what was deleted there since); a Job of the name that is not the server's is
//! never touched.

use super::Attempt;

/// What became of a Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// Not finished: its Pods run, or wait to.
    Running,
    /// `Complete`.
    Succeeded,
    /// `Failed`, with the Job's own reason and message (`BackoffLimitExceeded`,
    /// `DeadlineExceeded`, …).
    Failed {
        /// The `Failed` condition's reason.
        reason: String,
        /// Its message.
        message: String,
    },
}

/// The Job of the migration's name, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSeen {
    /// The attempt it runs (its annotation), if it names one.
    pub attempt: Option<String>,
    /// Whether the server is its controller.
    pub ours: bool,
    /// Whether it is being deleted.
    pub deleting: bool,
    /// What became of it.
    pub outcome: JobOutcome,
}

impl JobSeen {
    /// `job` as read, for the server whose uid is `server`.
    pub fn of(job: &k8s_openapi::api::batch::v1::Job, server: &str) -> Self {
        let meta = &job.metadata;
        let conditions = job.status.as_ref().and_then(|s| s.conditions.as_deref());
        let finished = |kind: &str| {
            conditions
                .unwrap_or_default()
                .iter()
                .find(|c| c.type_ == kind && c.status == "True")
        };
        let outcome = match (finished("Complete"), finished("Failed")) {
            (Some(_), _) => JobOutcome::Succeeded,
            (None, Some(failed)) => JobOutcome::Failed {
                reason: failed.reason.clone().unwrap_or_default(),
                message: failed.message.clone().unwrap_or_default(),
            },
            (None, None) => JobOutcome::Running,
        };
        Self {
            attempt: meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(super::ATTEMPT_ANNOTATION))
                .cloned(),
            ours: meta
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && r.uid == server),
            deleting: meta.deletion_timestamp.is_some(),
            outcome,
        }
    }
}

/// The migration's next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Make the attempt's Job.
    Create,
    /// The attempt's Job is there: say what became of it.
    Watch(JobOutcome),
    /// An earlier attempt's Job that did not complete: delete it (its Pods with it), and make
    /// the new one once it is gone.
    Replace,
    /// An earlier attempt's Job is going: wait for it.
    Wait,
    /// Validated before (the Job kept or deleted since): nothing runs again.
    Done,
    /// A Job of the name the server does not control: nothing is made or deleted.
    NotOurs,
}

/// The next step of `attempt`, with `seen` the Job of its name and `validated` whether the
/// status recorded the migration as validated.
pub fn step(attempt: &Attempt, seen: Option<&JobSeen>, validated: bool) -> Step {
    let Some(job) = seen else {
        return if validated { Step::Done } else { Step::Create };
    };
    if !job.ours {
        return Step::NotOurs;
    }
    if job.deleting {
        return Step::Wait;
    }
    if job.attempt.as_deref() == Some(attempt.key.as_str()) {
        return Step::Watch(job.outcome.clone());
    }
    match job.outcome {
        // The migration an earlier attempt completed stands: inputs changed after it do not
        // run it again.
        JobOutcome::Succeeded => Step::Watch(JobOutcome::Succeeded),
        _ if validated => Step::Done,
        JobOutcome::Running | JobOutcome::Failed { .. } => Step::Replace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Attempt {
        Attempt {
            key: "new".to_owned(),
            job_name: "s-praxis-migration".to_owned(),
        }
    }

    fn job(attempt: &str, outcome: JobOutcome) -> JobSeen {
        JobSeen {
            attempt: Some(attempt.to_owned()),
            ours: true,
            deleting: false,
            outcome,
        }
    }

    fn failed() -> JobOutcome {
        JobOutcome::Failed {
            reason: "BackoffLimitExceeded".to_owned(),
            message: "Job has reached the specified backoff limit".to_owned(),
        }
    }

    /// Every row: (what was read, validated before, the step).
    #[test]
    fn the_same_attempt_never_runs_twice_and_a_validated_migration_never_again() {
        let deleting = JobSeen {
            deleting: true,
            ..job("old", JobOutcome::Running)
        };
        let theirs = JobSeen {
            ours: false,
            ..job("new", JobOutcome::Running)
        };
        let unnamed = JobSeen {
            attempt: None,
            ..job("", failed())
        };
        let rows: Vec<(&str, Option<JobSeen>, bool, Step)> = vec![
            ("nothing yet", None, false, Step::Create),
            ("validated, the Job deleted since", None, true, Step::Done),
            (
                "this attempt runs",
                Some(job("new", JobOutcome::Running)),
                false,
                Step::Watch(JobOutcome::Running),
            ),
            (
                "this attempt failed: kept, not made again",
                Some(job("new", failed())),
                false,
                Step::Watch(failed()),
            ),
            (
                "this attempt succeeded",
                Some(job("new", JobOutcome::Succeeded)),
                false,
                Step::Watch(JobOutcome::Succeeded),
            ),
            (
                "an earlier attempt still runs",
                Some(job("old", JobOutcome::Running)),
                false,
                Step::Replace,
            ),
            (
                "an earlier attempt failed",
                Some(job("old", failed())),
                false,
                Step::Replace,
            ),
            (
                "an earlier attempt succeeded: it stands",
                Some(job("old", JobOutcome::Succeeded)),
                false,
                Step::Watch(JobOutcome::Succeeded),
            ),
            (
                "validated, an earlier attempt's Job failed later",
                Some(job("old", failed())),
                true,
                Step::Done,
            ),
            (
                "an earlier attempt's Job is going",
                Some(deleting),
                false,
                Step::Wait,
            ),
            (
                "a Job of the name that is not the server's",
                Some(theirs),
                false,
                Step::NotOurs,
            ),
            (
                "a Job of ours that names no attempt",
                Some(unnamed),
                false,
                Step::Replace,
            ),
        ];
        for (what, seen, validated, expected) in rows {
            assert_eq!(
                step(&attempt(), seen.as_ref(), validated),
                expected,
                "{what}"
            );
        }
    }
}
