//! A llama-stack base config: parsed enough to know it is a config of a supported schema
//! version, hashed, and kept as the exact bytes it came as.

use std::sync::Arc;

use crate::digest::sha256_hex;
use crate::server_line::ServerRelease;

/// Config schema versions this operator generates from: current first, then previous (the one before is still accepted, so
/// images built for the previous llama-stack release keep working).
/// llama-stack 0.7.3 writes version 2 (`LLAMA_STACK_RUN_CONFIG_VERSION`).
pub const SUPPORTED_CONFIG_VERSIONS: &[u64] = &[2, 1];

impl BaseConfig {
    /// An estimate of the heap bytes this config holds (its text and its parsed tree), for caches
    /// bounded by bytes.
    pub fn heap_bytes(&self) -> usize {
        self.yaml.len() + self.hash.len() + map_bytes(&self.document)
    }
}

/// Per map entry, beyond key and value: the B-tree's share of node and pointer space.
const MAP_ENTRY_OVERHEAD: usize = 32;

fn map_bytes(map: &serde_json::Map<String, serde_json::Value>) -> usize {
    map.iter()
        .map(|(k, v)| {
            k.len() + std::mem::size_of::<serde_json::Value>() + MAP_ENTRY_OVERHEAD + value_bytes(v)
        })
        .sum()
}

fn value_bytes(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(s) => s.len(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|v| std::mem::size_of::<serde_json::Value>() + value_bytes(v))
            .sum(),
        serde_json::Value::Object(map) => map_bytes(map),
        _ => 0,
    }
}

/// Where a base config came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigSource {
    /// Embedded in the operator for a distribution name.
    Embedded,
    /// From the image's OCI config labels.
    OciLabel,
}

impl ConfigSource {
    /// The value recorded in `status.resolvedDistribution.configSource`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Embedded => "embedded",
            Self::OciLabel => "oci-label",
        }
    }
}

/// A validated base config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseConfig {
    /// The config.yaml bytes, unchanged.
    pub yaml: Arc<str>,
    /// The same config parsed, kept so that config generation never parses a base config twice
    /// (parsing is most of the cost of generating).
    pub document: Arc<serde_json::Map<String, serde_json::Value>>,
    /// `sha256:<hex>` of the bytes.
    pub hash: String,
    /// Schema version.
    pub version: u64,
    /// Where it came from.
    pub source: ConfigSource,
    /// The server the image runs, when its labels (or, for an embedded config, the catalog) say.
    pub server: Option<ServerRelease>,
    /// The image's config file this was read from (`com.ogx.config.<file>`), on an image
    /// labelled by OGX's build.
    pub file: Option<String>,
    /// The config files the image carries (`com.ogx.distribution.configs`), any of which
    /// `distribution.imageConfig` can name.
    pub configs: Vec<String>,
}

/// A base config that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaseConfigError {
    /// Not UTF-8.
    #[error("the base config is not UTF-8 text")]
    NotUtf8,
    /// Not YAML, or not a mapping.
    #[error("the base config is not a YAML mapping: {0}")]
    NotYaml(String),
    /// `version` is not an integer.
    #[error("the base config's version must be an integer, found {0}")]
    BadVersion(String),
    /// A schema version this operator does not generate from.
    #[error("Unsupported config.yaml version {version}. Supported versions: {}", SUPPORTED_CONFIG_VERSIONS.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))]
    UnsupportedVersion {
        /// The version found.
        version: String,
    },
    /// The version label and the file disagree.
    #[error(
        "label io.llamastack.config.version says {label} but the config.yaml it describes has version {file}"
    )]
    VersionMismatch {
        /// From the label.
        label: String,
        /// From the file.
        file: u64,
    },
}

fn supported(version: &str) -> Result<u64, BaseConfigError> {
    version
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| SUPPORTED_CONFIG_VERSIONS.contains(v))
        .ok_or_else(|| BaseConfigError::UnsupportedVersion {
            version: version.trim().to_owned(),
        })
}

/// Validates a base config. `label_version` is `io.llamastack.config.version`, when present.
/// A config without `version` is version 2, as llama-stack itself assumes.
pub fn parse_base_config(
    bytes: &[u8],
    label_version: Option<&str>,
    source: ConfigSource,
) -> Result<BaseConfig, BaseConfigError> {
    let text = std::str::from_utf8(bytes).map_err(|_| BaseConfigError::NotUtf8)?;
    let document: serde_json::Value =
        serde_saphyr::from_str(text).map_err(|e| BaseConfigError::NotYaml(e.to_string()))?;
    let serde_json::Value::Object(mapping) = document else {
        return Err(BaseConfigError::NotYaml(
            "the top level is not a mapping".to_owned(),
        ));
    };
    let file_version = match mapping.get("version") {
        None | Some(serde_json::Value::Null) => 2,
        Some(serde_json::Value::Number(n)) => supported(&n.to_string())?,
        Some(serde_json::Value::String(s)) => supported(s)?,
        Some(other) => return Err(BaseConfigError::BadVersion(other.to_string())),
    };
    if let Some(label) = label_version {
        let label_version = supported(label)?;
        if label_version != file_version {
            return Err(BaseConfigError::VersionMismatch {
                label: label.to_owned(),
                file: file_version,
            });
        }
    }
    Ok(BaseConfig {
        yaml: Arc::from(text),
        document: Arc::new(mapping),
        hash: sha256_hex(bytes),
        version: file_version,
        source,
        server: None,
        file: None,
        configs: Vec::new(),
    })
}
