//! The resolver: a distribution name or image reference, plus the pull credentials of the
//! workload, to a digest-pinned image and the base config that belongs to exactly that image.
//!
//! Caches (moka): tag -> pinned image with a TTL; digest -> pinned image (immutable); image
//! config digest -> parsed base config, bounded by bytes. Keys that come from a registry include
//! a fingerprint of the credentials used, so a namespace never gets a result its own pull
//! secrets could not fetch. Concurrent requests for one key share one fetch. Failures are
//! remembered briefly; when the registry fails, the last known good result is returned, marked
//! stale, with the error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::future::Cache;
use sha2::{Digest as _, Sha256};

use crate::base_config::{BaseConfig, BaseConfigError, ConfigSource, parse_base_config};
use crate::catalog::{Catalog, LookupError};
use crate::credential_provider::{CredentialProviders, ProviderFailure};
use crate::embedded::embedded_base_config;
use crate::keyring::{Credential, Keyring};
use crate::labels::{ConfigLocation, LABEL_LAYER, LabelError, read_image_config};
use crate::layer::{Compression, LayerError, extract_file};
use crate::limits::Limits;
use crate::manifest::{
    Descriptor, Manifest, ManifestError, Platform, find_layer, parse_manifest, select_platform,
};
use crate::memo::Memo;
use crate::mirror::{MirrorRule, apply_mirrors};
use crate::reference::{ImageRef, ReferenceError};
use crate::registry::{RegistryClient, RegistryError};
use crate::signature::{Mode, SignatureCheck, SignaturePolicy};
use crate::stats::{CacheKind, Stats};

/// What to resolve.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// A catalog name (`starter`).
    Name(String),
    /// An image reference.
    Image(String),
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Name(n) => write!(f, "distribution {n:?}"),
            Self::Image(i) => write!(f, "image {i}"),
        }
    }
}

/// Settings of a [`Resolver`].
#[derive(Clone, Debug)]
pub struct ResolverOptions {
    /// Names to images, with image-overrides applied.
    pub catalog: Catalog,
    /// Mirror rules, applied to every image before it is fetched or deployed.
    pub mirrors: Vec<MirrorRule>,
    /// Platform whose manifest carries the labels.
    pub platform: Platform,
    /// Read bounds.
    pub limits: Limits,
    /// How long a tag -> digest result is trusted.
    pub tag_ttl: Duration,
    /// How long a failure is remembered before the registry is asked again.
    pub failure_ttl: Duration,
    /// Extra CA certificates (PEM) trusted for registries.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// Registries (`host[:port]`) reached over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// Bytes of parsed configs kept in memory.
    pub config_cache_bytes: u64,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Counters, shared by every resolver built from these options.
    pub stats: Arc<Stats>,
    /// How long a deployed pin stands before its tag is looked up again; `None`: until the user
    /// asks (a changed reference, or a re-pin request). Read by the caller, which keeps pins.
    pub repin_after: Option<Duration>,
    /// Which images must carry a signature by which keys, checked before their labels are read.
    pub signatures: Arc<SignaturePolicy>,
    /// kubelet's credential provider plugins: their credentials follow the Pod's pull secrets.
    pub credential_providers: Option<Arc<CredentialProviders>>,
}

/// The largest extra CA bundle read from a file. Every public CA together is about 250 KiB.
pub const MAX_CA_FILE_BYTES: u64 = 10 << 20;

/// Reads an extra CA bundle (PEM) from `path` for [`ResolverOptions::extra_ca_pem`], refusing a
/// file larger than [`MAX_CA_FILE_BYTES`] (the PEM itself is checked when the resolver is made).
pub fn read_ca_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} MiB; a CA bundle is a few hundred KiB",
                MAX_CA_FILE_BYTES >> 20
            ),
        ));
    }
    Ok(bytes)
}

impl ResolverOptions {
    /// Defaults around a catalog: linux/amd64, 5 minute tag TTL, 10 s failure memory.
    pub fn new(catalog: Catalog) -> Self {
        Self {
            catalog,
            mirrors: Vec::new(),
            platform: Platform::default(),
            limits: Limits::default(),
            tag_ttl: Duration::from_secs(300),
            failure_ttl: Duration::from_secs(10),
            extra_ca_pem: None,
            insecure_registries: Vec::new(),
            config_cache_bytes: 64 << 20,
            timeout: Duration::from_secs(30),
            stats: Arc::default(),
            repin_after: None,
            signatures: Arc::default(),
            credential_providers: None,
        }
    }
}

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
    fn is_registry_failure(&self) -> bool {
        matches!(
            self,
            Self::Registry { .. }
                | Self::CredentialsRejected { .. }
                | Self::CredentialProvider { .. }
        )
    }
}

/// An image pinned to a digest, with what is needed to read its base config.
#[derive(Debug)]
struct PinnedImage {
    /// When the registry answered (a tag's pin expires `tag_ttl` after).
    fetched: Instant,
    digest: String,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

/// What an image config says about the base config.
#[derive(Debug)]
enum ConfigOutcome {
    Labelled(Arc<BaseConfig>),
    NoLabels,
}

/// Resolves distributions. Cheap to share (`Arc`); all caches are internal.
pub struct Resolver {
    options: ResolverOptions,
    http: reqwest::Client,
    clients: Cache<String, Arc<RegistryClient>>,
    tags: Cache<String, Arc<PinnedImage>>,
    digests: Cache<String, Arc<PinnedImage>>,
    configs: Cache<String, Arc<ConfigOutcome>>,
    failures: Cache<String, Arc<ResolveError>>,
    last_good: Cache<String, Resolution>,
    /// Verified signature checks by rule, digest and signature repository (a signature of an
    /// immutable digest stays valid; a new policy makes a new resolver). Failures are not kept
    /// here: a signature may be pushed after the image.
    verified: Cache<String, Arc<SignatureCheck>>,
    memo: Memo,
}

fn fingerprint(creds: &[&Credential]) -> String {
    if creds.is_empty() {
        return "anonymous".to_owned();
    }
    let mut hash = Sha256::new();
    for c in creds {
        hash.update(c.username.as_bytes());
        hash.update([0]);
        hash.update(c.password.as_bytes());
        hash.update([0]);
    }
    hash.finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Resolver {
    /// A resolver with empty caches.
    pub fn new(options: ResolverOptions) -> Result<Self, ResolveError> {
        // reqwest is built without a default crypto provider; the operator uses ring throughout.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("llama-stack-operator/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &options.extra_ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
                ResolveError::Setup(format!("the extra CA bundle is not valid PEM: {e}"))
            })?;
            if certs.is_empty() {
                return Err(ResolveError::Setup(
                    "the extra CA bundle holds no certificate".to_owned(),
                ));
            }
            builder = builder.tls_certs_merge(certs);
        }
        let http = builder
            .build()
            .map_err(|e| ResolveError::Setup(e.to_string()))?;
        let weigher = |_: &String, v: &Arc<ConfigOutcome>| -> u32 {
            match v.as_ref() {
                ConfigOutcome::Labelled(c) => u32::try_from(c.heap_bytes())
                    .unwrap_or(u32::MAX)
                    .saturating_add(256),
                ConfigOutcome::NoLabels => 64,
            }
        };
        Ok(Self {
            http,
            clients: Cache::builder().max_capacity(256).build(),
            tags: Cache::builder()
                .max_capacity(4096)
                .time_to_live(options.tag_ttl)
                .build(),
            digests: Cache::builder().max_capacity(4096).build(),
            configs: Cache::builder()
                .weigher(weigher)
                .max_capacity(options.config_cache_bytes)
                .build(),
            failures: Cache::builder()
                .max_capacity(4096)
                .time_to_live(options.failure_ttl)
                .build(),
            last_good: Cache::builder().max_capacity(4096).build(),
            verified: Cache::builder().max_capacity(4096).build(),
            memo: Memo::new(
                4096,
                usize::try_from(options.config_cache_bytes).unwrap_or(usize::MAX),
            ),
            options,
        })
    }

    /// HTTP requests sent to registries so far (for tests and metrics).
    pub fn registry_requests(&self) -> u64 {
        self.options.stats.requests()
    }

    /// The counters behind [`Resolver::registry_requests`], for metrics.
    pub fn stats(&self) -> Arc<Stats> {
        self.options.stats.clone()
    }

    /// How long a deployed pin stands before its tag is looked up again (`None`: until asked).
    pub fn repin_after(&self) -> Option<Duration> {
        self.options.repin_after
    }

    /// The reference a distribution resolves from now (catalog, overrides and mirrors applied;
    /// no registry request).
    /// The catalog this resolver looks names up in (`image-overrides` applied).
    pub fn catalog(&self) -> &Catalog {
        &self.options.catalog
    }

    /// The reference a distribution resolves from (catalog, overrides and mirrors applied).
    pub fn reference(&self, distribution: &Distribution) -> Result<String, Arc<ResolveError>> {
        self.reference_of(distribution).map(|r| r.to_string())
    }

    fn reference_of(&self, distribution: &Distribution) -> Result<ImageRef, Arc<ResolveError>> {
        let image = match distribution {
            Distribution::Name(name) => self
                .options
                .catalog
                .image(name)
                .map_err(|e| Arc::new(e.into()))?
                .to_owned(),
            Distribution::Image(image) => image.clone(),
        };
        Ok(apply_mirrors(
            &self.options.mirrors,
            &ImageRef::parse(&image).map_err(|e| Arc::new(e.into()))?,
        ))
    }

    /// Resolves a distribution with the credentials kubelet would use for it.
    pub async fn resolve(
        &self,
        distribution: &Distribution,
        keyring: &Keyring,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let image = self.reference_of(distribution)?;
        self.resolve_ref(distribution, image, keyring).await
    }

    /// Resolves a distribution at the digest it was pinned to before (`pinned`, an image this
    /// resolver returned for it): the same image and base config, without looking at its tag.
    pub async fn resolve_pinned(
        &self,
        distribution: &Distribution,
        pinned: &str,
        keyring: &Keyring,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let image = ImageRef::parse(pinned).map_err(|e| Arc::new(e.into()))?;
        self.resolve_ref(distribution, image, keyring).await
    }

    async fn resolve_ref(
        &self,
        distribution: &Distribution,
        image: ImageRef,
        keyring: &Keyring,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let name = image.name();
        let (node, provider_failures) = self.node_credentials(&name).await;
        let mut creds = keyring.lookup(&name);
        creds.extend(node.lookup(&name));
        let key = format!(
            "{distribution}|{image}|{}|{}",
            fingerprint(&creds),
            self.options.platform
        );

        if let Some(hit) = self.memo.get(&key) {
            self.options.stats.lookup(CacheKind::Manifest, false);
            self.options.stats.lookup(CacheKind::Config, false);
            return Ok(hit);
        }
        if let Some(err) = self.failures.get(&key).await {
            return self.fallback(&key, distribution, &image, err).await;
        }
        match self
            .resolve_image(distribution, &image, &creds, keyring)
            .await
            .map_err(|err| with_provider_failure(err, provider_failures))
        {
            Ok((resolution, expires)) => {
                self.memo.put(key.clone(), &resolution, expires);
                self.last_good.insert(key, resolution.clone()).await;
                Ok(resolution)
            }
            Err(err) => {
                self.failures.insert(key.clone(), err.clone()).await;
                self.fallback(&key, distribution, &image, err).await
            }
        }
    }

    async fn fallback(
        &self,
        key: &str,
        distribution: &Distribution,
        image: &ImageRef,
        err: Arc<ResolveError>,
    ) -> Result<Resolution, Arc<ResolveError>> {
        if !err.is_registry_failure() {
            return Err(err);
        }
        if let Some(good) = self.last_good.get(key).await {
            return Ok(Resolution {
                stale: Some(err),
                ..good
            });
        }
        // A named distribution still has its embedded config; deploy the reference unpinned,
        // unless a signature is required of that image: an unverified image is never deployed.
        if let Distribution::Name(name) = distribution
            && !self.signature_required(distribution, image)
            && let Some(config) = self.embedded(name, image)?
        {
            return Ok(Resolution {
                image: image.to_string(),
                pinned: false,
                config,
                stale: Some(err),
                signature: None,
            });
        }
        Err(err)
    }

    /// Whether a `required` signature rule covers the image.
    fn signature_required(&self, distribution: &Distribution, image: &ImageRef) -> bool {
        self.options
            .signatures
            .rule_for(distribution, image)
            .is_some_and(|(_, rule)| rule.mode == Mode::Required)
    }

    fn embedded(
        &self,
        name: &str,
        image: &ImageRef,
    ) -> Result<Option<Arc<BaseConfig>>, Arc<ResolveError>> {
        embedded_base_config(name)
            .map(|parsed| {
                parsed.map_err(|source| {
                    Arc::new(ResolveError::BaseConfig {
                        image: image.to_string(),
                        source,
                    })
                })
            })
            .transpose()
    }

    /// Credentials from kubelet's credential provider plugins for an image repository, and the
    /// plugins that failed.
    async fn node_credentials(&self, name: &str) -> (Keyring, Vec<ProviderFailure>) {
        match &self.options.credential_providers {
            Some(providers) => providers.keyring_for(name).await,
            None => (Keyring::default(), Vec::new()),
        }
    }

    async fn resolve_image(
        &self,
        distribution: &Distribution,
        image: &ImageRef,
        creds: &[&Credential],
        keyring: &Keyring,
    ) -> Result<(Resolution, Option<Instant>), Arc<ResolveError>> {
        let candidates: Vec<Option<&Credential>> = if creds.is_empty() {
            vec![None]
        } else {
            creds.iter().map(|c| Some(*c)).collect()
        };
        let mut rejected = Vec::new();
        for credential in candidates {
            let client = self.client(image, credential).await?;
            match self.pin(&client, image, creds).await {
                Ok(pinned) => {
                    // Verified before the label is read: an unverified label is never parsed.
                    let signature = self
                        .check_signature(distribution, image, &pinned.digest, keyring)
                        .await?;
                    let mut resolution = self
                        .with_config(distribution, image, &client, &pinned)
                        .await?;
                    resolution.signature = signature;
                    // A tag's pin is looked up again after the tag TTL; a digest never changes.
                    let expires = image
                        .digest
                        .is_none()
                        .then(|| pinned.fetched + self.options.tag_ttl);
                    return Ok((resolution, expires));
                }
                Err(err) => match err.as_ref() {
                    ResolveError::Registry { source, .. }
                        if source.is_unauthorized() && credential.is_some() =>
                    {
                        rejected.push(credential.map(|c| c.source.to_string()).unwrap_or_default());
                    }
                    _ => return Err(err),
                },
            }
        }
        Err(Arc::new(ResolveError::CredentialsRejected {
            image: image.to_string(),
            registry: image.api_host().to_owned(),
            tried: rejected.join(", "),
        }))
    }

    async fn client(
        &self,
        image: &ImageRef,
        credential: Option<&Credential>,
    ) -> Result<Arc<RegistryClient>, Arc<ResolveError>> {
        let host = image.api_host().to_owned();
        let plain = self
            .options
            .insecure_registries
            .iter()
            .any(|r| *r == host || *r == image.registry);
        let key = format!(
            "{host}|{plain}|{}",
            fingerprint(&credential.into_iter().collect::<Vec<_>>())
        );
        let client = self
            .clients
            .get_with(key, async {
                Arc::new(RegistryClient::new(
                    self.http.clone(),
                    &host,
                    plain,
                    credential.cloned(),
                    self.options.stats.clone(),
                ))
            })
            .await;
        Ok(client)
    }

    /// Image reference -> digest and platform manifest, cached (tags with a TTL).
    async fn pin(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        creds: &[&Credential],
    ) -> Result<Arc<PinnedImage>, Arc<ResolveError>> {
        let key = format!(
            "{}@{}|{}|{}",
            image.name(),
            image.reference(),
            fingerprint(creds),
            self.options.platform
        );
        let cache = if image.digest.is_some() {
            &self.digests
        } else {
            &self.tags
        };
        let entry = cache
            .entry(key)
            .or_try_insert_with(self.fetch_pinned(client, image))
            .await?;
        self.options
            .stats
            .lookup(CacheKind::Manifest, entry.is_fresh());
        Ok(entry.into_value())
    }

    async fn fetch_pinned(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
    ) -> Result<Arc<PinnedImage>, ResolveError> {
        let limit = self.options.limits.max_manifest_bytes;
        let registry_err = |source| ResolveError::Registry {
            image: image.to_string(),
            source,
        };
        let top = client
            .manifest(&image.repository, image.reference(), limit)
            .await
            .map_err(registry_err)?;
        let shown = image.to_string();
        let (config, layers) = match parse_manifest(&shown, &top.bytes)? {
            Manifest::Image { config, layers } => (config, layers),
            Manifest::Index(entries) => {
                let entry = select_platform(&shown, &entries, &self.options.platform)?;
                let platform_manifest = client
                    .manifest(&image.repository, &entry.digest, limit)
                    .await
                    .map_err(registry_err)?;
                match parse_manifest(&shown, &platform_manifest.bytes)? {
                    Manifest::Image { config, layers } => (config, layers),
                    Manifest::Index(_) => {
                        return Err(ManifestError::Invalid {
                            image: shown,
                            detail: "an index entry points at another index".to_owned(),
                        }
                        .into());
                    }
                }
            }
        };
        Ok(Arc::new(PinnedImage {
            fetched: Instant::now(),
            digest: top.digest,
            config,
            layers,
        }))
    }

    async fn with_config(
        &self,
        distribution: &Distribution,
        image: &ImageRef,
        client: &RegistryClient,
        pinned: &PinnedImage,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let deployed = image.pinned(&pinned.digest);
        let entry = self
            .configs
            .entry(pinned.config.digest.clone())
            .or_try_insert_with(self.read_config(client, &deployed, pinned))
            .await?;
        self.options
            .stats
            .lookup(CacheKind::Config, entry.is_fresh());
        let outcome = entry.into_value();
        let config = match outcome.as_ref() {
            ConfigOutcome::Labelled(config) => config.clone(),
            ConfigOutcome::NoLabels => match distribution {
                Distribution::Name(name) => self.embedded(name, image)?.ok_or_else(|| {
                    Arc::new(ResolveError::BaseConfigRequired {
                        image: deployed.to_string(),
                    })
                })?,
                Distribution::Image(_) => {
                    return Err(Arc::new(ResolveError::BaseConfigRequired {
                        image: deployed.to_string(),
                    }));
                }
            },
        };
        Ok(Resolution {
            image: deployed.to_string(),
            pinned: true,
            config,
            stale: None,
            signature: None,
        })
    }

    /// The signature check of the image pinned to `digest`, when a rule covers it: cached once
    /// verified; an error when a `required` rule's check fails.
    async fn check_signature(
        &self,
        distribution: &Distribution,
        image: &ImageRef,
        digest: &str,
        keyring: &Keyring,
    ) -> Result<Option<Arc<SignatureCheck>>, Arc<ResolveError>> {
        let Some((index, rule)) = self.options.signatures.rule_for(distribution, image) else {
            return Ok(None);
        };
        let signatures_in = match &rule.signature_repository {
            Some(repository) => apply_mirrors(
                &self.options.mirrors,
                &ImageRef::parse(repository).map_err(|e| Arc::new(e.into()))?,
            ),
            None => image.clone(),
        };
        let key = format!("{index}|{digest}|{}", signatures_in.name());
        if let Some(check) = self.verified.get(&key).await {
            return Ok(Some(check));
        }
        let verdict = self
            .signature_verdict(&signatures_in, digest, keyring, &rule.keys)
            .await?;
        let check = Arc::new(SignatureCheck {
            rule: rule.name.clone(),
            mode: rule.mode,
            image: image.pinned(digest).to_string(),
            signatures_in: signatures_in.name(),
            keys: rule.key_names(),
            missing_keys: rule.missing_keys.clone(),
            verdict,
        });
        self.options.stats.signature(check.outcome());
        if check.verified() {
            self.verified.insert(key, check.clone()).await;
        } else if rule.mode == Mode::Required {
            return Err(Arc::new(ResolveError::Signature { check }));
        }
        Ok(Some(check))
    }

    /// The verdict from the signatures in `repository`, read with the credentials kubelet would
    /// use for it (the next one after a refusal).
    async fn signature_verdict(
        &self,
        repository: &ImageRef,
        digest: &str,
        keyring: &Keyring,
        keys: &[crate::signature::PublicKey],
    ) -> Result<crate::signature::Verdict, Arc<ResolveError>> {
        let (node, _) = self.node_credentials(&repository.name()).await;
        let mut creds = keyring.lookup(&repository.name());
        creds.extend(node.lookup(&repository.name()));
        let candidates: Vec<Option<&Credential>> = if creds.is_empty() {
            vec![None]
        } else {
            creds.iter().map(|c| Some(*c)).collect()
        };
        let mut last = None;
        for credential in candidates {
            let client = self.client(repository, credential).await?;
            match crate::signature::fetch::verdict(&client, &repository.repository, digest, keys)
                .await
            {
                Ok(verdict) => return Ok(verdict),
                Err(source) if source.is_unauthorized() && credential.is_some() => {
                    last = Some(source);
                }
                Err(source) => {
                    return Err(Arc::new(ResolveError::Registry {
                        image: repository.name(),
                        source,
                    }));
                }
            }
        }
        Err(Arc::new(ResolveError::Registry {
            image: repository.name(),
            source: last.unwrap_or_else(|| RegistryError::Auth {
                registry: repository.api_host().to_owned(),
                detail: "no credential to try".to_owned(),
            }),
        }))
    }

    async fn read_config(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        pinned: &PinnedImage,
    ) -> Result<Arc<ConfigOutcome>, ResolveError> {
        let shown = image.to_string();
        let limits = self.options.limits;
        let blob = client
            .blob(
                &image.repository,
                &pinned.config.digest,
                limits.max_manifest_bytes,
            )
            .await
            .map_err(|source| ResolveError::Registry {
                image: shown.clone(),
                source,
            })?;
        let label_err = |source| ResolveError::Label {
            image: shown.clone(),
            source,
        };
        let info = read_image_config(&blob).map_err(label_err)?;
        let bytes = match info.locate(&limits).map_err(label_err)? {
            ConfigLocation::Absent => return Ok(Arc::new(ConfigOutcome::NoLabels)),
            ConfigLocation::Inline(bytes) => bytes,
            ConfigLocation::Layer { digest, path } => {
                match find_layer(&pinned.layers, &info.diff_ids, &digest) {
                    Some(layer) => self.read_layer_file(client, image, layer, &path).await?,
                    None => {
                        self.scan_layers(client, image, &pinned.layers, &digest, &path)
                            .await?
                    }
                }
            }
        };
        let config = parse_base_config(&bytes, info.version.as_deref(), ConfigSource::OciLabel)
            .map_err(|source| ResolveError::BaseConfig {
                image: shown,
                source,
            })?;
        Ok(Arc::new(ConfigOutcome::Labelled(Arc::new(config))))
    }

    /// The labelled digest is not in the image: a mirror re-compressed the layers and the label
    /// named the compressed digest. Look for the path in the layers, topmost first (the file a
    /// container would see), each read within the usual bounds.
    async fn scan_layers(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        layers: &[Descriptor],
        digest: &str,
        path: &str,
    ) -> Result<Vec<u8>, ResolveError> {
        for layer in layers.iter().rev() {
            match self.read_layer_file(client, image, layer, path).await {
                Err(ResolveError::Layer {
                    source: LayerError::NotFound { .. },
                    ..
                }) => continue,
                other => return other,
            }
        }
        Err(ResolveError::LayerNotInImage {
            image: image.to_string(),
            digest: digest.to_owned(),
            path: path.to_owned(),
        })
    }

    /// Streams one layer into a blocking tar reader that stops at the file.
    async fn read_layer_file(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        layer: &Descriptor,
        path: &str,
    ) -> Result<Vec<u8>, ResolveError> {
        let shown = image.to_string();
        let compression = Compression::from_media_type(&layer.media_type).ok_or_else(|| {
            ResolveError::LayerMediaType {
                image: shown.clone(),
                digest: layer.digest.clone(),
                media_type: layer.media_type.clone(),
            }
        })?;
        let mut response = client
            .blob_response(&image.repository, &layer.digest)
            .await
            .map_err(|source| ResolveError::Registry {
                image: shown.clone(),
                source,
            })?;
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(8);
        let limits = self.options.limits;
        let path_owned = path.to_owned();
        let extraction = tokio::task::spawn_blocking(move || {
            extract_file(
                ChannelReader {
                    rx,
                    current: Vec::new(),
                    pos: 0,
                },
                compression,
                &path_owned,
                &limits,
            )
        });
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => Ok(chunk.to_vec()),
                Ok(None) => break,
                Err(e) => Err(std::io::Error::other(format!(
                    "reading the layer failed: {e}"
                ))),
            };
            let failed = chunk.is_err();
            // The reader hangs up once it has the file: stop downloading.
            if tx.send(chunk).await.is_err() || failed {
                break;
            }
        }
        drop(tx);
        let result = extraction
            .await
            .map_err(|e| ResolveError::Setup(format!("layer extraction task failed: {e}")))?;
        result.map_err(|source| ResolveError::Layer {
            image: shown,
            source,
        })
    }
}

/// A registry failure, told with the plugin that failed to give credentials for the image.
fn with_provider_failure(
    err: Arc<ResolveError>,
    failures: Vec<ProviderFailure>,
) -> Arc<ResolveError> {
    match failures.into_iter().next() {
        Some(failure) if err.is_registry_failure() => {
            Arc::new(ResolveError::CredentialProvider { failure, then: err })
        }
        _ => err,
    }
}

/// Blocking `Read` over chunks sent from the async side.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    current: Vec<u8>,
    pos: usize,
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.current.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.current = chunk?;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.pos);
        buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
