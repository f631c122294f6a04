//! Shared test infrastructure: real processes on loopback, never mocks. Each test binary uses a part.
#![allow(dead_code)]

pub mod control_plane;
pub mod helm;
pub mod images;
pub mod kstatus;
pub mod kwok_stages;
pub mod llama_stack;
pub mod node;
pub mod node_stack;
pub mod operator;
pub mod pod_runner;
/// The resolver's registry support (docker-registry, OCI fixtures, child processes).
#[path = "../../resolver/tests/support/mod.rs"]
pub mod registry;
pub mod wait;
pub use registry::process;
pub use registry::sealed;
