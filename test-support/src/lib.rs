//! Test infrastructure shared by the workspace's tests and benches: real processes on loopback
//! (registries, a control plane, the operator, llama-stack servers, a real node), never mocks.
//!
//! Every binary that uses it calls [`seal_network!`] once at its root, which moves the process
//! into a network namespace of its own before `main` ([`sealed`]). The registry side is always
//! built; the Kubernetes side (feature `cluster`) needs the operator and the resolver crates.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test infrastructure: a failure here is a failed test, said where it happens"
)]

use std::path::{Path, PathBuf};

pub mod cosign;
pub mod credential_plugin;
pub mod harness;
pub mod oci;
pub mod postgres;
pub mod process;
pub mod registries;
pub mod sealed;
pub mod test_ca;
pub mod wait;

#[cfg(feature = "cluster")]
pub mod admission;
#[cfg(feature = "cluster")]
pub mod control_plane;
#[cfg(feature = "cluster")]
pub mod helm;
#[cfg(feature = "cluster")]
pub mod images;
#[cfg(feature = "cluster")]
pub mod kstatus;
#[cfg(feature = "cluster")]
pub mod kube_objects;
#[cfg(feature = "cluster")]
pub mod kwok_stages;
#[cfg(feature = "cluster")]
pub mod llama_stack;
#[cfg(feature = "cluster")]
pub mod node;
#[cfg(feature = "cluster")]
pub mod node_stack;
#[cfg(feature = "cluster")]
pub mod operator;
#[cfg(feature = "cluster")]
pub mod pod_runner;
#[cfg(feature = "cluster")]
pub mod shared_server;

#[cfg(test)]
mod build_cache_tests;
#[cfg(test)]
mod cargo_env_tests;
#[cfg(test)]
mod lowest_priority_tests;
#[cfg(test)]
mod run_suites_tests;

// This crate's own tests start processes and take ports too.
#[cfg(test)]
seal_network!();

/// The workspace's root directory (scripts, CRDs, manifests and charts are found from it).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}
