//! A minimal client of the OCI distribution API: what the resolver needs (manifests, blobs),
//! with every body read bounded, digests verified, and Basic or Bearer-token authentication.
//!
//! One client serves one (registry, credential) pair; tokens are cached per repository scope.
//! Credentials are sent only to the registry and to its token realm, and only over HTTPS unless
//! the registry was configured as insecure; redirects to other hosts (blob storage) carry none.

mod challenge;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{Response, StatusCode};
use tokio::sync::Mutex;

use crate::digest::{digest_like, sha256_hex};
use crate::keyring::Credential;
use crate::stats::Stats;
pub use challenge::{Challenge, parse_challenge};

/// Media types accepted for manifests, most preferred first.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// Token responses larger than this are refused.
const MAX_TOKEN_RESPONSE: usize = 64 << 10;

/// A failed registry call. Messages name the registry and what was asked, never credentials.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RegistryError {
    /// 401/403 after authenticating (or with no credentials).
    #[error("registry {registry} refused access to {what} ({status}){}", if *.anonymous { ": no pull secret matches this registry; add one to the pod's imagePullSecrets or its ServiceAccount" } else { ": the credentials were rejected" })]
    Unauthorized {
        /// Registry host.
        registry: String,
        /// What was requested.
        what: String,
        /// HTTP status.
        status: u16,
        /// Whether no credentials were sent.
        anonymous: bool,
    },
    /// 404.
    #[error("registry {registry} has no {what}")]
    NotFound {
        /// Registry host.
        registry: String,
        /// What was requested.
        what: String,
    },
    /// Another HTTP status.
    #[error("registry {registry} answered {status} for {what}")]
    Status {
        /// Registry host.
        registry: String,
        /// What was requested.
        what: String,
        /// HTTP status.
        status: u16,
    },
    /// Connection, TLS or timeout.
    #[error("cannot reach registry {registry} for {what}: {detail}")]
    Transport {
        /// Registry host.
        registry: String,
        /// What was requested.
        what: String,
        /// The error chain.
        detail: String,
    },
    /// A body over its limit.
    #[error("registry {registry} sent more than {limit} bytes for {what}; refusing it")]
    TooLarge {
        /// Registry host.
        registry: String,
        /// What was requested.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// Content does not match its digest.
    #[error(
        "registry {registry} sent {what} whose content does not match digest {expected} (got {actual})"
    )]
    DigestMismatch {
        /// Registry host.
        registry: String,
        /// What was requested.
        what: String,
        /// Expected digest.
        expected: String,
        /// Computed digest.
        actual: String,
    },
    /// The token endpoint misbehaved or the challenge is not usable.
    #[error("registry {registry}: {detail}")]
    Auth {
        /// Registry host.
        registry: String,
        /// What went wrong.
        detail: String,
    },
}

impl RegistryError {
    /// Whether the error is the registry refusing these credentials (the next matching
    /// credential may be tried, as kubelet does).
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, Self::Unauthorized { .. })
    }

    /// Whether the error may go away by itself (network, 5xx, 429): the last known good
    /// result may be served meanwhile.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Transport { .. } => true,
            Self::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// A manifest or index as fetched.
#[derive(Clone, Debug)]
pub struct FetchedManifest {
    /// Body.
    pub bytes: Vec<u8>,
    /// `sha256:` of the body.
    pub digest: String,
}

/// One (registry, credential) client.
pub struct RegistryClient {
    http: reqwest::Client,
    base: String,
    registry: String,
    credential: Option<Credential>,
    allow_plain_http_auth: bool,
    basic: std::sync::atomic::AtomicBool,
    tokens: Mutex<HashMap<String, (String, Instant)>>,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient")
            .field("base", &self.base)
            .field("credential", &self.credential)
            .finish_non_exhaustive()
    }
}

async fn read_bounded(
    mut response: Response,
    limit: usize,
) -> Result<Vec<u8>, Option<reqwest::Error>> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Some)? {
        if body.len() + chunk.len() > limit {
            return Err(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A token endpoint's answer: the token, and how long to use it (a little less than it lives;
/// registries assume 60 s when `expires_in` is absent).
fn parse_token(body: &[u8]) -> Result<(String, Duration), &'static str> {
    #[derive(serde::Deserialize)]
    struct TokenResponse {
        token: Option<String>,
        access_token: Option<String>,
        expires_in: Option<u64>,
    }
    let parsed: TokenResponse = serde_json::from_slice(body)
        .map_err(|_| "the token endpoint did not answer with a JSON token")?;
    let token = parsed
        .token
        .or(parsed.access_token)
        .filter(|t| !t.is_empty())
        .ok_or("the token endpoint answered without a token")?;
    let lifetime = Duration::from_secs(parsed.expires_in.unwrap_or(60).max(60))
        .saturating_sub(Duration::from_secs(10));
    Ok((token, lifetime))
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

impl RegistryClient {
    /// A client for `host` (`registry:port`), over plain HTTP when `plain_http`.
    pub fn new(
        http: reqwest::Client,
        host: &str,
        plain_http: bool,
        credential: Option<Credential>,
        stats: Arc<Stats>,
    ) -> Self {
        Self {
            http,
            base: format!("{}://{host}", if plain_http { "http" } else { "https" }),
            registry: host.to_owned(),
            credential,
            allow_plain_http_auth: plain_http,
            basic: false.into(),
            tokens: Mutex::new(HashMap::new()),
            stats,
        }
    }

    /// Whether this client sends credentials.
    pub fn is_anonymous(&self) -> bool {
        self.credential.is_none()
    }

    fn transport(&self, what: &str, err: &reqwest::Error) -> RegistryError {
        RegistryError::Transport {
            registry: self.registry.clone(),
            what: what.to_owned(),
            detail: error_chain(err),
        }
    }

    fn basic_header(&self) -> Option<HeaderValue> {
        let c = self.credential.as_ref()?;
        let mut value = HeaderValue::from_str(&format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", c.username, c.password))
        ))
        .ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    async fn send(
        &self,
        url: &str,
        accept: Option<&str>,
        auth: Option<HeaderValue>,
        what: &str,
    ) -> Result<Response, RegistryError> {
        let mut request = self.http.get(url);
        if let Some(accept) = accept {
            request = request.header(ACCEPT, accept);
        }
        if let Some(auth) = auth {
            request = request.header(AUTHORIZATION, auth);
        }
        let started = Instant::now();
        let result = request.send().await;
        // A 401 is the normal first step of token auth, not a failure.
        let ok = result
            .as_ref()
            .is_ok_and(|r| r.status().is_success() || r.status() == StatusCode::UNAUTHORIZED);
        self.stats.request(started.elapsed(), ok);
        result.map_err(|e| self.transport(what, &e))
    }

    async fn cached_token(&self, scope: &str) -> Option<HeaderValue> {
        let tokens = self.tokens.lock().await;
        let (token, expiry) = tokens.get(scope)?;
        if Instant::now() >= *expiry {
            return None;
        }
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    async fn fetch_token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
    ) -> Result<HeaderValue, RegistryError> {
        let auth_err = |detail: String| RegistryError::Auth {
            registry: self.registry.clone(),
            detail,
        };
        let realm_url = reqwest::Url::parse(realm)
            .map_err(|_| auth_err(format!("token realm {realm:?} is not a URL")))?;
        if realm_url.scheme() != "https" && self.credential.is_some() && !self.allow_plain_http_auth
        {
            return Err(auth_err(format!(
                "refusing to send credentials to the plain-HTTP token realm {realm}; serve the realm over HTTPS or list the registry as insecure"
            )));
        }
        let mut url = realm_url;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", scope);
            if let Some(c) = &self.credential {
                query.append_pair("account", &c.username);
            }
        }
        let what = format!("a token for {scope}");
        let response = self
            .send(url.as_str(), None, self.basic_header(), &what)
            .await?;
        match response.status() {
            s if s.is_success() => {}
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return Err(RegistryError::Unauthorized {
                    registry: self.registry.clone(),
                    what,
                    status: response.status().as_u16(),
                    anonymous: self.credential.is_none(),
                });
            }
            s => {
                return Err(RegistryError::Status {
                    registry: self.registry.clone(),
                    what,
                    status: s.as_u16(),
                });
            }
        }
        let body = read_bounded(response, MAX_TOKEN_RESPONSE)
            .await
            .map_err(|e| match e {
                Some(e) => self.transport(&what, &e),
                None => RegistryError::TooLarge {
                    registry: self.registry.clone(),
                    what: what.clone(),
                    limit: MAX_TOKEN_RESPONSE,
                },
            })?;
        let (token, lifetime) = parse_token(&body).map_err(|detail| auth_err(detail.to_owned()))?;
        self.tokens
            .lock()
            .await
            .insert(scope.to_owned(), (token.clone(), Instant::now() + lifetime));
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| auth_err("the token is not a valid header value".to_owned()))?;
        value.set_sensitive(true);
        Ok(value)
    }

    /// GET with authentication: cached token or Basic first, then answer one challenge.
    async fn get(
        &self,
        path: &str,
        repository: &str,
        accept: Option<&str>,
        what: &str,
    ) -> Result<Response, RegistryError> {
        let url = format!("{}{path}", self.base);
        let scope = format!("repository:{repository}:pull");
        let can_send_basic = self.credential.is_some()
            && (self.base.starts_with("https://") || self.allow_plain_http_auth);
        let first_auth = match self.cached_token(&scope).await {
            Some(token) => Some(token),
            None if self.basic.load(Ordering::Relaxed) && can_send_basic => self.basic_header(),
            None => None,
        };
        let response = self.send(&url, accept, first_auth, what).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return self.check(response, what);
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_challenge);
        let retry_auth = match challenge {
            Some(Challenge::Bearer { realm, service }) => {
                Some(self.fetch_token(&realm, service.as_deref(), &scope).await?)
            }
            Some(Challenge::Basic) if can_send_basic => {
                self.basic.store(true, Ordering::Relaxed);
                self.basic_header()
            }
            _ => None,
        };
        let Some(auth) = retry_auth else {
            return self.check(response, what);
        };
        let response = self.send(&url, accept, Some(auth), what).await?;
        self.check(response, what)
    }

    fn check(&self, response: Response, what: &str) -> Result<Response, RegistryError> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let registry = self.registry.clone();
        let what = what.to_owned();
        Err(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => RegistryError::Unauthorized {
                registry,
                what,
                status: status.as_u16(),
                anonymous: self.credential.is_none(),
            },
            StatusCode::NOT_FOUND => RegistryError::NotFound { registry, what },
            s => RegistryError::Status {
                registry,
                what,
                status: s.as_u16(),
            },
        })
    }

    async fn bounded(
        &self,
        response: Response,
        what: &str,
        limit: usize,
    ) -> Result<Vec<u8>, RegistryError> {
        read_bounded(response, limit).await.map_err(|e| match e {
            Some(e) => self.transport(what, &e),
            None => RegistryError::TooLarge {
                registry: self.registry.clone(),
                what: what.to_owned(),
                limit,
            },
        })
    }

    /// A manifest or index by tag or digest; a digest reference is verified.
    pub async fn manifest(
        &self,
        repository: &str,
        reference: &str,
        limit: usize,
    ) -> Result<FetchedManifest, RegistryError> {
        let what = format!("manifest {repository}:{reference}");
        let response = self
            .get(
                &format!("/v2/{repository}/manifests/{reference}"),
                repository,
                Some(MANIFEST_ACCEPT),
                &what,
            )
            .await?;
        let bytes = self.bounded(response, &what, limit).await?;
        // By digest: verified in the reference's algorithm, and pinned as the user wrote it.
        // By tag: pinned by its sha256 digest, as registries address manifests.
        let by_digest = reference.contains(':');
        let digest = if by_digest {
            digest_like(reference, &bytes)
        } else {
            sha256_hex(&bytes)
        };
        if by_digest && reference != digest {
            return Err(RegistryError::DigestMismatch {
                registry: self.registry.clone(),
                what,
                expected: reference.to_owned(),
                actual: digest,
            });
        }
        Ok(FetchedManifest { bytes, digest })
    }

    /// A manifest or index by tag or digest, `None` when the registry has none (404).
    pub async fn manifest_if_present(
        &self,
        repository: &str,
        reference: &str,
        limit: usize,
    ) -> Result<Option<FetchedManifest>, RegistryError> {
        match self.manifest(repository, reference, limit).await {
            Ok(found) => Ok(Some(found)),
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The OCI referrers index of `digest` (distribution-spec 1.1), `None` when the registry does
    /// not serve the referrers API (404, 400, 405, 406, or an answer that is not an OCI index):
    /// the caller then reads the fallback tag `sha256-<hex>`, as cosign and ggcr do.
    pub async fn referrers(
        &self,
        repository: &str,
        digest: &str,
        limit: usize,
    ) -> Result<Option<Vec<u8>>, RegistryError> {
        const INDEX: &str = "application/vnd.oci.image.index.v1+json";
        let what = format!("referrers of {repository}@{digest}");
        let response = match self
            .get(
                &format!("/v2/{repository}/referrers/{digest}"),
                repository,
                Some(INDEX),
                &what,
            )
            .await
        {
            Ok(response) => response,
            Err(RegistryError::NotFound { .. }) => return Ok(None),
            Err(RegistryError::Status {
                status: 400 | 405 | 406,
                ..
            }) => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let is_index = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(';').next().map(str::trim) == Some(INDEX));
        if !is_index {
            return Ok(None);
        }
        self.bounded(response, &what, limit).await.map(Some)
    }

    /// A small blob (an image config), read whole within `limit` and verified.
    pub async fn blob(
        &self,
        repository: &str,
        digest: &str,
        limit: usize,
    ) -> Result<Vec<u8>, RegistryError> {
        let what = format!("blob {digest} of {repository}");
        let response = self
            .get(
                &format!("/v2/{repository}/blobs/{digest}"),
                repository,
                None,
                &what,
            )
            .await?;
        let bytes = self.bounded(response, &what, limit).await?;
        let actual = digest_like(digest, &bytes);
        if actual != digest {
            return Err(RegistryError::DigestMismatch {
                registry: self.registry.clone(),
                what,
                expected: digest.to_owned(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// A blob as a stream (a layer); the caller bounds what it reads.
    pub async fn blob_response(
        &self,
        repository: &str,
        digest: &str,
    ) -> Result<Response, RegistryError> {
        let what = format!("layer {digest} of {repository}");
        self.get(
            &format!("/v2/{repository}/blobs/{digest}"),
            repository,
            None,
            &what,
        )
        .await
    }

    /// The registry host this client talks to.
    pub fn registry(&self) -> &str {
        &self.registry
    }
}
