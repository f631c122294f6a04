//! What the running server says about itself, for the status: its version (`/v1/version`) and
//! its providers with their health (`/v1/providers`), read through the stack's Service.
//!
//! Read at a bounded rate (when the stack becomes Ready or its config changes, then at most every
//! [`REFRESH`]), with a short timeout and a bounded body, so that a hung or hostile server never
//! holds a reconcile. No credential is sent. A TLS server's certificate is not verified: the
//! operator only reads these two public documents, and the stack's serving CA is the user's.
//! Provider configs are copied into the status (the upstream operator's users read them there)
//! after [`secret_mask`](super::secret_mask) masked what the server did not: it redacts the
//! fields it types as secret, and a credential elsewhere (a URL with a password) would leak.

use k8s_openapi::api::core::v1::Service;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::api::common::{ProviderHealth, ProviderInfo};
use crate::core::observed::{Providers, ServerInfo};

/// The longest a stack's server info may stay unread while the stack is Ready.
pub const REFRESH: Duration = Duration::from_secs(60);
/// Entries older than this are dropped (a Ready stack is reconciled, so read, more often).
const FORGET_AFTER: Duration = Duration::from_secs(30 * 60);
/// One request's limit, connection included.
const TIMEOUT: Duration = Duration::from_secs(3);
/// The largest body read from the server.
const BODY_LIMIT: usize = 1024 * 1024;

/// The form of `providers` kept between reads.
fn remembered(providers: &Providers) -> Providers {
    match providers {
        Providers::Listed(list) => Providers::Remembered(
            crate::controller::memory::slim_cache::providers_digest(list),
        ),
        Providers::Remembered(digest) => Providers::Remembered(*digest),
    }
}

/// Reads servers and remembers, per stack, when, for which revision and with which luck it
/// last did.
pub struct ServerProbe {
    http: Option<reqwest::Client>,
    last: Mutex<HashMap<String, LastRead>>,
    /// Each stack's Service's cluster IP, as last written or read, and when it was last used:
    /// a read of the server needs no read of its Service while the Service's watch shows the
    /// version the operator checked (a cluster IP never changes; a Service made again is a new
    /// version).
    addresses: Mutex<HashMap<String, (String, Instant)>>,
}

/// The last read of one stack's server.
#[derive(Clone, Debug)]
struct LastRead {
    at: Instant,
    revision: String,
    /// Reads in a row that found no answer (the first read after a rollout often comes before
    /// every node's proxy knows the new Pod).
    failures: u32,
    /// What that read found, repeated into the status by reconciles until the next read: a
    /// reconcile can start from a cached status that does not show it yet. The providers are
    /// kept as a digest, as the cache keeps them (`slim_cache`): the full answer is written by
    /// the reconcile that read it, and a later write puts the stored list back.
    info: ServerInfo,
}

/// Retries after a failed read: 10 s, 20 s, 40 s, then at the normal pace.
const RETRY: Duration = Duration::from_secs(10);
const RETRIES: u32 = 3;

impl Default for ServerProbe {
    fn default() -> Self {
        // reqwest is built without a default crypto provider; the operator uses ring throughout.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            // Every stack is a host of its own, read once a minute: idle connections kept per
            // host would hold buffers for each stack (about 24 MiB at 1000 stacks).
            .pool_max_idle_per_host(0)
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .tls_danger_accept_invalid_certs(true)
            .user_agent(concat!("llama-stack-operator/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| tracing::warn!(%error, "no HTTP client for reading servers"))
            .ok();
        Self {
            http,
            last: Mutex::new(HashMap::new()),
            addresses: Mutex::new(HashMap::new()),
        }
    }
}

impl ServerProbe {
    /// Whether the server of stack `uid`, at `revision`, should be read now.
    pub fn due(&self, uid: &str, revision: &str, now: Instant) -> bool {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match last.get(uid) {
            Some(read) => {
                read.revision != revision
                    || now.duration_since(read.at) >= wait_after(read.failures)
            }
            None => true,
        }
    }

    /// Notes a read of stack `uid`'s server at `revision` and what it found, and forgets stacks
    /// not read for [`FORGET_AFTER`] (deleted, or no longer Ready: they are read at once when
    /// they are again).
    pub fn record(&self, uid: &str, revision: &str, now: Instant, info: &ServerInfo) {
        let answered = matches!(info, ServerInfo::Answered { .. });
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.retain(|_, read| now.duration_since(read.at) < FORGET_AFTER);
        let failures = match last.get(uid) {
            _ if answered => 0,
            Some(read) if read.revision == revision => read.failures.saturating_add(1),
            _ => 1,
        };
        let revision = revision.to_owned();
        let info = match info {
            ServerInfo::Answered { version, providers } => ServerInfo::Answered {
                version: version.clone(),
                providers: remembered(providers),
            },
            ServerInfo::NotResponding(why) => ServerInfo::NotResponding(why.clone()),
        };
        last.insert(
            uid.to_owned(),
            LastRead {
                at: now,
                revision,
                failures,
                info,
            },
        );
    }

    /// Notes `ip` as the cluster IP of stack `uid`'s Service, and forgets those not used for
    /// [`FORGET_AFTER`] (the stack deleted, or its Service read again by then).
    pub fn note_address(&self, uid: &str, ip: &str, now: Instant) {
        let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        addresses.retain(|_, (_, used)| now.duration_since(*used) < FORGET_AFTER);
        addresses.insert(uid.to_owned(), (ip.to_owned(), now));
    }

    /// The cluster IP noted for stack `uid`'s Service, if any (and notes its use at `now`).
    pub fn address(&self, uid: &str, now: Instant) -> Option<String> {
        let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        let (ip, used) = addresses.get_mut(uid)?;
        *used = now;
        Some(ip.clone())
    }

    /// What the last read of stack `uid`'s server at `revision` found.
    pub fn last_info(&self, uid: &str, revision: &str) -> Option<ServerInfo> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.get(uid)
            .filter(|read| read.revision == revision)
            .map(|read| read.info.clone())
    }

    /// When to reconcile again to retry a failed read (only the first few retries; after them the
    /// normal resync reads it).
    pub fn retry_in(&self, uid: &str) -> Option<Duration> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let failures = last.get(uid)?.failures;
        (1..=RETRIES)
            .contains(&failures)
            .then(|| wait_after(failures))
    }

    /// Reads `/v1/version` and `/v1/providers` from `base` (`http(s)://host:port`), naming the
    /// operator in `headers` when the server wants its callers named.
    pub async fn read(&self, base: &str, headers: Option<&[(&str, &str)]>) -> ServerInfo {
        let Some(http) = &self.http else {
            return ServerInfo::NotResponding("the operator has no HTTP client".to_owned());
        };
        let (version_url, providers_url) =
            (format!("{base}/v1/version"), format!("{base}/v1/providers"));
        let headers = headers.unwrap_or_default();
        let (version, providers) = tokio::join!(
            get(http, &version_url, headers),
            get(http, &providers_url, headers)
        );
        let parsed = version
            .and_then(|body| parse_version(&body))
            .and_then(|version| Ok((version, parse_providers(&providers?)?)));
        match parsed {
            Ok((version, providers)) => ServerInfo::Answered {
                version,
                providers: Providers::Listed(providers),
            },
            Err(why) => ServerInfo::NotResponding(why),
        }
    }
}

async fn get(
    http: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<Vec<u8>, String> {
    let request = headers
        .iter()
        .fold(http.get(url), |request, (name, value)| {
            request.header(*name, *value)
        });
    let mut response = request
        .send()
        .await
        .map_err(|e| format!("GET {url}: {}", with_causes(&e)))?;
    if !response.status().is_success() {
        return Err(format!("GET {url}: HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("GET {url}: {}", with_causes(&e)))?
    {
        if body.len() + chunk.len() > BODY_LIMIT {
            return Err(format!("GET {url}: the answer exceeds {BODY_LIMIT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// How long after a read the next one is due.
fn wait_after(failures: u32) -> Duration {
    match failures {
        n @ 1..=RETRIES => (RETRY * 2u32.pow(n - 1)).min(REFRESH),
        _ => REFRESH,
    }
}

/// reqwest's message with its causes (the URL is the operator's own, no secret).
fn with_causes(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// The `version` of a `/v1/version` answer.
pub fn parse_version(body: &[u8]) -> Result<String, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("/v1/version is not JSON: {e}"))?;
    value["version"]
        .as_str()
        .map(|v| v.chars().take(64).collect())
        .ok_or_else(|| "/v1/version has no version".to_owned())
}

/// The providers of a `/v1/providers` answer (`data`), sorted by API and id, their configs
/// masked (and left out when too large for a status).
pub fn parse_providers(body: &[u8]) -> Result<Vec<ProviderInfo>, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("/v1/providers is not JSON: {e}"))?;
    let list = value["data"]
        .as_array()
        .ok_or("/v1/providers has no data list")?;
    let text = |v: &Value| v.as_str().map(|s| s.chars().take(253).collect::<String>());
    let mut providers: Vec<ProviderInfo> = list
        .iter()
        .filter_map(|p| {
            Some(ProviderInfo {
                api: text(&p["api"])?,
                provider_id: text(&p["provider_id"])?,
                provider_type: text(&p["provider_type"])?,
                config: super::secret_mask::masked_config(&p["config"]),
                health: p["health"].is_object().then(|| ProviderHealth {
                    status: text(&p["health"]["status"]).unwrap_or_default(),
                    message: text(&p["health"]["message"]).filter(|m| !m.is_empty()),
                }),
            })
        })
        .collect();
    providers.sort_by(|a, b| (&a.api, &a.provider_id).cmp(&(&b.api, &b.provider_id)));
    Ok(providers)
}

/// A Service's cluster IP, unless it has none (headless, or not yet given one).
pub(in crate::controller) fn cluster_ip(service: &Service) -> Option<String> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .filter(|ip| !ip.is_empty() && ip != "None")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::common::ProvidersDigest;

    #[test]
    fn providers_keep_identity_health_and_the_config_with_credentials_masked() {
        let body = br#"{"data": [
            {"api": "safety", "provider_id": "guard", "provider_type": "inline::llama-guard", "config": {}, "health": {"status": "Not Implemented", "message": "Provider does not implement health check"}},
            {"api": "inference", "provider_id": "vllm", "provider_type": "remote::vllm",
             "config": {"base_url": "http://user:hunter2@vllm/v1", "api_token": "********"}, "health": {"status": "OK"}},
            {"api": "inference", "provider_type": "broken entry without id"}]}"#;
        let providers = parse_providers(body).unwrap();
        assert_eq!(providers.len(), 2, "entries without an id are dropped");
        assert_eq!(providers[0].provider_id, "vllm", "sorted by API, then id");
        assert_eq!(providers[0].health.as_ref().unwrap().status, "OK");
        assert_eq!(providers[0].health.as_ref().unwrap().message, None);
        assert_eq!(
            providers[1].health.as_ref().unwrap().status,
            "Not Implemented"
        );
        assert_eq!(
            serde_json::to_value(&providers[0].config).unwrap(),
            serde_json::json!({"base_url": "http://********@vllm/v1", "api_token": "********"}),
            "the config as the server reports it, the password in the URL masked"
        );
        let text = serde_json::to_string(&providers).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn bad_answers_say_what_is_wrong() {
        assert_eq!(
            parse_version(br#"{"version": "0.7.3"}"#),
            Ok("0.7.3".to_owned())
        );
        assert!(parse_version(b"<html>").unwrap_err().contains("not JSON"));
        assert!(
            parse_version(br#"{"v": 1}"#)
                .unwrap_err()
                .contains("no version")
        );
        assert!(
            parse_providers(br#"{"items": []}"#)
                .unwrap_err()
                .contains("no data list")
        );
    }

    fn answered() -> ServerInfo {
        ServerInfo::Answered {
            version: "0.7.3".into(),
            providers: Providers::Remembered(ProvidersDigest::default()),
        }
    }

    fn silent() -> ServerInfo {
        ServerInfo::NotResponding("connection refused".into())
    }

    #[test]
    fn a_server_is_read_again_when_its_revision_changes_or_the_refresh_passes() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        assert!(probe.due("u", "1", t0), "never read");
        probe.record("u", "1", t0, &answered());
        assert!(!probe.due("u", "1", t0 + Duration::from_secs(1)));
        assert!(
            probe.due("u", "2", t0 + Duration::from_secs(1)),
            "a new revision"
        );
        assert!(probe.due("u", "1", t0 + REFRESH));
        assert_eq!(probe.retry_in("u"), None, "it answered");
        probe.record("other", "1", t0 + FORGET_AFTER, &answered());
        assert_eq!(
            probe.last.lock().unwrap().len(),
            1,
            "a stack unread for long is forgotten"
        );
    }

    #[test]
    fn a_failed_read_is_retried_soon_a_few_times_then_at_the_normal_pace() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        let mut waits = Vec::new();
        for n in 0..5 {
            probe.record("u", "1", t0, &silent());
            waits.push(probe.retry_in("u").map(|d| d.as_secs()));
            assert_eq!(
                n < 3,
                probe.due("u", "1", t0 + Duration::from_secs(40)),
                "after {} failures",
                n + 1
            );
        }
        assert_eq!(waits, [Some(10), Some(20), Some(40), None, None]);
        probe.record("u", "1", t0, &answered());
        assert_eq!(probe.retry_in("u"), None);
    }

    #[test]
    fn a_services_address_is_kept_while_used_and_forgotten_after_a_long_silence() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        assert_eq!(probe.address("u", t0), None);
        probe.note_address("u", "10.96.0.7", t0);
        probe.note_address("gone", "10.96.0.8", t0);
        assert_eq!(
            probe.address("u", t0 + FORGET_AFTER / 2).as_deref(),
            Some("10.96.0.7")
        );
        // Used half-way: kept past the first note's age; the unused one is forgotten.
        probe.note_address(
            "new",
            "10.96.0.9",
            t0 + FORGET_AFTER + Duration::from_secs(1),
        );
        assert_eq!(
            probe
                .address("u", t0 + FORGET_AFTER + Duration::from_secs(1))
                .as_deref(),
            Some("10.96.0.7")
        );
        assert_eq!(probe.address("gone", t0 + FORGET_AFTER), None);
        // Noted again (the Service made again): the new address.
        probe.note_address("u", "10.96.0.10", t0 + FORGET_AFTER * 2);
        assert_eq!(
            probe.address("u", t0 + FORGET_AFTER * 2).as_deref(),
            Some("10.96.0.10")
        );
    }

    #[test]
    fn the_last_answer_is_kept_for_the_reconciles_between_reads() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        assert_eq!(probe.last_info("u", "1"), None, "never read");
        probe.record("u", "1", t0, &answered());
        assert_eq!(probe.last_info("u", "1"), Some(answered()));
        assert_eq!(
            probe.last_info("u", "2"),
            None,
            "a new revision is read anew"
        );
        probe.record("u", "1", t0, &silent());
        assert_eq!(probe.last_info("u", "1"), Some(silent()));
    }

    #[test]
    fn between_reads_the_providers_are_kept_as_a_digest() {
        let provider = |config: serde_json::Value| ProviderInfo {
            api: "inference".into(),
            provider_id: "vllm".into(),
            provider_type: "remote::vllm".into(),
            config: config.as_object().cloned(),
            health: None,
        };
        let config = serde_json::json!({"base_url": "http://v:8000/v1", "max_tokens": 4096});
        let list = vec![provider(config.clone())];
        let read = ServerInfo::Answered {
            version: "1.3.0".into(),
            providers: Providers::Listed(list.clone()),
        };
        let probe = ServerProbe::default();
        probe.record("u", "1", Instant::now(), &read);
        let Some(ServerInfo::Answered { version, providers }) = probe.last_info("u", "1") else {
            panic!("the answer is kept");
        };
        assert_eq!(version, "1.3.0");
        assert_eq!(
            providers,
            Providers::Remembered(crate::controller::memory::slim_cache::providers_digest(
                &list
            )),
            "the list as the cache keeps it, not the list"
        );
        assert_eq!(providers.count(), 1);
    }

    /// A server that answers only callers named in its headers (as OGX behind Praxis does) is
    /// read when the operator names itself, and not without.
    #[tokio::test]
    async fn a_server_behind_a_gateway_is_read_with_the_callers_headers() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = vec![0; 4096];
                let n = socket.read(&mut request).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&request[..n]).to_ascii_lowercase();
                let named = request.contains("x-user-id: system:llama-stack-operator")
                    && request.contains("x-tenant-id: llama-stack-operator");
                let body = if request.starts_with("get /v1/version") {
                    r#"{"version": "1.3.0"}"#
                } else {
                    r#"{"data": []}"#
                };
                let status = if named { "200 OK" } else { "401 Unauthorized" };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        let probe = ServerProbe::default();
        match probe
            .read(&base, Some(crate::stack_config::OPERATOR_CALLER))
            .await
        {
            ServerInfo::Answered { version, .. } => assert_eq!(version, "1.3.0"),
            other => panic!("named: {other:?}"),
        }
        match probe.read(&base, None).await {
            ServerInfo::NotResponding(why) => assert!(why.contains("401"), "{why}"),
            other => panic!("unnamed: {other:?}"),
        }
    }
}
