//! The conversion and validating admission webhooks, served over HTTPS (axum + rustls/ring).
//!
//! `POST /convert` answers ConversionReviews (v1alpha2 is the hub, see [`crate::convert`]);
//! `POST /validate` answers AdmissionReviews with Kubernetes-style causes and warnings;
//! `GET /healthz` for probes. Bodies over 3 MiB are refused (the API server's own limit for
//! objects is 1.5 MiB, conversion reviews carry lists).

pub mod certs;
pub mod live_catalog;
pub(crate) mod missing_refs;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::convert::convert;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::response::{StatusCause, StatusDetails};
use kube::core::{DynamicObject, Status};
use live_catalog::LiveCatalog;

/// Shared state of the handlers.
#[derive(Clone)]
pub struct WebhookState {
    /// Distribution names (with image-overrides, followed in the operator ConfigMap) for admission.
    pub catalog: Arc<LiveCatalog>,
    /// API access to check referenced Secrets and ConfigMaps (warnings); `None` skips the checks.
    pub client: Option<kube::Client>,
}

/// How long one review may take; the API server gives up after `timeoutSeconds` (5 s) anyway.
const HANDLER_TIMEOUT: Duration = Duration::from_secs(8);

async fn with_timeout(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    match tokio::time::timeout(HANDLER_TIMEOUT, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "review timed out",
        )
            .into_response(),
    }
}

/// The routes.
pub fn router(state: WebhookState) -> Router {
    Router::new()
        .route("/convert", post(convert_handler))
        .route("/validate", post(validate_handler))
        .route("/healthz", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(3 << 20))
        .layer(axum::middleware::from_fn(with_timeout))
        .with_state(state)
}

async fn convert_handler(Json(review): Json<ConversionReview>) -> Json<ConversionReview> {
    let request = match ConversionRequest::from_review(review) {
        Ok(r) => r,
        Err(_) => {
            return Json(
                ConversionResponse::invalid(Status::failure(
                    "the ConversionReview has no request",
                    "BadRequest",
                ))
                .into_review(),
            );
        }
    };
    let desired = request.desired_api_version.clone();
    let mut converted = Vec::with_capacity(request.objects.len());
    for object in &request.objects {
        match convert(object, &desired) {
            Ok(o) => converted.push(o),
            Err(e) => {
                let name = object
                    .pointer("/metadata/name")
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_owned();
                let status = Status::failure(
                    &format!("cannot convert {name} to {desired}: {e}"),
                    "ConversionFailed",
                );
                return Json(
                    ConversionResponse::for_request(request)
                        .failure(status)
                        .into_review(),
                );
            }
        }
    }
    Json(
        ConversionResponse::for_request(request)
            .success(converted)
            .into_review(),
    )
}

async fn validate_handler(
    State(state): State<WebhookState>,
    Json(review): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(r) => r,
        Err(e) => return Json(AdmissionResponse::invalid(e.to_string()).into_review()),
    };
    let mut response = AdmissionResponse::from(&request);
    let Some(object) = request
        .object
        .as_ref()
        .and_then(|o| serde_json::to_value(o).ok())
    else {
        return Json(response.into_review());
    };
    let catalog = state.catalog.current();
    let mut verdict = crate::validate::checks::check(&object, &catalog);
    if let Some(old) = old_object(&request) {
        verdict
            .warnings
            .extend(crate::validate::checks::migration_turned_off(&old, &object));
    }
    if spec_unchanged(&request, &object) {
        // The operator's own finalizer and label writes, and anyone's metadata edit, go through
        // on an object stored before a rule existed (else it could not even be deleted).
        verdict.errors.clear();
    }
    if let (Some(client), Some(namespace)) = (&state.client, request.namespace.as_deref())
        && verdict.errors.is_empty()
    {
        let refs = crate::api::object_refs::of_object(&object);
        verdict
            .warnings
            .extend(missing_refs::check(client, namespace, &refs).await);
    }
    if !verdict.warnings.is_empty() {
        response.warnings = Some(verdict.warnings);
    }
    if !verdict.errors.is_empty() {
        let message = verdict
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        response = response.deny(message);
        response.result.reason = "Invalid".to_owned();
        response.result.code = 422;
        response.result.details = Some(StatusDetails {
            causes: verdict
                .errors
                .iter()
                .map(|e| StatusCause {
                    reason: "FieldValueInvalid".to_owned(),
                    message: e.message.clone(),
                    field: e.path.clone(),
                })
                .collect(),
            name: request.name.clone(),
            group: request.kind.group.clone(),
            kind: request.kind.kind.clone(),
            uid: String::new(),
            retry_after_seconds: 0,
        });
    }
    Json(response.into_review())
}

/// Whether `request` is an update that leaves the spec as it was (`object` is its new object).
fn spec_unchanged(request: &AdmissionRequest<DynamicObject>, object: &serde_json::Value) -> bool {
    old_object(request).is_some_and(|old| old.get("spec") == object.get("spec"))
}

/// The stored object an update replaces.
fn old_object(request: &AdmissionRequest<DynamicObject>) -> Option<serde_json::Value> {
    if request.operation != kube::core::admission::Operation::Update {
        return None;
    }
    request
        .old_object
        .as_ref()
        .and_then(|old| serde_json::to_value(old).ok())
}

/// Errors starting the webhook server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The certificate or key could not be loaded.
    #[error("cannot load the webhook certificate {cert} / key {key}: {source}")]
    Tls {
        /// Certificate path.
        cert: PathBuf,
        /// Key path.
        key: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The server failed.
    #[error("webhook server on {addr} failed: {source}")]
    Serve {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
}

impl From<crate::tls_files::TlsFilesError> for ServeError {
    fn from(e: crate::tls_files::TlsFilesError) -> Self {
        Self::Tls {
            cert: e.cert,
            key: e.key,
            source: e.source,
        }
    }
}

/// A running server's handle: reload certificates, shut down.
pub struct WebhookServer {
    /// Reload the certificate files in place (rotation without a restart).
    pub tls: axum_server::tls_rustls::RustlsConfig,
    /// Triggers graceful shutdown.
    pub handle: axum_server::Handle<SocketAddr>,
}

impl WebhookServer {
    /// Re-reads the certificate and key files; new connections use them.
    pub async fn reload(
        &self,
        cert: &std::path::Path,
        key: &std::path::Path,
    ) -> Result<(), ServeError> {
        crate::tls_files::reload(&self.tls, cert, key)
            .await
            .map_err(ServeError::from)
    }
}

/// Serves the webhooks on `addr` with a PEM certificate and key; returns once listening, with
/// the server's task (which ends with the server's error, if it fails).
pub async fn serve(
    addr: SocketAddr,
    cert: PathBuf,
    key: PathBuf,
    state: WebhookState,
) -> Result<
    (
        WebhookServer,
        SocketAddr,
        tokio::task::JoinHandle<std::io::Result<()>>,
    ),
    ServeError,
> {
    let tls = crate::tls_files::load(&cert, &key).await?;
    let (bound, handle, task) = crate::tls_files::serve(addr, tls.clone(), router(state))
        .await
        .map_err(|source| ServeError::Serve { addr, source })?;
    Ok((WebhookServer { tls, handle }, bound, task))
}
