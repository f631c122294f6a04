//! The controller: the shell around the pure [`crate::core`]. It reads what a reconcile needs,
//! writes what the core decided, looks at what runs and publishes the status; and it runs the
//! watches that start reconciles.
//!
//! [`reconcile()`] runs one pass of the pipeline `read → gather → decide → act → look → assess →
//! publish`: `gather` ([`gather`], with the take-over's reads in `take_over`), `act` (`apply`,
//! with the take-over's writes), `look` (`observe`) and `publish` are here; `read`, `decide` and
//! `assess` are the core's. The Deployment is applied **once** per change, with image, config
//! volume, env vars and hashes together; when nothing changed no write is made (every object
//! carries the hash of what was applied); when the core finds a problem the user must fix,
//! nothing is written and the status says why.

mod apply;
mod context;
mod default_accounts;
mod discovery;
mod drift;
mod error;
mod event_series;
mod events;
mod field_digest;
mod gather;
mod hand_over;
mod listing;
mod observe;
mod owned_index;
mod prune;
mod prune_marks;
mod publish;
mod recent_writes;
mod reconcile;
mod referrers;
mod secret_mask;
mod server_info;
mod settings;
pub mod slim_cache;
mod take_over;
pub(crate) mod watches;
mod write;

pub use crate::core::builders::BuildError;
pub use context::{Context, DEFAULT_CONCURRENCY};
pub use discovery::{ServedApis, follow as follow_served_apis, served_apis};
pub use error::{ApiError, Error};
pub use reconcile::{reconcile, reconcile_ogx, reconcile_stack};
pub use watches::{run, run_in};
