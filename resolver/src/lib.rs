//! The distribution resolver of llama-stack-operator. It knows nothing of the CRD types: callers
//! pass plain names and image references.
//!
//! So far: the catalog of distribution names (`distributions.json`, embedded at build time).

pub mod catalog;

pub use catalog::{Catalog, CatalogError, LookupError};
