//! Build tools of the workspace, shared by the release scripts' programs (`examples/`) and the
//! tests that check what they make, so that no test compiles a tool's source out of another
//! folder.

pub mod olm_bundle;
