//! The resolver: a distribution name or image reference, plus the pull credentials of the
//! workload, to a digest-pinned image and the base config that belongs to exactly that image.
//!
//! Caches (moka, each bounded), eight of them: `memo` (a whole request -> its resolution, looked
//! up first, before any credential plugin runs; see `crate::memo`); `tags` (tag -> pinned image, with
//! a TTL); `digests` (digest -> pinned image, immutable); `configs` (image config digest and the file
//! `imageConfig` asks for -> parsed base config, bounded by bytes); `failures` (request -> error, for a short TTL); `last_good`
//! (request -> the last resolution that succeeded, returned marked stale while the registry
//! fails); `verified` (signature checks that passed, by rule and digest); `clients` (registry
//! host -> HTTP client). Keys that come from a registry include a fingerprint of the credentials
//! used, so a namespace never gets a result its own pull secrets could not fetch. Concurrent
//! requests for one key share one fetch, except once the key's registry has failed: then one
//! request at a time asks it again (`retrying`), and the others get the fallback meanwhile
//! instead of waiting (a registry behind a firewall that drops packets costs each wait the
//! whole timeout, and every reconcile of that distribution would wait together).

mod credentials;
mod layers;
mod signatures;

use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::future::Cache;

use crate::base_config::{BaseConfig, ConfigSource, parse_base_config};
use crate::catalog::Catalog;
use crate::credential_provider::ProviderFailure;
use crate::distribution::Distribution;
use crate::embedded::embedded_base_config;
use crate::error::ResolveError;
use crate::image_ref::ImageRef;
use crate::keyring::{Credential, Keyring};
use crate::labels::{ConfigLocation, read_image_config};
use crate::manifest::{
    Descriptor, Manifest, ManifestError, find_layer, parse_manifest, select_platform,
};
use crate::memo::Memo;
use crate::mirror::apply_mirrors;
use crate::options::ResolverOptions;
use crate::registry::RegistryClient;
use crate::resolution::Resolution;
use crate::signature::SignatureCheck;
use crate::stats::{CacheKind, Stats};
use credentials::{candidates, fingerprint, in_kubelet_order, with_provider_failure};

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
    /// The last failure of each request not followed by a success (kept after `failures`
    /// forgets it): a request that finds its key here has a fallback to give while another asks.
    failed_before: Cache<String, Arc<ResolveError>>,
    /// Requests whose registry failed before and is being asked again.
    retrying: std::sync::Mutex<std::collections::HashSet<String>>,
    last_good: Cache<String, Resolution>,
    /// Verified signature checks by rule, digest and signature repository (a signature of an
    /// immutable digest stays valid; a new policy makes a new resolver). Failures are not kept
    /// here: a signature may be pushed after the image.
    verified: Cache<String, Arc<SignatureCheck>>,
    memo: Memo,
}

/// A request asking again a registry that failed before; the next one may ask once it is
/// dropped (answered, or its future dropped mid-request).
struct Retry<'a> {
    retrying: &'a std::sync::Mutex<std::collections::HashSet<String>>,
    key: String,
}

impl<'a> Retry<'a> {
    /// Marks `key` as being asked again, unless another request already does.
    fn start(
        retrying: &'a std::sync::Mutex<std::collections::HashSet<String>>,
        key: &str,
    ) -> Option<Self> {
        let mut keys = retrying
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.insert(key.to_owned()).then(|| Self {
            retrying,
            key: key.to_owned(),
        })
    }
}

impl Drop for Retry<'_> {
    fn drop(&mut self) {
        self.retrying
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.key);
    }
}

impl Resolver {
    /// Credentials from kubelet's credential provider plugins for an image repository, and the
    /// plugins that failed.
    async fn node_credentials(&self, name: &str) -> (Keyring, Vec<ProviderFailure>) {
        match &self.options.credential_providers {
            Some(providers) => providers.keyring_for(name).await,
            None => (Keyring::default(), Vec::new()),
        }
    }

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
            failed_before: Cache::builder().max_capacity(4096).build(),
            retrying: std::sync::Mutex::default(),
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

    /// Resolves a distribution with the credentials kubelet would use for it, to the config the
    /// image runs.
    pub async fn resolve(
        &self,
        distribution: &Distribution,
        keyring: &Keyring,
    ) -> Result<Resolution, Arc<ResolveError>> {
        self.resolve_choosing(distribution, None, keyring).await
    }

    /// [`Resolver::resolve`], reading the image's config file `config` (one its
    /// `com.ogx.distribution.configs` label lists) instead of the one it runs, when given.
    pub async fn resolve_choosing(
        &self,
        distribution: &Distribution,
        config: Option<&str>,
        keyring: &Keyring,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let image = self.reference_of(distribution)?;
        self.resolve_ref(distribution, config, image, keyring).await
    }

    /// Resolves a distribution at the digest it was pinned to before (`pinned`, an image this
    /// resolver returned for it): the same image and base config, without looking at its tag.
    /// `config` as for [`Resolver::resolve_choosing`].
    pub async fn resolve_pinned(
        &self,
        distribution: &Distribution,
        config: Option<&str>,
        pinned: &str,
        keyring: &Keyring,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let image = ImageRef::parse(pinned).map_err(|e| Arc::new(e.into()))?;
        self.resolve_ref(distribution, config, image, keyring).await
    }

    async fn resolve_ref(
        &self,
        distribution: &Distribution,
        config: Option<&str>,
        image: ImageRef,
        keyring: &Keyring,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let name = image.name();
        // Keyed by the Pod's credentials only, and looked up before any credential plugin runs:
        // the plugins are the node's, the same for every stack, so they tell two requests apart
        // no better than the pull secrets do, and a slow or failing plugin then costs only the
        // requests that really go to a registry.
        let key = format!(
            "{distribution}|{}|{image}|{}|{}",
            config.unwrap_or_default(),
            fingerprint(&in_kubelet_order(keyring, &Keyring::default(), &name)),
            self.options.platform
        );
        if let Some(hit) = self.memo.get(&key) {
            self.options.stats.lookup(CacheKind::Manifest, false);
            self.options.stats.lookup(CacheKind::Config, false);
            return Ok(hit);
        }
        if let Some(err) = self.failures.get(&key).await {
            return self.fallback(&key, distribution, config, &image, err).await;
        }
        let retry = match self.failed_before.get(&key).await {
            Some(err) => match Retry::start(&self.retrying, &key) {
                Some(retry) => Some(retry),
                // Another request asks the registry again: this one does not wait for it when
                // it has a fallback (and joins that request's fetch when it has none).
                None => match self.fallback(&key, distribution, config, &image, err).await {
                    Ok(fallback) => return Ok(fallback),
                    Err(_) => None,
                },
            },
            None => None,
        };
        let (node, provider_failures) = self.node_credentials(&name).await;
        let creds = in_kubelet_order(keyring, &node, &name);
        match self
            .resolve_image(distribution, config, &image, &creds, keyring)
            .await
            .map_err(|err| with_provider_failure(err, provider_failures))
        {
            Ok((resolution, expires)) => {
                self.memo.put(key.clone(), &resolution, expires);
                self.failed_before.invalidate(&key).await;
                self.last_good.insert(key, resolution.clone()).await;
                drop(retry);
                Ok(resolution)
            }
            Err(err) => {
                self.failures.insert(key.clone(), err.clone()).await;
                if err.is_registry_failure() {
                    self.failed_before.insert(key.clone(), err.clone()).await;
                }
                drop(retry);
                self.fallback(&key, distribution, config, &image, err).await
            }
        }
    }

    async fn fallback(
        &self,
        key: &str,
        distribution: &Distribution,
        config: Option<&str>,
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
        // The embedded config is the one the image runs: not a stand-in for another it carries.
        if let Distribution::Name(name) = distribution
            && config.is_none()
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

    async fn resolve_image(
        &self,
        distribution: &Distribution,
        config: Option<&str>,
        image: &ImageRef,
        creds: &[&Credential],
        keyring: &Keyring,
    ) -> Result<(Resolution, Option<Instant>), Arc<ResolveError>> {
        let mut rejected = Vec::new();
        for credential in candidates(creds) {
            let client = self.client(image, credential).await?;
            match self.pin(&client, image, creds).await {
                Ok(pinned) => {
                    // Verified before the label is read: an unverified label is never parsed.
                    let signature = self
                        .check_signature(distribution, image, &pinned.digest, keyring)
                        .await?;
                    let mut resolution = self
                        .with_config(distribution, config, image, &client, &pinned)
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
        config: Option<&str>,
        image: &ImageRef,
        client: &RegistryClient,
        pinned: &PinnedImage,
    ) -> Result<Resolution, Arc<ResolveError>> {
        let deployed = image.pinned(&pinned.digest);
        let entry = self
            .configs
            .entry(format!(
                "{}|{}",
                pinned.config.digest,
                config.unwrap_or_default()
            ))
            .or_try_insert_with(self.read_config(client, &deployed, pinned, config))
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

    async fn read_config(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        pinned: &PinnedImage,
        chosen: Option<&str>,
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
        let info = read_image_config(&blob, chosen).map_err(label_err)?;
        let bytes = match info.locate(&limits).map_err(label_err)? {
            ConfigLocation::Absent => return Ok(Arc::new(ConfigOutcome::NoLabels)),
            ConfigLocation::Inline(bytes) => bytes,
            ConfigLocation::Layer { digest, path } => {
                match find_layer(&pinned.layers, &info.diff_ids, &digest) {
                    Some((index, layer)) => {
                        let diff_id = info.diff_ids.get(index).map(String::as_str);
                        self.read_layer_file(client, image, layer, diff_id, &path)
                            .await?
                    }
                    None => {
                        self.scan_layers(
                            client,
                            image,
                            &pinned.layers,
                            &info.diff_ids,
                            &digest,
                            &path,
                        )
                        .await?
                    }
                }
            }
        };
        let mut config = parse_base_config(&bytes, info.version.as_deref(), ConfigSource::OciLabel)
            .map_err(|source| ResolveError::BaseConfig {
                image: shown,
                source,
            })?;
        config.server = info.server;
        config.file = info.ogx_file().map(str::to_owned);
        config.configs = info.configs;
        Ok(Arc::new(ConfigOutcome::Labelled(Arc::new(config))))
    }
}
