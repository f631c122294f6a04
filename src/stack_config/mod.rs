//! Config generation: a v1alpha2 spec and the distribution's base config to the llama-stack
//! `config.yaml`, environment variables and content hash. Pure: no I/O.

pub mod env;
pub(crate) mod generate;
pub(crate) mod merge;
pub(crate) mod table;

pub use generate::{
    CLIENT_IDENTITY_DIR, FieldError, GenerateError, GeneratedConfig, ModelMerge, OPERATOR_CALLER,
    PRINCIPAL_HEADER, TENANT_HEADER, generate, generate_from_yaml, generate_merging, parse_base,
};
pub use table::ProviderTable;

#[cfg(test)]
mod tests;
