//! Real registries on loopback for the resolver's integration tests, and OCI fixtures.
//! Shared by several test binaries, each of which uses a part.
#![allow(dead_code)]

pub mod cosign;
pub mod credential_plugin;
pub mod harness;
pub mod oci;
pub mod process;
pub mod registries;
pub mod sealed;
pub mod test_ca;
