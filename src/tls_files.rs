//! HTTPS from a PEM certificate and key read from files, and read again when the files change,
//! so that a rotated certificate (the self-managed rotation, cert-manager, OpenShift's service
//! CA, OLM) is served without a restart. The webhook server and the metrics server use it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use tokio::task::JoinHandle;

/// How long a client may take to send a request's headers, and a server to start listening.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A certificate and key that could not be read, or that do not make a TLS configuration.
#[derive(Debug, thiserror::Error)]
#[error("cannot load the certificate {cert} / key {key}: {source}")]
pub struct TlsFilesError {
    /// Certificate path.
    pub cert: PathBuf,
    /// Key path.
    pub key: PathBuf,
    /// Cause.
    pub source: std::io::Error,
}

/// The TLS configuration of `cert` and `key` (PEM files).
pub async fn load(cert: &Path, key: &Path) -> Result<RustlsConfig, TlsFilesError> {
    // Several servers may install it; only the first call does.
    let _ = rustls::crypto::ring::default_provider().install_default();
    RustlsConfig::from_pem_file(cert, key)
        .await
        .map_err(|source| error(cert, key, source))
}

/// Serves `app` over HTTPS with `tls` on `addr`; returns once listening: the bound address, the
/// server's handle (for shutdown) and its task. A client that does not send its request's headers
/// within 10 s is dropped, so slow clients cannot hold connections open forever.
pub async fn serve(
    addr: SocketAddr,
    tls: RustlsConfig,
    app: Router,
) -> std::io::Result<(
    SocketAddr,
    Handle<SocketAddr>,
    JoinHandle<std::io::Result<()>>,
)> {
    let handle = Handle::new();
    let mut server = axum_server::bind_rustls(addr, tls).handle(handle.clone());
    server
        .http_builder()
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(TIMEOUT);
    let task = tokio::spawn(async move { server.serve(app.into_make_service()).await });
    let bound = tokio::time::timeout(TIMEOUT, handle.listening())
        .await
        .ok()
        .flatten()
        .ok_or_else(|| std::io::Error::other("did not start listening"))?;
    Ok((bound, handle, task))
}

/// Reads `cert` and `key` again into `config`: new connections use them, open ones keep theirs.
pub async fn reload(config: &RustlsConfig, cert: &Path, key: &Path) -> Result<(), TlsFilesError> {
    config
        .reload_from_pem_file(cert, key)
        .await
        .map_err(|source| error(cert, key, source))
}

/// Reloads `config` whenever the modification time of `cert` or `key` changes, checked every
/// `interval`; a pair that does not load is logged and the previous certificate kept. `server`
/// names the server in the log. Never returns.
pub async fn follow(
    config: RustlsConfig,
    cert: PathBuf,
    key: PathBuf,
    interval: Duration,
    server: &'static str,
) {
    let mut seen = (modified(&cert), modified(&key));
    loop {
        tokio::time::sleep(interval).await;
        let now = (modified(&cert), modified(&key));
        if now == seen {
            continue;
        }
        match reload(&config, &cert, &key).await {
            Ok(()) => tracing::info!(server, "reloaded the serving certificate"),
            Err(error) => {
                tracing::warn!(server, %error, "keeping the previous serving certificate")
            }
        }
        seen = now;
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn error(cert: &Path, key: &Path, source: std::io::Error) -> TlsFilesError {
    TlsFilesError {
        cert: cert.to_owned(),
        key: key.to_owned(),
        source,
    }
}
