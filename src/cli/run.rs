//! `run`: the operator's long-running process: the controller, and the conversion and
//! validating webhooks over HTTPS.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use llama_stack_resolver::Catalog;
use llama_stack_resolver::catalog::parse_image_overrides;

use time::OffsetDateTime;

use llama_stack_resolver::{Resolver, ResolverOptions};

use crate::controller::{self, Context};
use crate::webhook::certs::{CertManager, Plan};
use crate::webhook::{ServeError, WebhookState, serve};

/// Options of `run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address of the HTTPS webhook server.
    #[arg(long, default_value = "0.0.0.0:9443")]
    webhook_addr: SocketAddr,
    /// PEM certificate of the webhook server (re-read when it changes, for rotation).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/tmp/k8s-webhook-server/serving-certs/tls.crt"
    )]
    tls_cert: PathBuf,
    /// PEM private key of the webhook server.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/tmp/k8s-webhook-server/serving-certs/tls.key"
    )]
    tls_key: PathBuf,
    /// The operator ConfigMap's `image-overrides` (names it adds become known to admission).
    #[arg(long, value_name = "FILE")]
    image_overrides: Option<PathBuf>,
    /// How often to check the certificate files for changes.
    #[arg(long, default_value = "30", value_name = "SECONDS")]
    cert_check_interval: u64,
    /// Do not check referenced Secrets and ConfigMaps at admission (no API access needed).
    #[arg(long)]
    no_reference_checks: bool,
    /// Create and rotate the webhook CA and certificate in a Secret and inject the CA bundle into
    /// the CRD and the ValidatingWebhookConfiguration (instead of cert-manager).
    #[arg(long)]
    self_managed_certs: bool,
    /// Namespace of the operator (the certificate Secret lives here).
    #[arg(
        long,
        env = "POD_NAMESPACE",
        default_value = "llama-stack-operator-system"
    )]
    namespace: String,
    /// Name of the webhook Service (for the certificate's DNS names).
    #[arg(long, default_value = "llama-stack-operator-webhook")]
    webhook_service: String,
    /// Secret holding the self-managed certificates.
    #[arg(long, default_value = "llama-stack-operator-webhook-certs")]
    cert_secret: String,
    /// ValidatingWebhookConfiguration to inject the CA bundle into.
    #[arg(long, default_value = "llama-stack-operator")]
    webhook_configuration: String,
    /// Serve only the webhooks, without the controller.
    #[arg(long)]
    no_controller: bool,
}

/// Errors of `run`.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Start-up failed.
    #[error("{0}")]
    Startup(String),
    /// The webhook server failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

pub(super) fn run(args: &Args) -> Result<(), RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Startup(e.to_string()))?;
    runtime.block_on(async {
        let mut catalog = Catalog::embedded().map_err(|e| RunError::Startup(e.to_string()))?;
        if let Some(path) = &args.image_overrides {
            let text = std::fs::read_to_string(path).map_err(|e| RunError::Startup(format!("cannot read {}: {e}", path.display())))?;
            let (valid, problems) = parse_image_overrides(&text);
            for problem in problems {
                eprintln!("warning: {problem}");
            }
            catalog = catalog.with_overrides(&valid);
        }
        let needs_api = !args.no_reference_checks || args.self_managed_certs || !args.no_controller;
        let api = if needs_api {
            Some(kube::Client::try_default().await.map_err(|e| RunError::Startup(format!("cannot reach the Kubernetes API (use --no-reference-checks to run without it): {e}")))?)
        } else {
            None
        };
        let client = if args.no_reference_checks { None } else { api.clone() };
        if let (true, Some(api)) = (args.self_managed_certs, api.clone()) {
            let svc = &args.webhook_service;
            let ns = &args.namespace;
            let manager = CertManager {
                client: api,
                namespace: ns.clone(),
                secret_name: args.cert_secret.clone(),
                dns_names: vec![svc.clone(), format!("{svc}.{ns}"), format!("{svc}.{ns}.svc"), format!("{svc}.{ns}.svc.cluster.local")],
                crd_name: "llamastackdistributions.llamastack.io".to_owned(),
                webhook_configuration: args.webhook_configuration.clone(),
                cert_file: args.tls_cert.clone(),
                key_file: args.tls_key.clone(),
            };
            manager.reconcile(OffsetDateTime::now_utc()).await.map_err(|e| RunError::Startup(e.to_string()))?;
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    match manager.reconcile(OffsetDateTime::now_utc()).await {
                        Ok(Plan::Keep) => {}
                        Ok(plan) => eprintln!("webhook certificates: {plan:?}"),
                        Err(e) => eprintln!("warning: webhook certificates: {e}"),
                    }
                }
            });
        }
        if let (false, Some(api)) = (args.no_controller, api.clone()) {
            let resolver = Resolver::new(ResolverOptions::new(catalog.clone())).map_err(|e| RunError::Startup(e.to_string()))?;
            let ctx = Arc::new(
                Context::new(api, Arc::new(resolver)).with_operator_config(&args.namespace, ResolverOptions::new(catalog.clone())),
            );
            tokio::spawn(controller::run(ctx));
            eprintln!("controller started");
        }
        let state = WebhookState { catalog: Arc::new(catalog), client };
        let (server, addr, task) = serve(args.webhook_addr, args.tls_cert.clone(), args.tls_key.clone(), state).await?;
        eprintln!("webhooks listening on https://{addr} (/convert, /validate, /healthz)");
        let (cert, key) = (args.tls_cert.clone(), args.tls_key.clone());
        let interval = Duration::from_secs(args.cert_check_interval.max(1));
        let mut seen = (modified(&cert), modified(&key));
        let shutdown = server.handle.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            shutdown.graceful_shutdown(Some(Duration::from_secs(10)));
        });
        let watcher = async {
            loop {
                tokio::time::sleep(interval).await;
                let now = (modified(&cert), modified(&key));
                if now != seen {
                    match server.reload(&cert, &key).await {
                        Ok(()) => eprintln!("reloaded the webhook certificate"),
                        Err(e) => eprintln!("warning: keeping the previous webhook certificate: {e}"),
                    }
                    seen = now;
                }
            }
        };
        tokio::select! {
            result = task => result.map_err(|e| RunError::Startup(e.to_string()))?.map_err(RunError::from),
            () = watcher => Ok(()),
        }
    })
}
