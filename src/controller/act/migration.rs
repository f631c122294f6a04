//! The Praxis migration's writes: the attempt's Job made (once: a Job of its name made meanwhile
//! is the next look's), or an earlier attempt's incomplete Job deleted with its Pods first. A
//! Job is never changed in place (its template cannot be), and one of another attempt that
//! completed, or one the server does not control, is never touched (the decision says so).

use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, PostParams};

use super::Noted;
use crate::api::conditions::Reason;
use crate::controller::error::{ApiError, api_err};
use crate::core::migration::plan::MigrationPlan;
use crate::core::migration::step::Step;
use crate::core::stack::Stack;

/// Carries out `plan`'s step.
pub(super) async fn carry_out(
    stack: &Stack<'_>,
    client: &kube::Client,
    plan: &MigrationPlan,
    noted: &mut Vec<Noted>,
) -> Result<(), ApiError> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), stack.namespace());
    match (&plan.step, &plan.job) {
        (Some(Step::Create), Some(job)) => {
            let name = job.name_any();
            match jobs.create(&PostParams::default(), job).await {
                Ok(_) => noted.push(Noted {
                    reason: Reason::MigrationJobPending,
                    note: format!(
                        "Created migration Job {name:?} for attempt {}",
                        plan.record.attempt_key.as_deref().unwrap_or_default()
                    ),
                }),
                Err(kube::Error::Api(status))
                    if status.code == 409 && status.reason == "AlreadyExists" => {}
                Err(source) => return Err(api_err(format!("create Job {name}"))(source)),
            }
        }
        (Some(Step::Replace), _) => {
            let name = plan.record.job_name.clone().unwrap_or_default();
            match jobs.delete(&name, &DeleteParams::foreground()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(source) => return Err(api_err(format!("delete Job {name}"))(source)),
            }
        }
        _ => {}
    }
    Ok(())
}
