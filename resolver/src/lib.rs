//! The distribution resolver of llama-stack-operator: distribution names and image references
//! to digest-pinned images and the base `config.yaml` that belongs to each image. It knows
//! nothing of the CRD types: callers pass plain names, references and pull secrets.

pub mod base_config;
pub mod catalog;
pub mod credential_provider;
pub mod digest;
pub mod distribution;
pub mod embedded;
pub mod error;
pub mod image_ref;
pub mod keyring;
pub mod labels;
pub mod layer;
pub mod limits;
pub mod manifest;
mod memo;
pub mod mirror;
pub mod options;
pub mod pull_secret;
pub mod registry;
pub mod resolution;
pub mod resolve;
pub mod server_line;
pub mod signature;
pub mod stats;

pub use catalog::{Catalog, CatalogError, LookupError};
pub use distribution::Distribution;
pub use error::{FailureKind, ResolveError};
pub use options::ResolverOptions;
pub use resolution::Resolution;
pub use resolve::Resolver;
