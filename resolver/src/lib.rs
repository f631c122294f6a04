//! The distribution resolver of llama-stack-operator: distribution names and image references
//! to digest-pinned images and the base `config.yaml` that belongs to each image. It knows
//! nothing of the CRD types: callers pass plain names, references and pull secrets.
//!
//! Its face is narrow: resolving (the [`Resolver`], what it is asked and what it answers, the
//! credentials and options it takes) is at the root; the vocabularies callers share with it are
//! modules ([`base_config`], [`server_line`], [`signature`], [`credential_provider`], [`stats`]).
//! How it talks to registries (manifests, layers, labels) stays inside.

pub mod base_config;
mod catalog;
pub mod credential_provider;
mod digest;
mod distribution;
mod embedded;
mod error;
mod image_ref;
mod keyring;
mod labels;
mod layer;
mod limits;
mod manifest;
mod memo;
mod mirror;
mod options;
mod pull_secret;
mod registry;
mod resolution;
mod resolve;
pub mod server_line;
pub mod signature;
pub mod stats;

pub use catalog::{
    Catalog, CatalogError, LookupError, ODH_NAMES, OverrideProblem, ogx_server_name,
    parse_image_overrides,
};
pub use digest::sha256_hex;
pub use distribution::Distribution;
pub use embedded::{embedded_base_config, embedded_config};
pub use error::{FailureKind, ResolveError};
pub use image_ref::{ImageRef, ReferenceError};
pub use keyring::{CredentialSource, Keyring};
pub use limits::{Limits, read_file_within};
pub use manifest::Platform;
pub use mirror::{MirrorRule, MirrorRuleError};
pub use options::{MAX_CA_FILE_BYTES, ResolverOptions, read_ca_file};
pub use pull_secret::{DOCKER_CONFIG_JSON, PullSecretError, SecretOutcome, add_pull_secret};
pub use resolution::Resolution;
pub use resolve::Resolver;
