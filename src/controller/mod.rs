//! The controller: LlamaStackDistribution (v1alpha2) -> generated ConfigMap, Deployment and the
//! objects around it (Service, ServiceAccount, PVC, CA bundle, NetworkPolicy, Ingress or Route,
//! HPA, PDB, derived Secret).
//!
//! [`reconcile()`] runs one pass of the pipeline `read → gather → decide → apply → observe →
//! report`, one module per step (`stack`, `gather`, `decide`, `apply`, `observe`, `status`);
//! `decide` and the status `report` are pure. `stack` reads the resource into a
//! [`stack::Stack`], which every later step takes; `watches` decides when it runs. The Deployment
//! is applied **once** per change, with image, config volume, env vars and hashes together; when nothing
//! changed no write is made (every object carries the hash of what was applied); when a step
//! finds a problem the user must fix, nothing is written and the status says why.

mod adoption;
mod apply;
pub mod builders;
pub(crate) mod conditions;
mod context;
pub(crate) mod decide;
mod default_accounts;
mod dereference;
mod discovery;
pub mod door;
mod drift;
mod error;
mod event_series;
mod events;
pub mod external_status;
mod field_digest;
pub(crate) mod gather;
mod hand_over;
mod listing;
mod next_look;
mod observe;
mod owned_index;
mod pin;
pub(crate) mod plan;
mod prune;
mod prune_marks;
mod recent_writes;
mod reconcile;
mod referrers;
mod rollback;
mod rollout;
mod secret_mask;
mod server_info;
pub(crate) mod server_run;
mod settings;
pub mod slim_cache;
pub mod stack;
mod status;
mod take_over;
pub(crate) mod user_config;
pub(crate) mod watches;
mod write;

pub use builders::BuildError;
pub use context::{Context, DEFAULT_CONCURRENCY};
pub use discovery::{ServedApis, follow as follow_served_apis, served_apis};
pub use error::{ApiError, Error};
pub use reconcile::{reconcile, reconcile_ogx, reconcile_stack};
pub use watches::{run, run_in};
