//! The HTTP(S) server of `/metrics`, `/healthz` and `/readyz`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::health::Health;
use super::{Metrics, auth};

#[derive(Clone)]
struct ServerState {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    auth: Option<Arc<auth::MetricsAuth>>,
}

async fn metrics(State(state): State<ServerState>, headers: HeaderMap) -> impl IntoResponse {
    if let Some(reviewer) = &state.auth {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if let Some(refused) = refusal(reviewer.check(authorization).await) {
            return refused;
        }
    }
    match state.metrics.encode() {
        Ok(text) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The response to a scrape that may not read the metrics; `None` when it may.
fn refusal(decision: auth::ScrapeVerdict) -> Option<axum::response::Response> {
    let (code, why) = match decision {
        auth::ScrapeVerdict::Allowed => return None,
        auth::ScrapeVerdict::Unauthenticated(why) => (StatusCode::UNAUTHORIZED, why),
        auth::ScrapeVerdict::Forbidden(why) => (StatusCode::FORBIDDEN, why),
        auth::ScrapeVerdict::Unavailable(why) => {
            tracing::warn!(error = %why, "cannot review a metrics scrape");
            (StatusCode::SERVICE_UNAVAILABLE, why)
        }
    };
    let mut response = (code, format!("{why}\n")).into_response();
    if code == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
    }
    Some(response)
}

async fn readyz(State(state): State<ServerState>) -> impl IntoResponse {
    if !state.health.is_ready() {
        return (StatusCode::SERVICE_UNAVAILABLE, "starting".to_owned());
    }
    healthz(State(state)).await
}

async fn healthz(State(state): State<ServerState>) -> (StatusCode, String) {
    match state.health.problem() {
        Some(problem) => (StatusCode::SERVICE_UNAVAILABLE, problem),
        None => (StatusCode::OK, "ok".to_owned()),
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr` until the task is dropped; returns the
/// bound address. With `auth`, `/metrics` answers only scrapers the API server allows; with
/// `tls`, over HTTPS only.
pub async fn serve(
    addr: SocketAddr,
    metrics_state: Arc<Metrics>,
    health: Arc<Health>,
    auth: Option<Arc<auth::MetricsAuth>>,
    tls: Option<axum_server::tls_rustls::RustlsConfig>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>)> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(ServerState {
            metrics: metrics_state,
            health,
            auth,
        });
    let Some(tls) = tls else {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let task = tokio::spawn(async move { axum::serve(listener, app).await });
        return Ok((bound, task));
    };
    let (bound, _handle, task) = crate::tls_files::serve(addr, tls, app).await?;
    Ok((bound, task))
}
