//! What the running server says about itself, for the status: its version (`/v1/version`) and
//! its providers with their health (`/v1/providers`), read through the stack's Service when the
//! server memory says it is due (`controller::memory::server_info`).
//!
//! A short timeout and a bounded body, so that a hung or hostile server never holds a reconcile.
//! No credential is sent. A TLS server's certificate is not verified: the operator only reads
//! these two public documents, and the stack's serving CA is the user's. Provider configs are
//! copied into the status (the upstream operator's users read them there) after
//! [`secret_mask`] masked what the server did not: it
//! redacts the fields it types as secret, and a credential elsewhere (a URL with a password)
//! would leak.

use serde_json::Value;

use crate::api::common::{ProviderHealth, ProviderInfo};
use crate::controller::memory::secret_mask;
use crate::core::observed::{Providers, ServerInfo};

/// The largest body read from the server.
const BODY_LIMIT: usize = 1024 * 1024;

/// Reads `/v1/version` and `/v1/providers` from `base` (`http(s)://host:port`) with `http`,
/// naming the operator in `headers` when the server wants its callers named.
pub(in crate::controller) async fn read(
    http: Option<&reqwest::Client>,
    base: &str,
    headers: Option<&[(&str, &str)]>,
) -> ServerInfo {
    let Some(http) = http else {
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
                config: secret_mask::masked_config(&p["config"]),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let http = crate::controller::context::server_http_client();
        match read(
            http.as_ref(),
            &base,
            Some(crate::stack_config::OPERATOR_CALLER),
        )
        .await
        {
            ServerInfo::Answered { version, .. } => assert_eq!(version, "1.3.0"),
            other => panic!("named: {other:?}"),
        }
        match read(http.as_ref(), &base, None).await {
            ServerInfo::NotResponding(why) => assert!(why.contains("401"), "{why}"),
            other => panic!("unnamed: {other:?}"),
        }
    }
}
