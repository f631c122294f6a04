//! The config labels of an image, and where they say the base config is: the `io.llamastack.config.*`
//! labels (this project's, and the upstream spec's), or the labels OGX's own image build sets
//! (`com.ogx.config.<file>`: base64 of each config file the image carries, and
//! `com.ogx.distribution.default-config`: which file the image runs).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::limits::Limits;
use crate::server_line::{self, OGX_CONFIG_PREFIX, ServerRelease};

/// Base64 of the whole config.yaml (for configs under ~50 KB).
pub const LABEL_BASE64: &str = "io.llamastack.config.base64";
/// Digest of the layer holding config.yaml.
pub const LABEL_LAYER: &str = "io.llamastack.config.layer";
/// Path of config.yaml inside that layer.
pub const LABEL_PATH: &str = "io.llamastack.config.path";
/// Schema version of the config (e.g. `2`).
pub const LABEL_VERSION: &str = "io.llamastack.config.version";
/// OGX images: the config file the image runs (`config.yaml` when absent).
pub const OGX_DEFAULT_CONFIG: &str = "com.ogx.distribution.default-config";
/// OGX images: the config files the image carries (a comma list).
pub const OGX_CONFIGS: &str = "com.ogx.distribution.configs";
/// The file OGX's build names when it sets no default.
const OGX_DEFAULT_FILE: &str = "config.yaml";

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
    /// `com.ogx.config.<file>` of the file asked for, else of the file the image runs
    /// (`com.ogx.distribution.default-config`), as (label, base64), when the image carries
    /// OGX's labels.
    pub ogx_config: Option<(String, String)>,
    /// The config file asked for by name (one of the image's `com.ogx.config.<file>`), which
    /// then wins over every other label.
    pub chosen: Option<String>,
    /// The config files the image carries: `com.ogx.distribution.configs`, else the files of
    /// its `com.ogx.config.` labels.
    pub configs: Vec<String>,
    /// `rootfs.diff_ids`, to find a layer a mirror re-compressed.
    pub diff_ids: Vec<String>,
    /// The server the labels say the image runs, if they say.
    pub server: Option<ServerRelease>,
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
        label: String,
    },
    /// Bad base64.
    #[error("label {label} is not valid base64 (standard alphabet, padded)")]
    BadBase64 {
        /// The label.
        label: String,
    },
    /// The decoded config is too large.
    #[error(
        "label {label} decodes to more than {limit} bytes; use {LABEL_LAYER} + {LABEL_PATH} for large configs"
    )]
    TooLarge {
        /// The label.
        label: String,
        /// The limit.
        limit: usize,
    },
    /// OGX's default-config label names a file the image has no `com.ogx.config.` label for.
    #[error(
        "label {OGX_DEFAULT_CONFIG} names {file:?}, but the image has no label {OGX_CONFIG_PREFIX}{file} (it has: {present})"
    )]
    OgxConfigMissing {
        /// The file the default-config label names.
        file: String,
        /// The `com.ogx.config.` labels present.
        present: String,
    },
    /// The config file asked for is not one the image carries.
    #[error(
        "distribution.imageConfig names {file:?}, but the image has no label {OGX_CONFIG_PREFIX}{file}; its configs: {present}"
    )]
    ChosenConfigMissing {
        /// The file asked for.
        file: String,
        /// The config files the image carries (`none` when it carries no OGX config label).
        present: String,
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
        Some(_) => Err(LabelError::NotAString {
            label: name.to_owned(),
        }),
    }
}

/// Reads the labels and `rootfs.diff_ids` from an image config blob. `chosen`: the config file
/// asked for by name (`distribution.imageConfig`), else the one the image runs.
pub fn read_image_config(blob: &[u8], chosen: Option<&str>) -> Result<ImageConfigInfo, LabelError> {
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
        ogx_config: ogx_config(labels, chosen)?,
        chosen: chosen.map(str::to_owned),
        configs: ogx_configs(labels),
        diff_ids,
        server: server_line::from_labels(labels),
    })
}

/// The config files an OGX image carries: its `configs` label, else its `com.ogx.config.` labels.
fn ogx_configs(labels: Option<&serde_json::Map<String, Value>>) -> Vec<String> {
    let Some(labels) = labels else {
        return Vec::new();
    };
    if let Some(Value::String(listed)) = labels.get(OGX_CONFIGS) {
        let listed: Vec<String> = listed
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect();
        if !listed.is_empty() {
            return listed;
        }
    }
    config_label_files(Some(labels))
        .map(str::to_owned)
        .collect()
}

/// The files the image's `com.ogx.config.<file>` labels hold.
fn config_label_files(
    labels: Option<&serde_json::Map<String, Value>>,
) -> impl Iterator<Item = &str> {
    labels
        .into_iter()
        .flat_map(|l| l.keys())
        .filter_map(|k| k.strip_prefix(OGX_CONFIG_PREFIX))
}

/// The OGX config label of the file asked for (`chosen`), else of the file the image runs, when
/// the image carries any OGX config label. A file asked for by name must be there.
fn ogx_config(
    labels: Option<&serde_json::Map<String, Value>>,
    chosen: Option<&str>,
) -> Result<Option<(String, String)>, LabelError> {
    let present = || {
        let files: Vec<&str> = config_label_files(labels).collect();
        if files.is_empty() {
            "none".to_owned()
        } else {
            files.join(", ")
        }
    };
    let has_any = config_label_files(labels).next().is_some();
    let file = match chosen {
        Some(file) => file.to_owned(),
        None => {
            let named = label(labels, OGX_DEFAULT_CONFIG)?;
            if !has_any && named.is_none() {
                return Ok(None);
            }
            named.unwrap_or_else(|| OGX_DEFAULT_FILE.to_owned())
        }
    };
    let key = format!("{OGX_CONFIG_PREFIX}{file}");
    match labels.and_then(|l| l.get(&key)) {
        Some(Value::String(encoded)) if !encoded.trim().is_empty() => {
            Ok(Some((key, encoded.clone())))
        }
        Some(Value::String(_)) | None | Some(Value::Null) => Err(match chosen {
            Some(_) => LabelError::ChosenConfigMissing {
                file,
                present: present(),
            },
            None => LabelError::OgxConfigMissing {
                file,
                present: present(),
            },
        }),
        Some(_) => Err(LabelError::NotAString { label: key }),
    }
}

/// A base64 label's content, bounded before and after decoding.
fn decode_label(label: &str, encoded: &str, limits: &Limits) -> Result<Vec<u8>, LabelError> {
    let too_large = || LabelError::TooLarge {
        label: label.to_owned(),
        limit: limits.max_label_config_bytes,
    };
    // Decoded size is at most 3/4 of the encoded length: reject before decoding.
    if encoded.len() / 4 * 3 > limits.max_label_config_bytes + 3 {
        return Err(too_large());
    }
    let decoded = STANDARD
        .decode(encoded.trim())
        .map_err(|_| LabelError::BadBase64 {
            label: label.to_owned(),
        })?;
    if decoded.len() > limits.max_label_config_bytes {
        return Err(too_large());
    }
    Ok(decoded)
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
    /// The OGX config file [`ImageConfigInfo::locate`] reads: the one asked for, else the one the
    /// image runs when no `io.llamastack.config.*` label names another.
    pub fn ogx_file(&self) -> Option<&str> {
        let (label, _) = self.ogx_config.as_ref()?;
        let ours = self.base64.is_some() || self.layer.is_some() || self.path.is_some();
        if ours && self.chosen.is_none() {
            return None;
        }
        label.strip_prefix(OGX_CONFIG_PREFIX)
    }

    /// Where the base config is. The `io.llamastack.config.*` labels win (set by whoever built
    /// the image for this operator), the base64 one first (no layer download needed); then
    /// OGX's own label of the file the image runs. A file asked for by name wins over all.
    pub fn locate(&self, limits: &Limits) -> Result<ConfigLocation, LabelError> {
        if self.ogx_file().is_some()
            && let Some((label, encoded)) = &self.ogx_config
        {
            return decode_label(label, encoded, limits).map(ConfigLocation::Inline);
        }
        if let Some(encoded) = &self.base64 {
            return decode_label(LABEL_BASE64, encoded, limits).map(ConfigLocation::Inline);
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const STARTER: &str = include_str!("../../tests/fixtures/ogx-1.5.0/starter/config.yaml");
    const POSTGRES: &str =
        include_str!("../../tests/fixtures/ogx-1.5.0/starter/run-with-postgres-store.yaml");

    /// An image config labelled as OGX's build labels its images: one base64 label per config
    /// file, the default file, the list of files, and the distribution's name and version.
    fn ogx_image_config(extra: serde_json::Value) -> Vec<u8> {
        let mut labels = json!({
            "com.ogx.config.config.yaml": STANDARD.encode(STARTER),
            "com.ogx.config.run-with-postgres-store.yaml": STANDARD.encode(POSTGRES),
            "com.ogx.distribution.name": "starter",
            "com.ogx.distribution.version": "1.5.0",
            "com.ogx.distribution.default-config": "config.yaml",
            "com.ogx.distribution.configs": "config.yaml,run-with-postgres-store.yaml",
            "org.opencontainers.image.title": "OGX - starter",
            "org.opencontainers.image.version": "1.5.0",
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            labels[k] = v.clone();
        }
        serde_json::to_vec(&json!({"config": {"Labels": labels}, "rootfs": {"diff_ids": []}}))
            .unwrap()
    }

    #[test]
    fn an_ogx_image_gives_the_config_it_runs() {
        let info = read_image_config(&ogx_image_config(json!({})), None).unwrap();
        let located = info.locate(&Limits::default()).unwrap();
        assert_eq!(located, ConfigLocation::Inline(STARTER.as_bytes().to_vec()));
        // Another default: that file.
        let info = read_image_config(
            &ogx_image_config(
                json!({"com.ogx.distribution.default-config": "run-with-postgres-store.yaml"}),
            ),
            None,
        )
        .unwrap();
        assert_eq!(
            info.locate(&Limits::default()).unwrap(),
            ConfigLocation::Inline(POSTGRES.as_bytes().to_vec())
        );
    }

    #[test]
    fn a_config_asked_for_by_name_is_read_and_wins_over_every_label() {
        let postgres = "run-with-postgres-store.yaml";
        let info = read_image_config(&ogx_image_config(json!({})), Some(postgres)).unwrap();
        assert_eq!(
            info.locate(&Limits::default()).unwrap(),
            ConfigLocation::Inline(POSTGRES.as_bytes().to_vec())
        );
        assert_eq!(info.configs, ["config.yaml", postgres]);
        // Asked for by name, it wins over this project's labels too: the user named it.
        let info = read_image_config(
            &ogx_image_config(json!({LABEL_BASE64: STANDARD.encode("version: 2\n")})),
            Some(postgres),
        )
        .unwrap();
        assert_eq!(
            info.locate(&Limits::default()).unwrap(),
            ConfigLocation::Inline(POSTGRES.as_bytes().to_vec())
        );
    }

    #[test]
    fn a_config_the_image_lacks_is_refused_naming_what_it_has() {
        let err = read_image_config(&ogx_image_config(json!({})), Some("gpu.yaml"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "distribution.imageConfig names \"gpu.yaml\", but the image has no label com.ogx.config.gpu.yaml; its configs: config.yaml, run-with-postgres-store.yaml"
        );
        // An image without OGX labels has no configs to choose from: never silently its own.
        let plain =
            serde_json::to_vec(&json!({"config": {"Labels": {LABEL_BASE64: "dmVyc2lvbjogMgo="}}}))
                .unwrap();
        let err = read_image_config(&plain, Some("config.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("its configs: none"), "{err}");
    }

    #[test]
    fn the_configs_label_lists_the_files_else_the_config_labels_do() {
        let info = read_image_config(
            &ogx_image_config(json!({OGX_CONFIGS: " a.yaml, ,b.yaml "})),
            None,
        )
        .unwrap();
        assert_eq!(info.configs, ["a.yaml", "b.yaml"]);
        let info = read_image_config(&ogx_image_config(json!({OGX_CONFIGS: null})), None).unwrap();
        assert_eq!(
            info.configs,
            ["config.yaml", "run-with-postgres-store.yaml"]
        );
    }

    #[test]
    fn this_projects_labels_win_over_ogx_labels() {
        let info = read_image_config(
            &ogx_image_config(
                json!({LABEL_BASE64: STANDARD.encode("version: 2\ndistro_name: mine\n")}),
            ),
            None,
        )
        .unwrap();
        assert_eq!(
            info.locate(&Limits::default()).unwrap(),
            ConfigLocation::Inline(b"version: 2\ndistro_name: mine\n".to_vec())
        );
    }

    #[test]
    fn a_default_config_without_its_label_is_named() {
        let info = read_image_config(
            &ogx_image_config(json!({"com.ogx.distribution.default-config": "missing.yaml"})),
            None,
        );
        let err = info.unwrap_err().to_string();
        assert!(
            err.contains("names \"missing.yaml\"")
                && err.contains("config.yaml, run-with-postgres-store.yaml"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_ogx_label_is_named() {
        let info = read_image_config(
            &ogx_image_config(json!({"com.ogx.config.config.yaml": "not base64!"})),
            None,
        )
        .unwrap();
        let err = info.locate(&Limits::default()).unwrap_err().to_string();
        assert!(
            err.contains("label com.ogx.config.config.yaml is not valid base64"),
            "{err}"
        );
        let limits = Limits {
            max_label_config_bytes: 100,
            ..Limits::default()
        };
        let info = read_image_config(&ogx_image_config(json!({})), None).unwrap();
        let err = info.locate(&limits).unwrap_err().to_string();
        assert!(
            err.contains("label com.ogx.config.config.yaml decodes to more than 100 bytes"),
            "{err}"
        );
    }
}
