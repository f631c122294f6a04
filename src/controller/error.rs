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

/// Why a reconcile failed: the step, and its cause. Problems of the spec are not errors; they
/// are reported in the status and retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Gathering what the plan needs (ServiceAccount, pull secrets, the user's ConfigMap) failed.
    #[error(transparent)]
    Plan(ApiError),
    /// Gathering the referenced Secrets and ConfigMaps (the CA bundle, the derived Secret) failed.
    #[error(transparent)]
    Dereference(ApiError),
    /// An owned object could not be built (a bug).
    #[error(transparent)]
    Build(#[from] BuildError),
    /// Writing an owned object failed.
    #[error(transparent)]
    Apply(ApiError),
    /// Reading the Deployment, its ReplicaSets or the server Pods failed.
    #[error(transparent)]
    Observe(ApiError),
    /// Writing the status failed.
    #[error(transparent)]
    Status(ApiError),
    /// The resource cannot be read at all (no name or namespace).
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Taking over another stack's objects failed.
    #[error(transparent)]
    Adopt(ApiError),
}

impl Error {
    /// The `reason` label of a failed reconcile in the metrics: the step that failed.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Plan(_) => "PlanError",
            Self::Dereference(_) => "DereferenceError",
            Self::Build(_) => "BuildError",
            Self::Apply(_) => "ApplyError",
            Self::Observe(_) => "ObserveError",
            Self::Status(_) => "StatusError",
            Self::Invalid(_) => "ValidateError",
            Self::Adopt(_) => "AdoptError",
        }
    }
}
