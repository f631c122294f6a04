//! The core: a stack and what was read → what to do → what it came to. Pure: no API client, no
//! `.await`, no clock (the time is passed in), nothing of the controller; a test holds it to that
//! (`purity` below). The controller and `render` (offline) drive it the same way.
//!
//! - **read**: [`stack::Stack`], the view every step takes, read from what a front door hands
//!   over ([`stack::Model`]: the resource's metadata, its spec and status in the model) through its
//!   [`door::Door`] (what differs per API: names, labels, paths).
//! - **decide**: [`decide::decide`] from the stack and what the controller gathered
//!   ([`observed::Observed`]): the config and the image that runs it ([`plan`], [`server_run`],
//!   [`user_config`], [`pin`]), the references ([`dereference`]), the desired objects
//!   ([`builders`]), taking over ([`adoption`], [`take_over`]) and a rollback held
//!   ([`rollback`]), or what blocks the stack ([`conditions::Blocked`]).
//! - **assess**: what the reconcile came to once the controller wrote and looked
//!   ([`observed::Applied`], [`observed::ServerInfo`]): the rollback judgement
//!   ([`rollback::judge`]), the status ([`report::report`], with [`conditions`], [`rollout`] and
//!   [`external_status`]) and when to look again ([`next_look`]).

pub mod adoption;
pub mod assess;
pub mod builders;
pub mod conditions;
pub mod decide;
pub mod dereference;
pub mod door;
pub mod external_status;
pub mod migration;
pub mod next_look;
pub mod observed;
pub mod pin;
pub mod plan;
pub mod praxis;
pub mod reads;
pub mod report;
pub mod rollback;
pub mod rollout;
pub mod server_run;
pub mod stack;
pub mod subject;
pub mod take_over;
pub mod user_config;

#[cfg(test)]
mod purity;
#[cfg(test)]
mod tests;
