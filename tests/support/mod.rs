//! Shared test infrastructure: real processes on loopback, never mocks. Each test binary uses a part.
#![allow(dead_code)]

pub mod control_plane;
pub mod llama_stack;
#[path = "../../resolver/tests/support/process.rs"]
pub mod process;
