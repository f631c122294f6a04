//! Which API a stack came through: `LlamaStackDistribution` or `OGXServer`. The core reconciles
//! both from one model; the door decides what their users see differently: the kind owning
//! the stack's objects (and named in Events: [`super::subject::Subject`]), and the names and
//! labels each API's users rely on (the container `ogx`, the Pod label `app: ogx`, objects
//! `managed-by: ogx-operator` that an OGX ServiceMonitor selects, the config at `/etc/ogx`, the
//! `metrics` port).
//!
//! What does not change with the door: the object names (both APIs use `<name>-service`,
//! `<name>-pvc`, ...) and the Pod selector (a Deployment's selector cannot change, so a stack
//! moved from one API to the other keeps its Deployment and never stops serving).

pub use crate::naming::OGX_MANAGED_BY;
use crate::naming::{CONFIG_DIR, FIELD_MANAGER};
use crate::stack_config::ModelMerge;

/// `apiVersion` of an `OGXServer` (the same as its API module's: `ogx_server`'s tests hold them
/// equal; the core does not name that module).
pub const OGX_API_VERSION: &str = "ogx.io/v1beta1";

/// Where an `OGXServer`'s config ConfigMap is mounted (the OGX operator's path).
pub const OGX_CONFIG_DIR: &str = "/etc/ogx";

/// The API a stack came through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Door {
    /// `llamastack.io` `LlamaStackDistribution`.
    #[default]
    LlamaStackDistribution,
    /// `ogx.io/v1beta1` `OGXServer`.
    OgxServer {
        /// The port the server exports its metrics on (`monitoring`), named `metrics` on the
        /// container and the Service, where an OGX ServiceMonitor scrapes it.
        metrics_port: Option<i32>,
    },
}

impl Door {
    /// `apiVersion` and `kind` of the resource.
    pub fn type_meta(self) -> (&'static str, &'static str) {
        match self {
            Door::LlamaStackDistribution => ("llamastack.io/v1alpha2", "LlamaStackDistribution"),
            Door::OgxServer { .. } => (OGX_API_VERSION, "OGXServer"),
        }
    }

    /// The server container's name.
    pub fn container(self) -> &'static str {
        match self {
            Door::LlamaStackDistribution => "llama-stack",
            Door::OgxServer { .. } => "ogx",
        }
    }

    /// `app.kubernetes.io/managed-by` of the stack's objects.
    pub fn managed_by(self) -> &'static str {
        match self {
            Door::LlamaStackDistribution => FIELD_MANAGER,
            Door::OgxServer { .. } => OGX_MANAGED_BY,
        }
    }

    /// Labels of every object beyond the common ones (`app.kubernetes.io/part-of: ogx`).
    pub fn object_labels(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Door::LlamaStackDistribution => &[],
            Door::OgxServer { .. } => &[("app.kubernetes.io/part-of", "ogx")],
        }
    }

    /// Labels of the server Pods beyond the selector's (`app: ogx`, which OGX users' Services
    /// and policies select).
    pub fn pod_labels(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Door::LlamaStackDistribution => &[],
            Door::OgxServer { .. } => &[("app", "ogx")],
        }
    }

    /// Where the config ConfigMap is mounted.
    pub fn config_dir(self) -> &'static str {
        match self {
            Door::LlamaStackDistribution => CONFIG_DIR,
            Door::OgxServer { .. } => OGX_CONFIG_DIR,
        }
    }

    /// The metrics port the container and the Service name `metrics`, if any.
    pub fn metrics_port(self) -> Option<i32> {
        match self {
            Door::LlamaStackDistribution => None,
            Door::OgxServer { metrics_port } => metrics_port,
        }
    }

    /// How the spec's models combine with the base config's.
    pub fn models(self) -> ModelMerge {
        match self {
            Door::LlamaStackDistribution => ModelMerge::Add,
            Door::OgxServer { .. } => ModelMerge::Replace,
        }
    }
}
