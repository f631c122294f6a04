//! OCI and Docker manifests: choosing the platform of an index, and the config and layers of an
//! image manifest.

use serde::Deserialize;

/// `os/arch[/variant]`, e.g. `linux/amd64` (the default) or `linux/arm64/v8`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Platform {
    /// Operating system.
    pub os: String,
    /// CPU architecture.
    pub architecture: String,
    /// Variant, when it matters.
    pub variant: Option<String>,
}

impl Default for Platform {
    fn default() -> Self {
        Self {
            os: "linux".to_owned(),
            architecture: "amd64".to_owned(),
            variant: None,
        }
    }
}

impl std::str::FromStr for Platform {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [os, arch] if !os.is_empty() && !arch.is_empty() => Ok(Self {
                os: (*os).into(),
                architecture: (*arch).into(),
                variant: None,
            }),
            [os, arch, variant] if !os.is_empty() && !arch.is_empty() && !variant.is_empty() => {
                Ok(Self {
                    os: (*os).into(),
                    architecture: (*arch).into(),
                    variant: Some((*variant).into()),
                })
            }
            _ => Err(format!(
                "platform {s:?} must be OS/ARCH or OS/ARCH/VARIANT, e.g. linux/amd64"
            )),
        }
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

/// A content descriptor.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type.
    #[serde(default)]
    pub media_type: String,
    /// Digest.
    pub digest: String,
    /// Size in bytes.
    #[serde(default)]
    pub size: u64,
    /// Platform (index entries).
    #[serde(default)]
    pub platform: Option<DescriptorPlatform>,
    /// Annotations (a cosign signature layer carries its signature in one).
    #[serde(default)]
    pub annotations: std::collections::BTreeMap<String, String>,
    /// The artifact type (entries of a referrers index).
    #[serde(default)]
    pub artifact_type: Option<String>,
}

/// Platform of an index entry.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct DescriptorPlatform {
    /// OS.
    pub os: String,
    /// Architecture.
    pub architecture: String,
    /// Variant.
    #[serde(default)]
    pub variant: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawManifest {
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Option<Vec<Descriptor>>,
}

/// A parsed manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Manifest {
    /// An index (multi-platform).
    Index(Vec<Descriptor>),
    /// An image manifest.
    Image {
        /// The config blob.
        config: Descriptor,
        /// Layers, bottom first.
        layers: Vec<Descriptor>,
    },
}

/// A manifest that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// Not JSON of a manifest shape.
    #[error("manifest of {image} is not a valid OCI or Docker manifest: {detail}")]
    Invalid {
        /// Image.
        image: String,
        /// Why.
        detail: String,
    },
    /// The index has no entry for the platform.
    #[error("image {image} has no manifest for platform {platform}; available: {available}")]
    NoPlatform {
        /// Image.
        image: String,
        /// Wanted platform.
        platform: String,
        /// Platforms the index lists.
        available: String,
    },
}

/// Parses a manifest or index body.
pub fn parse_manifest(image: &str, bytes: &[u8]) -> Result<Manifest, ManifestError> {
    let invalid = |detail: String| ManifestError::Invalid {
        image: image.to_owned(),
        detail,
    };
    let raw: RawManifest = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if let Some(manifests) = raw.manifests {
        return Ok(Manifest::Index(manifests));
    }
    match (raw.config, raw.layers) {
        (Some(config), Some(layers)) => Ok(Manifest::Image { config, layers }),
        _ => Err(invalid(format!(
            "neither an index nor an image manifest (mediaType {})",
            raw.media_type.as_deref().unwrap_or("unset")
        ))),
    }
}

/// The index entry for a platform (a variant is compared only when one is asked for).
pub fn select_platform<'a>(
    image: &str,
    entries: &'a [Descriptor],
    platform: &Platform,
) -> Result<&'a Descriptor, ManifestError> {
    entries
        .iter()
        .find(|d| {
            d.platform.as_ref().is_some_and(|p| {
                p.os == platform.os
                    && p.architecture == platform.architecture
                    && (platform.variant.is_none() || p.variant == platform.variant)
            })
        })
        .ok_or_else(|| ManifestError::NoPlatform {
            image: image.to_owned(),
            platform: platform.to_string(),
            available: entries
                .iter()
                .filter_map(|d| d.platform.as_ref())
                .map(|p| {
                    format!(
                        "{}/{}{}",
                        p.os,
                        p.architecture,
                        p.variant
                            .as_ref()
                            .map(|v| format!("/{v}"))
                            .unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The layer holding a labelled digest, with its position: by layer digest, or (after a mirror
/// re-compressed the layer) by the uncompressed `diff_id` at the same position.
pub fn find_layer<'a>(
    layers: &'a [Descriptor],
    diff_ids: &[String],
    digest: &str,
) -> Option<(usize, &'a Descriptor)> {
    layers
        .iter()
        .position(|l| l.digest == digest)
        .or_else(|| diff_ids.iter().position(|d| d == digest))
        .and_then(|i| Some((i, layers.get(i)?)))
}
