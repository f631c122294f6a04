//! Shared test infrastructure: real processes on loopback, never mocks.

pub mod control_plane;
