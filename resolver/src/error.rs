//! Why a distribution could not be resolved, and the kinds callers report it by.

use std::sync::Arc;

use crate::base_config::BaseConfigError;
use crate::catalog::LookupError;
use crate::credential_provider::ProviderFailure;
use crate::image_ref::ReferenceError;
use crate::labels::{LABEL_LAYER, LabelError};
use crate::layer::LayerError;
use crate::manifest::ManifestError;
use crate::registry::RegistryError;
use crate::signature::SignatureCheck;

/// Why a distribution could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Unknown or removed name.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// Bad image reference.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// The registry failed.
    #[error("cannot resolve {image}: {source}")]
    Registry {
        /// Image.
        image: String,
        /// Cause.
        source: RegistryError,
    },
    /// Every matching credential was rejected.
    #[error(
        "registry {registry} rejected every pull secret that matches {image} (tried, in kubelet's order: {tried}); check the secrets' credentials"
    )]
    CredentialsRejected {
        /// Image.
        image: String,
        /// Registry host.
        registry: String,
        /// Sources tried, in order.
        tried: String,
    },
    /// The registry refused or failed, and a credential provider plugin that matches the image
    /// had failed to give credentials (kubelet would have pulled without them too).
    #[error("{then}; {failure}")]
    CredentialProvider {
        /// The plugin's failure.
        failure: ProviderFailure,
        /// What the registry said without its credentials.
        then: Arc<ResolveError>,
    },
    /// Unusable manifest.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// Unusable label.
    #[error("image {image}: {source}")]
    Label {
        /// Image.
        image: String,
        /// Cause.
        source: LabelError,
    },
    /// The labelled layer or file is unusable.
    #[error("image {image}: cannot read the config named by {LABEL_LAYER}: {source}")]
    Layer {
        /// Image.
        image: String,
        /// Cause.
        source: LayerError,
    },
    /// The labelled layer is not in the image.
    #[error(
        "image {image}: label {LABEL_LAYER} names {digest}, which is neither a layer nor a diff_id of the image, and no layer contains {path}"
    )]
    LayerNotInImage {
        /// Image.
        image: String,
        /// The digest.
        digest: String,
        /// The labelled path.
        path: String,
    },
    /// The labelled layer has an unknown media type.
    #[error(
        "image {image}: the layer {digest} named by {LABEL_LAYER} has media type {media_type:?}, which is not a tar layer"
    )]
    LayerMediaType {
        /// Image.
        image: String,
        /// The layer.
        digest: String,
        /// Its media type.
        media_type: String,
    },
    /// The config is not a usable base config (e.g. an unsupported schema version).
    #[error("base config of {image}: {source}")]
    BaseConfig {
        /// Image.
        image: String,
        /// Cause.
        source: BaseConfigError,
    },
    /// An image without config labels, and no `overrideConfig` to stand in for them.
    #[error(
        "Direct image references require either overrideConfig.configMapName or OCI config labels on the image. See docs/configuration.md for details. (image {image} has no io.llamastack.config labels)"
    )]
    BaseConfigRequired {
        /// The image, pinned by digest.
        image: String,
    },
    /// The signature policy requires a signature of the image by a trusted key, and none
    /// verifies.
    #[error("{}", check.describe())]
    Signature {
        /// What was checked and found.
        check: Arc<SignatureCheck>,
    },
    /// TLS or HTTP client set-up failed (bad CA bundle).
    #[error("cannot set up the registry client: {0}")]
    Setup(String),
}

/// The kinds of [`ResolveError`], for reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// An image without config labels, where a base config is needed.
    BaseConfigRequired,
    /// The base config's `version` is not supported.
    UnsupportedConfigVersion,
    /// The distribution name or image reference is not valid.
    InvalidDistribution,
    /// The registry could not be reached, or refused the credentials.
    Registry,
    /// The base config cannot be read or used.
    InvalidBaseConfig,
    /// The signature policy refused the image.
    SignatureRejected,
}

impl ResolveError {
    /// What kind of failure this is (callers turn it into their own words, e.g. a status reason).
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::BaseConfigRequired { .. } => FailureKind::BaseConfigRequired,
            Self::BaseConfig {
                source: BaseConfigError::UnsupportedVersion { .. },
                ..
            } => FailureKind::UnsupportedConfigVersion,
            Self::Lookup(_) | Self::Reference(_) => FailureKind::InvalidDistribution,
            Self::Registry { .. }
            | Self::CredentialsRejected { .. }
            | Self::CredentialProvider { .. } => FailureKind::Registry,
            Self::Signature { .. } => FailureKind::SignatureRejected,
            _ => FailureKind::InvalidBaseConfig,
        }
    }

    /// The digest-pinned reference of an image that was pinned but has no config labels: enough
    /// for a caller that brings its own config (`overrideConfig`).
    pub fn pinned_without_config(&self) -> Option<&str> {
        match self {
            Self::BaseConfigRequired { image } => Some(image),
            _ => None,
        }
    }

    /// Registry trouble (as opposed to a problem of the content or the request).
    pub(crate) fn is_registry_failure(&self) -> bool {
        matches!(
            self,
            Self::Registry { .. }
                | Self::CredentialsRejected { .. }
                | Self::CredentialProvider { .. }
        )
    }
}
