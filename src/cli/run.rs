//! `run`: the operator's long-running process: the controller (optionally only while it holds
//! the leader Lease), the conversion and validating webhooks over HTTPS, and the metrics and
//! health server (HTTPS with `--metrics-tls-cert`, else plain HTTP).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;

use llama_stack_resolver::parse_image_overrides;
use llama_stack_resolver::read_ca_file;
use llama_stack_resolver::{Catalog, Resolver, ResolverOptions};
use time::OffsetDateTime;

use crate::controller::{self, Context};
use crate::leader::{LeaseConfig, run_while_leading};
use crate::metrics::{Health, Metrics};
use crate::tls_files;
use crate::webhook::certs::{CertManager, Plan};
use crate::webhook::live_catalog::LiveCatalog;
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
    /// Run only the controller, without the webhook server.
    #[arg(long)]
    no_webhooks: bool,
    /// Address of the server for /metrics, /healthz and /readyz (HTTPS with
    /// --metrics-tls-cert, else plain HTTP).
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Serve /metrics, /healthz and /readyz over HTTPS with this PEM certificate (and
    /// --metrics-tls-key), read again when it changes, so that a scraper's token never crosses
    /// the network in clear. deploy/ passes the webhook's serving certificate.
    #[arg(long, value_name = "FILE", requires = "metrics_tls_key")]
    metrics_tls_cert: Option<PathBuf>,
    /// The PEM key of --metrics-tls-cert.
    #[arg(long, value_name = "FILE", requires = "metrics_tls_cert")]
    metrics_tls_key: Option<PathBuf>,
    /// Who may read /metrics: anyone who reaches the port (`none`), or the bearer of a token
    /// the API server authenticates and allows to `get /metrics` (`kubernetes`, as deploy/ sets;
    /// the operator's ServiceAccount then needs `system:auth-delegator`). /healthz and /readyz
    /// stay open either way.
    #[arg(long, value_enum, default_value = "none")]
    metrics_auth: MetricsAuthMode,
    /// Watch only these namespaces (comma-separated; default: all). Namespaced RBAC suffices.
    #[arg(long, value_delimiter = ',', env = "WATCH_NAMESPACES")]
    watch_namespaces: Vec<String>,
    /// Run the controller only while holding the leader Lease (for more than one replica).
    #[arg(long)]
    leader_elect: bool,
    /// Name of the leader Lease (in the operator namespace).
    #[arg(long, default_value = "llama-stack-operator-leader")]
    lease_name: String,
    /// This replica's identity in the Lease (default: the Pod name, else the host name).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Log filter: a level (`info`, `debug`) or tracing directives (`llama_stack_operator=debug`).
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    log_level: String,
    /// The operator's own image: its binary runs the external-provider steps in server Pods.
    /// Default: the image of the operator's own Pod (`POD_NAME`), pinned to what the node pulled.
    #[arg(long, env = "OPERATOR_IMAGE")]
    operator_image: Option<String>,
    /// Timeout of one registry request.
    #[arg(long, default_value = "30", value_name = "SECONDS")]
    registry_timeout: u64,
    #[command(flatten)]
    credential_providers: super::credential_providers::CredentialProviderArgs,
    /// PEM file of CA certificates trusted for registries besides the system's (a mirror signed
    /// by a private CA); mount it from a ConfigMap. At most 10 MiB.
    #[arg(long, env = "REGISTRY_CA_FILE", value_name = "FILE")]
    registry_ca_file: Option<PathBuf>,
    /// How long a watch of the controller may keep failing before /healthz and /readyz fail (so
    /// that a kubelet restarts an operator that no longer hears the API server).
    #[arg(long, default_value = "60", value_name = "SECONDS")]
    watch_stuck_after: u64,
    /// How many reconciles run at once (bounds the memory of a full resync).
    #[arg(long, default_value_t = crate::controller::DEFAULT_CONCURRENCY)]
    max_concurrent_reconciles: u16,
}

/// Log output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Who may read `/metrics`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsAuthMode {
    /// Anyone who reaches the port.
    None,
    /// Bearer tokens reviewed by the API server (TokenReview, SubjectAccessReview).
    Kubernetes,
}

/// Errors of `run`.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--log-level` is not a valid filter.
    #[error("--log-level {level:?}")]
    LogLevel {
        /// The filter given.
        level: String,
        /// Cause.
        source: tracing_subscriber::filter::ParseError,
    },
    /// Logging was already set up (a bug).
    #[error("cannot set up logging")]
    Logging(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// `--no-controller` and `--no-webhooks` together.
    #[error("--no-controller and --no-webhooks leave nothing to run")]
    NothingToRun,
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The embedded distribution catalog is broken (a bug).
    #[error("the embedded distribution catalog")]
    Catalog(#[source] llama_stack_resolver::CatalogError),
    /// The `--image-overrides` file cannot be read.
    #[error("cannot read {path}")]
    ImageOverrides {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The `--registry-ca-file` cannot be read.
    #[error("cannot read the registry CA file {path}")]
    RegistryCa {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// No client for the Kubernetes API, with what needs it and how to run without it.
    #[error("cannot reach the Kubernetes API, {hint}")]
    Client {
        /// What needs the API in this run, and the flags that do without it.
        hint: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// The webhook certificates could not be made or injected.
    #[error("webhook certificates")]
    Certificates(#[source] crate::webhook::certs::CertError),
    /// The resolver could not be set up (its registry client).
    #[error("cannot set up the distribution resolver")]
    Resolver(#[source] llama_stack_resolver::ResolveError),
    /// The credential provider config is unusable.
    #[error(transparent)]
    CredentialProviders(#[from] llama_stack_resolver::credential_provider::ConfigError),
    /// The metrics server's certificate cannot be loaded.
    #[error("--metrics-tls-cert / --metrics-tls-key")]
    MetricsTls(#[source] crate::tls_files::TlsFilesError),
    /// The metrics and health server cannot listen.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
    /// The webhook server task ended abnormally.
    #[error("the webhook server stopped")]
    WebhookTask(#[source] tokio::task::JoinError),
    /// The webhook server failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

/// How long the webhooks wait for the operator ConfigMap's first read before they report ready:
/// a replica that has not read it yet would refuse names from its `image-overrides`.
const ADMISSION_SYNC_WAIT: Duration = Duration::from_secs(10);

/// How often the serving certificates' files are checked for changes.
fn cert_check_interval(args: &Args) -> Duration {
    Duration::from_secs(args.cert_check_interval.max(1))
}

/// The metrics server's TLS configuration, followed for changes, when it has a certificate.
async fn metrics_tls(args: &Args) -> Result<Option<RustlsConfig>, RunError> {
    let (Some(cert), Some(key)) = (&args.metrics_tls_cert, &args.metrics_tls_key) else {
        return Ok(None);
    };
    let config = tls_files::load(cert, key)
        .await
        .map_err(RunError::MetricsTls)?;
    let (cert, key, interval) = (cert.clone(), key.clone(), cert_check_interval(args));
    tokio::spawn(tls_files::follow(
        config.clone(),
        cert,
        key,
        interval,
        "metrics",
    ));
    Ok(Some(config))
}

fn init_logging(args: &Args) -> Result<(), RunError> {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level).map_err(|source| {
        RunError::LogLevel {
            level: args.log_level.clone(),
            source,
        }
    })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match args.log_format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    result.map_err(RunError::Logging)
}

/// SIGTERM (how Kubernetes stops a Pod) or Ctrl-C.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

fn catalog(args: &Args) -> Result<Catalog, RunError> {
    let mut catalog = Catalog::embedded().map_err(RunError::Catalog)?;
    if let Some(path) = &args.image_overrides {
        let text = std::fs::read_to_string(path).map_err(|source| RunError::ImageOverrides {
            path: path.clone(),
            source,
        })?;
        let (valid, problems) = parse_image_overrides(&text);
        for problem in problems {
            tracing::warn!(%problem, "image overrides");
        }
        catalog = catalog.with_overrides(&valid);
    }
    Ok(catalog)
}

/// Creates and rotates the webhook certificates (self-managed mode), now and then hourly.
async fn manage_certificates(args: &Args, api: kube::Client) -> Result<(), RunError> {
    let svc = &args.webhook_service;
    let ns = &args.namespace;
    let manager = CertManager {
        client: api,
        namespace: ns.clone(),
        secret_name: args.cert_secret.clone(),
        dns_names: vec![
            svc.clone(),
            format!("{svc}.{ns}"),
            format!("{svc}.{ns}.svc"),
            format!("{svc}.{ns}.svc.cluster.local"),
        ],
        crd_name: "llamastackdistributions.llamastack.io".to_owned(),
        webhook_configuration: args.webhook_configuration.clone(),
        cert_file: args.tls_cert.clone(),
        key_file: args.tls_key.clone(),
    };
    manager
        .reconcile(OffsetDateTime::now_utc())
        .await
        .map_err(RunError::Certificates)?;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            match manager.reconcile(OffsetDateTime::now_utc()).await {
                Ok(Plan::Keep) => {}
                Ok(plan) => tracing::info!(?plan, "webhook certificates"),
                Err(error) => tracing::warn!(%error, "webhook certificates"),
            }
        }
    });
    Ok(())
}

/// The controller until shutdown; with `--leader-elect`, only while holding the Lease.
async fn run_controller(args: &Args, api: kube::Client, ctx: Arc<Context>) -> Result<(), RunError> {
    let namespaces: Vec<String> = args
        .watch_namespaces
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    if !args.leader_elect {
        controller::run_in(ctx, &namespaces).await;
        return Ok(());
    }
    let identity = args.identity.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| format!("llama-stack-operator-{}", std::process::id()))
    });
    let config = LeaseConfig::new(&args.namespace, &args.lease_name, &identity);
    tracing::info!(lease = %args.lease_name, %identity, "waiting to lead");
    let work = || controller::run_in(ctx.clone(), &namespaces);
    run_while_leading(api, config, work, shutdown_signal()).await;
    Ok(())
}

/// Serves the webhooks until shutdown, reloading the certificate when its files change.
async fn run_webhooks(args: &Args, state: WebhookState, health: &Health) -> Result<(), RunError> {
    let (server, addr, task) = serve(
        args.webhook_addr,
        args.tls_cert.clone(),
        args.tls_key.clone(),
        state,
    )
    .await?;
    tracing::info!(%addr, "webhooks listening (/convert, /validate, /healthz)");
    health.set_ready();
    let shutdown = server.handle.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        shutdown.graceful_shutdown(Some(Duration::from_secs(10)));
    });
    let reload = tls_files::follow(
        server.tls.clone(),
        args.tls_cert.clone(),
        args.tls_key.clone(),
        cert_check_interval(args),
        "webhooks",
    );
    tokio::select! {
        result = task => result
            .map_err(RunError::WebhookTask)?
            .map_err(|source| RunError::from(ServeError::Serve { addr, source })),
        () = reload => Ok(()),
    }
}

pub(super) fn run(args: &Args) -> Result<(), RunError> {
    init_logging(args)?;
    if args.no_controller && args.no_webhooks {
        return Err(RunError::NothingToRun);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    runtime.block_on(run_async(args))
}

/// Starts the `/metrics`, `/healthz` and `/readyz` server with the scrape authentication and TLS
/// the flags ask for; the task serves until dropped.
async fn serve_metrics(
    args: &Args,
    api: Option<&kube::Client>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
) -> Result<tokio::task::JoinHandle<std::io::Result<()>>, RunError> {
    let auth = match (args.metrics_auth, api) {
        (MetricsAuthMode::None, _) => None,
        (MetricsAuthMode::Kubernetes, Some(api)) => Some(Arc::new(
            crate::metrics::auth::MetricsAuth::new(api.clone()),
        )),
        (MetricsAuthMode::Kubernetes, None) => Some(Arc::new(
            crate::metrics::auth::MetricsAuth::new(api_client(args).await?),
        )),
    };
    let tls = metrics_tls(args).await?;
    let https = tls.is_some();
    let (metrics_addr, task) =
        crate::metrics::server::serve(args.metrics_addr, metrics, health, auth, tls)
            .await
            .map_err(|source| RunError::Listen {
                addr: args.metrics_addr,
                source,
            })?;
    tracing::info!(addr = %metrics_addr, https, "metrics and health listening (/metrics, /healthz, /readyz)");
    Ok(task)
}

async fn run_async(args: &Args) -> Result<(), RunError> {
    let catalog = catalog(args)?;
    let api = if api_needs(args).is_empty() {
        None
    } else {
        Some(api_client(args).await?)
    };
    if let (true, Some(api)) = (args.self_managed_certs, api.clone()) {
        manage_certificates(args, api).await?;
    }
    let operator_image = operator_image(args, api.as_ref()).await;
    let ctx = controller_context(args, api.as_ref(), &catalog, operator_image)?;
    let metrics = ctx
        .as_ref()
        .map_or_else(|| Arc::new(Metrics::new(Arc::default())), |c| c.metrics());
    let health = Arc::new(Health::default());
    // The controller's watches, and the webhooks' watch of the operator ConfigMap.
    let metrics_watches = metrics.watches();
    if ctx.is_some() || (api.is_some() && !args.no_webhooks) {
        metrics_watches.set_stuck_after(Duration::from_secs(args.watch_stuck_after.max(1)));
        health.follow_watches(metrics_watches.clone());
    }
    let _metrics_task = serve_metrics(args, api.as_ref(), metrics, health.clone()).await?;

    let controller_runs = api.is_some() && ctx.is_some();
    let controller = async {
        match (&api, ctx) {
            (Some(api), Some(ctx)) => run_controller(args, api.clone(), ctx).await,
            _ => std::future::pending().await,
        }
    };
    let webhooks = async {
        if args.no_webhooks {
            health.set_ready();
            return std::future::pending().await;
        }
        let live = Arc::new(LiveCatalog::new(catalog.clone()));
        if let Some(api) = &api {
            // The controller, when it runs here, reports the ConfigMap's ignored entries.
            let report = args.no_controller;
            let follow = live.clone().follow(
                api.clone(),
                args.namespace.clone(),
                metrics_watches.clone(),
                report,
            );
            tokio::spawn(follow);
            if !live.synced(ADMISSION_SYNC_WAIT).await {
                tracing::warn!(
                    "admission: the operator ConfigMap was not read within {}s; names from its image-overrides are refused until it is",
                    ADMISSION_SYNC_WAIT.as_secs()
                );
            }
        }
        let client = if args.no_reference_checks {
            None
        } else {
            api.clone()
        };
        let state = WebhookState {
            catalog: live,
            client,
        };
        run_webhooks(args, state, &health).await
    };
    tracing::info!(
        controller = !args.no_controller,
        webhooks = !args.no_webhooks,
        "starting"
    );
    let halves = Halves {
        controller_runs,
        webhooks_run: !args.no_webhooks,
    };
    halves.run(controller, webhooks).await
}

/// A client for the Kubernetes API that names the operator and its version in every request's
/// User-Agent, so that audit logs and API Priority and Fairness can tell its requests apart.
/// What in this run needs the Kubernetes API, each with the flag that does without it.
fn api_needs(args: &Args) -> Vec<(&'static str, &'static str)> {
    let mut needs = Vec::new();
    if !args.no_controller {
        needs.push(("the controller", "--no-controller"));
    }
    if !args.no_webhooks && !args.no_reference_checks {
        needs.push((
            "admission's checks of referenced Secrets and ConfigMaps",
            "--no-reference-checks",
        ));
    }
    if args.self_managed_certs {
        needs.push((
            "--self-managed-certs",
            "--tls-cert/--tls-key in place of --self-managed-certs",
        ));
    }
    if args.metrics_auth == MetricsAuthMode::Kubernetes {
        needs.push(("--metrics-auth=kubernetes", "--metrics-auth=none"));
    }
    needs
}

/// The end of the "cannot reach the Kubernetes API" error: who needs it here, and what to pass
/// to run without a cluster.
fn api_hint(needs: &[(&str, &str)]) -> String {
    let who: Vec<&str> = needs.iter().map(|(who, _)| *who).collect();
    let fixes: Vec<&str> = needs.iter().map(|(_, fix)| *fix).collect();
    format!(
        "which {} need{}; to run without a cluster, use {}",
        who.join(" and "),
        if who.len() == 1 { "s" } else { "" },
        fixes.join(" and ")
    )
}

async fn api_client(args: &Args) -> Result<kube::Client, RunError> {
    let client_error = |source| RunError::Client {
        hint: api_hint(&api_needs(args)),
        source,
    };
    let mut config = kube::Config::infer()
        .await
        .map_err(|e| client_error(kube::Error::InferConfig(e)))?;
    let agent = concat!("llama-stack-operator/", env!("CARGO_PKG_VERSION"));
    config.headers.push((
        axum::http::header::USER_AGENT,
        axum::http::HeaderValue::from_static(agent),
    ));
    kube::Client::try_from(config).map_err(client_error)
}

/// The operator's own image: `--operator-image` when set, else the image of its own Pod
/// (`POD_NAME` in `--namespace`), which follows every edit of the Deployment's image.
async fn operator_image(args: &Args, api: Option<&kube::Client>) -> Option<String> {
    if let Some(image) = args.operator_image.clone().filter(|i| !i.is_empty()) {
        return Some(image);
    }
    let pod = std::env::var("POD_NAME").ok().filter(|p| !p.is_empty())?;
    let image = super::own_image::from_own_pod(api?, &args.namespace, &pod).await;
    if let Some(image) = &image {
        tracing::info!(%image, "the operator's own image, from its Pod");
    }
    image
}

/// The controller's context, when the controller runs.
fn controller_context(
    args: &Args,
    api: Option<&kube::Client>,
    catalog: &Catalog,
    operator_image: Option<String>,
) -> Result<Option<Arc<Context>>, RunError> {
    let (Some(api), false) = (api, args.no_controller) else {
        return Ok(None);
    };
    let mut options = ResolverOptions::new(catalog.clone());
    options.timeout = Duration::from_secs(args.registry_timeout.max(1));
    if let Some(path) = &args.registry_ca_file {
        let pem = read_ca_file(path).map_err(|source| RunError::RegistryCa {
            path: path.clone(),
            source,
        })?;
        options.extra_ca_pem = Some(pem);
    }
    options.credential_providers = args.credential_providers.load()?;
    let resolver = Resolver::new(options.clone()).map_err(RunError::Resolver)?;
    Ok(Some(Arc::new(
        Context::new(api.clone(), Arc::new(resolver))
            .with_operator_config(&args.namespace, options)
            .with_operator_image(operator_image)
            .with_concurrency(args.max_concurrent_reconciles),
    )))
}

/// Which halves of the process run.
struct Halves {
    controller_runs: bool,
    webhooks_run: bool,
}

impl Halves {
    /// Runs both until they stop. Both stop on SIGTERM. A failure ends the process at once; a
    /// clean stop of one waits for the other, so the controller can release its Lease before
    /// the process exits.
    async fn run(
        self,
        controller: impl Future<Output = Result<(), RunError>>,
        webhooks: impl Future<Output = Result<(), RunError>>,
    ) -> Result<(), RunError> {
        let mut controller = std::pin::pin!(controller);
        let mut webhooks = std::pin::pin!(webhooks);
        let (first, other_is_controller) = tokio::select! {
            result = &mut controller => (result, false),
            result = &mut webhooks => (result, true),
        };
        first?;
        let other_runs = if other_is_controller {
            self.controller_runs
        } else {
            self.webhooks_run
        };
        if !other_runs {
            return Ok(());
        }
        let grace = Duration::from_secs(15);
        let rest = if other_is_controller {
            tokio::time::timeout(grace, &mut controller).await
        } else {
            tokio::time::timeout(grace, &mut webhooks).await
        };
        rest.unwrap_or_else(|_| {
            tracing::warn!("shutdown: the other half did not stop within {grace:?}");
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Args, api_hint, api_needs};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn hint(flags: &[&str]) -> Option<String> {
        let cli = Cli::try_parse_from(std::iter::once("run").chain(flags.iter().copied()))
            .expect("valid flags");
        let needs = api_needs(&cli.args);
        (!needs.is_empty()).then(|| api_hint(&needs))
    }

    /// The hint names only what still needs the API, so following it never gives the same
    /// error again (it used to suggest --no-reference-checks to a run that already had it).
    #[test]
    fn the_hint_names_what_still_needs_the_api_and_following_it_needs_none() {
        let controller = hint(&["--no-reference-checks"]).expect("the controller needs it");
        assert_eq!(
            controller,
            "which the controller needs; to run without a cluster, use --no-controller"
        );
        let both = hint(&["--metrics-auth=kubernetes"]).expect("needed");
        assert!(
            both.contains("--no-controller")
                && both.contains("--no-reference-checks")
                && both.contains("--metrics-auth=none"),
            "{both}"
        );
        assert_eq!(hint(&["--no-controller", "--no-reference-checks"]), None);
        assert!(
            hint(&[
                "--no-controller",
                "--no-reference-checks",
                "--self-managed-certs"
            ])
            .is_some_and(|h| h.contains("in place of --self-managed-certs"))
        );
    }
}
