//! The settings a resolver is made with: the catalog, mirrors, platform, bounds, cache times,
//! registry trust, the signature policy and the credential provider plugins.

use std::sync::Arc;
use std::time::Duration;

use crate::catalog::Catalog;
use crate::credential_provider::CredentialProviders;
use crate::limits::Limits;
use crate::manifest::Platform;
use crate::mirror::MirrorRule;
use crate::signature::SignaturePolicy;
use crate::stats::Stats;

/// Settings of a [`Resolver`](crate::resolve::Resolver).
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
    crate::limits::read_file_within(path, MAX_CA_FILE_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => {
            std::io::Error::new(e.kind(), format!("{e}; a CA bundle is a few hundred KiB"))
        }
        _ => e,
    })
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
