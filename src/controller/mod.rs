//! The controller: the shell around the pure [`crate::core`]. It reads what a reconcile needs,
//! writes what the core decided, looks at what runs and publishes the status; and it runs the
//! watches that start reconciles.
//!
//! [`reconcile()`] runs one pass of the pipeline `read → gather → decide → act → look → assess →
//! publish`: `gather` ([`gather`](read::gather), with the take-over's reads in `take_over`), `act` (`apply`,
//! with the take-over's writes), `look` (`observe`) and `publish` are here; `read`, `decide` and
//! `assess` are the core's. The Deployment is applied **once** per change, with image, config
//! volume, env vars and hashes together; when nothing changed no write is made (every object
//! carries the hash of what was applied); when the core finds a problem the user must fix,
//! nothing is written and the status says why.

mod act;
mod context;
mod error;
mod kinds;
mod memory;
mod publish;
mod read;
mod reconcile;
pub(crate) mod watches;

pub use crate::core::builders::BuildError;
pub use context::{Context, DEFAULT_CONCURRENCY};
pub use error::{ApiError, Error};
pub use memory::discovery::ServedApis;
pub use memory::slim_cache;
pub use reconcile::{reconcile, reconcile_ogx, reconcile_server, reconcile_stack};
pub use watches::discovery::{follow as follow_served_apis, served_apis};
pub use watches::{run, run_in};
