//! The controller: LlamaStackDistribution (v1alpha2) -> generated ConfigMap, Deployment and the
//! objects around it (Service, ServiceAccount, PVC, CA bundle, NetworkPolicy, Ingress or Route,
//! HPA, PDB, derived Secret).
//!
//! [`reconcile()`] runs one pass of the pipeline `plan → dereference → build → apply → observe →
//! status`, one module per step; `watches` decides when it runs. The Deployment is applied
//! **once** per change, with image, config volume, env vars and hashes together; when nothing
//! changed no write is made (every object carries the hash of what was applied); when a step
//! finds a problem the user must fix, nothing is written and the status says why.

mod apply;
pub mod builders;
mod conditions;
mod context;
mod dereference;
mod drift;
mod events;
pub mod external_status;
mod observe;
pub mod operator_config;
pub(crate) mod plan;
mod prune_marks;
mod recent_writes;
mod reconcile;
mod rollback;
mod rollout;
mod secret_mask;
mod server_info;
mod status;
pub(crate) mod user_config;
pub(crate) mod watches;
mod write;

pub use builders::BuildError;
pub use context::{Context, DEFAULT_CONCURRENCY};
pub use reconcile::reconcile;
pub use watches::{run, run_in};

/// A call to the API server failed.
#[derive(Debug, thiserror::Error)]
#[error("{action}: {source}")]
pub struct ApiError {
    /// What was attempted (`apply Deployment ns/name`).
    action: String,
    /// Cause.
    source: kube::Error,
}

fn api_err(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ApiError {
    let action = action.into();
    move |source| ApiError { action, source }
}

/// Why a reconcile failed: the step, and its cause. Problems of the spec are not errors; they
/// are reported in the status and retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading what the plan needs (ServiceAccount, pull secrets, the user's ConfigMap) failed.
    #[error(transparent)]
    Plan(ApiError),
    /// Reading the referenced Secrets and ConfigMaps failed.
    #[error(transparent)]
    Dereference(ApiError),
    /// An owned object could not be built (a bug).
    #[error(transparent)]
    Build(#[from] BuildError),
    /// Writing an owned object failed.
    #[error(transparent)]
    Apply(ApiError),
    /// Reading the Deployment or the server Pods failed.
    #[error(transparent)]
    Observe(ApiError),
    /// Writing the status failed.
    #[error(transparent)]
    Status(ApiError),
}

impl Error {
    /// The `reason` label of a failed reconcile in the metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Build(_) => "BuildError",
            Self::Plan(_)
            | Self::Dereference(_)
            | Self::Apply(_)
            | Self::Observe(_)
            | Self::Status(_) => "ApiError",
        }
    }
}
