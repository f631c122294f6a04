//! What the resolver answers: an image and the base config of exactly that image, to be consumed
//! together.

use std::sync::Arc;

use crate::base_config::BaseConfig;
use crate::error::ResolveError;
use crate::signature::SignatureCheck;

/// A resolved (image, base config) pair, to be consumed together.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// Image to deploy: mirrored, and pinned by digest when `pinned`.
    pub image: String,
    /// Whether `image` carries a digest from the registry.
    pub pinned: bool,
    /// The base config of exactly that image.
    pub config: Arc<BaseConfig>,
    /// Set when this is the last known good result (or the embedded fallback of a name),
    /// served because the registry failed with this error.
    pub stale: Option<Arc<ResolveError>>,
    /// The signature check of the image, when the signature policy covers it (verified, or an
    /// `audit` rule's failure).
    pub signature: Option<Arc<SignatureCheck>>,
}
