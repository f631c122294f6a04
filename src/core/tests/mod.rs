//! The core's tests, in one place. This module holds the tests of its doors as the reconcile
//! calls them (`doors`: `reads::image`, `reads::later`, `reads::looks`, `assess`) and the fixtures
//! every core test shares (`fixtures`). The tests of a step's private parts live in this folder
//! too, each the `tests` module of its step (`decide.rs`, `next_look.rs`, `rollback.rs`,
//! `server_run.rs`, declared there with `#[path]`). Beside their module stay only the tests of
//! folders with more than one file (`builders/tests.rs`, `adoption/tests.rs`, the road's model in
//! `take_over/road.rs`) and small `mod tests` blocks.

mod doors;
pub(crate) mod fixtures;
