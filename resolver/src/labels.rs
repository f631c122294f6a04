//! The `io.llamastack.config.*` labels of an image config, and where they say the base config is.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::limits::Limits;

/// Base64 of the whole config.yaml (for configs under ~50 KB).
pub const LABEL_BASE64: &str = "io.llamastack.config.base64";
/// Digest of the layer holding config.yaml.
pub const LABEL_LAYER: &str = "io.llamastack.config.layer";
/// Path of config.yaml inside that layer.
pub const LABEL_PATH: &str = "io.llamastack.config.path";
/// Schema version of the config (e.g. `2`).
pub const LABEL_VERSION: &str = "io.llamastack.config.version";

/// What the image config says about the base config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageConfigInfo {
    /// `io.llamastack.config.base64`
    pub base64: Option<String>,
    /// `io.llamastack.config.layer`
    pub layer: Option<String>,
    /// `io.llamastack.config.path`
    pub path: Option<String>,
    /// `io.llamastack.config.version`
    pub version: Option<String>,
    /// `rootfs.diff_ids`, to find a layer a mirror re-compressed.
    pub diff_ids: Vec<String>,
}

/// Where the base config is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigLocation {
    /// Decoded from the base64 label.
    Inline(Vec<u8>),
    /// In a layer, at a path.
    Layer {
        /// Layer digest from the label.
        digest: String,
        /// Absolute path in the image.
        path: String,
    },
    /// The image carries no config labels.
    Absent,
}

/// A label that cannot be used. Messages name the label and say what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// The image config blob is not JSON of the OCI/Docker image config shape.
    #[error("the image config is not valid JSON: {0}")]
    BadImageConfig(String),
    /// A label value is not a string.
    #[error("label {label} must be a string")]
    NotAString {
        /// The label.
        label: &'static str,
    },
    /// Bad base64.
    #[error("label {LABEL_BASE64} is not valid base64 (standard alphabet, padded)")]
    BadBase64,
    /// The decoded config is too large.
    #[error(
        "label {LABEL_BASE64} decodes to more than {limit} bytes; use {LABEL_LAYER} + {LABEL_PATH} for large configs"
    )]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// Only one of layer and path.
    #[error("labels {LABEL_LAYER} and {LABEL_PATH} must be set together; found only {present}")]
    Incomplete {
        /// The label that is present.
        present: &'static str,
    },
    /// The layer label is not a digest.
    #[error("label {LABEL_LAYER} must be a digest like sha256:<64 hex digits>, found {value:?}")]
    BadDigest {
        /// The value.
        value: String,
    },
}

fn label(
    labels: Option<&serde_json::Map<String, Value>>,
    name: &'static str,
) -> Result<Option<String>, LabelError> {
    match labels.and_then(|l| l.get(name)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(LabelError::NotAString { label: name }),
    }
}

/// Reads the labels and `rootfs.diff_ids` from an image config blob.
pub fn read_image_config(blob: &[u8]) -> Result<ImageConfigInfo, LabelError> {
    let config: Value =
        serde_json::from_slice(blob).map_err(|e| LabelError::BadImageConfig(e.to_string()))?;
    let labels = config
        .get("config")
        .and_then(|c| c.get("Labels"))
        .and_then(Value::as_object);
    let diff_ids = config
        .get("rootfs")
        .and_then(|r| r.get("diff_ids"))
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok(ImageConfigInfo {
        base64: label(labels, LABEL_BASE64)?,
        layer: label(labels, LABEL_LAYER)?,
        path: label(labels, LABEL_PATH)?,
        version: label(labels, LABEL_VERSION)?,
        diff_ids,
    })
}

/// Whether a string is `sha256:` followed by 64 lowercase hex digits.
pub fn is_sha256_digest(value: &str) -> bool {
    value.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl ImageConfigInfo {
    /// Where the base config is. The base64 label wins (no layer download needed).
    pub fn locate(&self, limits: &Limits) -> Result<ConfigLocation, LabelError> {
        if let Some(encoded) = &self.base64 {
            // Decoded size is at most 3/4 of the encoded length: reject before decoding.
            if encoded.len() / 4 * 3 > limits.max_label_config_bytes + 3 {
                return Err(LabelError::TooLarge {
                    limit: limits.max_label_config_bytes,
                });
            }
            let decoded = STANDARD
                .decode(encoded.trim())
                .map_err(|_| LabelError::BadBase64)?;
            if decoded.len() > limits.max_label_config_bytes {
                return Err(LabelError::TooLarge {
                    limit: limits.max_label_config_bytes,
                });
            }
            return Ok(ConfigLocation::Inline(decoded));
        }
        match (&self.layer, &self.path) {
            (Some(digest), Some(path)) => {
                if !is_sha256_digest(digest) {
                    return Err(LabelError::BadDigest {
                        value: digest.clone(),
                    });
                }
                Ok(ConfigLocation::Layer {
                    digest: digest.clone(),
                    path: path.clone(),
                })
            }
            (Some(_), None) => Err(LabelError::Incomplete {
                present: LABEL_LAYER,
            }),
            (None, Some(_)) => Err(LabelError::Incomplete {
                present: LABEL_PATH,
            }),
            (None, None) => Ok(ConfigLocation::Absent),
        }
    }
}
