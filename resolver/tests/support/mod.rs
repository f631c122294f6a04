//! Real registries on loopback for the resolver's integration tests, and OCI fixtures.

pub mod oci;
pub mod registries;
