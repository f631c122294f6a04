//! Why a reconcile failed: the step, and the API call that failed in it. Problems of the spec are
//! not errors: they are reported in the status.

use crate::core::builders::BuildError;
use crate::core::stack::Invalid;

/// A call to the API server failed.
#[derive(Debug, thiserror::Error)]
#[error("{action}: {source}")]
pub struct ApiError {
    /// What was attempted (`apply Deployment ns/name`).
    pub(super) action: String,
    /// Cause.
    pub(super) source: kube::Error,
}

pub(super) fn api_err(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ApiError {
    let action = action.into();
    move |source| ApiError { action, source }
}

/// Why a reconcile failed: the step of the pipeline (read → gather → decide → act → look →
/// assess → publish; assess is pure and cannot fail), and its cause. Problems of the spec are not
/// errors; they are reported in the status and retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Read: the resource cannot be read at all (no name or namespace).
    #[error(transparent)]
    Read(#[from] Invalid),
    /// Gather: a read the decision needs failed; [`Gathering`] says which.
    #[error("{1}")]
    Gather(Gathering, #[source] ApiError),
    /// Decide: an owned object could not be built (a bug).
    #[error(transparent)]
    Decide(#[from] BuildError),
    /// Act: a write failed; [`Writing`] says which.
    #[error("{1}")]
    Act(Writing, #[source] ApiError),
    /// Look: reading the server Pods or the ReplicaSets after the act failed.
    #[error(transparent)]
    Look(ApiError),
    /// Publish: writing the status failed.
    #[error(transparent)]
    Publish(ApiError),
}

/// What the gather step was reading when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gathering {
    /// What the plan needs: the pull credentials, the user's ConfigMap.
    Plan,
    /// What the spec references: Secrets, the CA bundles, the client certificate, the derived
    /// Secret.
    References,
    /// What runs: the Deployment, the data volume's claim, the ReplicaSets.
    Workload,
    /// What taking over would take: another stack's volume, Service, Ingress, Pods.
    TakeOver,
}

/// What the act step was writing when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writing {
    /// The take-over's writes.
    TakeOver,
    /// The decision's objects.
    Apply,
}

impl Error {
    /// The `reason` label of a failed reconcile in the metrics: what failed, by step (the label
    /// values are those the dashboards have read since before the steps were named so).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Read(_) => "ValidateError",
            Self::Gather(Gathering::Plan, _) => "PlanError",
            Self::Gather(Gathering::References, _) => "DereferenceError",
            Self::Gather(Gathering::Workload, _) | Self::Look(_) => "ObserveError",
            Self::Gather(Gathering::TakeOver, _) | Self::Act(Writing::TakeOver, _) => "AdoptError",
            Self::Decide(_) => "BuildError",
            Self::Act(Writing::Apply, _) => "ApplyError",
            Self::Publish(_) => "StatusError",
        }
    }

    /// A gather error of `what`, for `map_err`.
    pub(super) fn gather(what: Gathering) -> impl FnOnce(ApiError) -> Self {
        move |error| Self::Gather(what, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error() -> ApiError {
        api_err("read Deployment ns/s")(kube::Error::Api(
            kube::core::Status::failure("denied", "Forbidden")
                .with_code(403)
                .boxed(),
        ))
    }

    /// The label values dashboards and alerts read (docs/architecture.md, `llso_reconciles_total`)
    /// stay what they were before the variants were named by step.
    #[test]
    fn every_step_keeps_the_label_dashboards_read() {
        let cases = [
            (Error::Read(Invalid::Unnamed), "ValidateError"),
            (Error::Gather(Gathering::Plan, api_error()), "PlanError"),
            (
                Error::Gather(Gathering::References, api_error()),
                "DereferenceError",
            ),
            (
                Error::Gather(Gathering::Workload, api_error()),
                "ObserveError",
            ),
            (
                Error::Gather(Gathering::TakeOver, api_error()),
                "AdoptError",
            ),
            (Error::Act(Writing::TakeOver, api_error()), "AdoptError"),
            (Error::Act(Writing::Apply, api_error()), "ApplyError"),
            (Error::Look(api_error()), "ObserveError"),
            (Error::Publish(api_error()), "StatusError"),
        ];
        for (error, label) in cases {
            assert_eq!(error.metric_label(), label, "{error:?}");
            // The log line names the call that failed and its cause, once each.
            if !matches!(error, Error::Read(_)) {
                let text = crate::error_chain(&error);
                assert_eq!(text, crate::error_chain(&api_error()), "{error:?}");
                assert_eq!(text.matches("read Deployment ns/s").count(), 1, "{text}");
            }
        }
    }
}
