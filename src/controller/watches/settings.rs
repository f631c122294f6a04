//! The operator's own settings (the operator ConfigMap, the OGX operator ConfigMap's
//! `image-overrides`, and the Secrets holding the signature policy's keys): read before the
//! first reconcile, then followed.
//!
//! No stack is reconciled on settings the operator has not read. At every start and every
//! leader change, [`Settings::read`] waits for both ConfigMaps' first lists (an absent ConfigMap
//! is read as empty: the defaults) and for every key Secret the policy names, and builds the
//! resolver from them; only then do the controllers start. While it cannot read them it
//! reconciles nothing and says so: a warning per failed attempt, `llso_settings_loaded` 0, and the
//! failing read in `/healthz` and `/readyz` once it has failed for longer than the watch bound.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use llama_stack_resolver::Catalog;
use llama_stack_resolver::{Resolver, ResolverOptions};
use tokio::sync::mpsc;

use crate::controller::context::Context;
use crate::metrics::WatchId;
use crate::operator_config::{self, KeySecrets, stream::operator_config_data};

/// How the failing read of a key Secret is named in the watch health and metrics.
const KEY_SECRETS: &str = "Secret (signature keys)";
/// How often the Secrets holding the signature policy's keys are read again (a rotated key is
/// used within this time; the ConfigMap itself is watched).
const KEY_REFRESH: Duration = Duration::from_secs(60);
/// Between two attempts to read a key Secret before the first reconcile.
const FIRST_READ_RETRY: Duration = Duration::from_secs(2);

type Changes = Pin<Box<dyn Stream<Item = BTreeMap<String, String>> + Send>>;

/// The settings read so far and the watch that brings their changes.
pub(in crate::controller) struct Settings {
    ctx: Arc<Context>,
    namespace: String,
    base: ResolverOptions,
    embedded: Catalog,
    changes: Changes,
    data: BTreeMap<String, String>,
    secrets: KeySecrets,
}

impl Settings {
    /// The key Secrets' reads, as the watch health names them.
    fn key_secrets(&self) -> WatchId {
        WatchId::of(KEY_SECRETS).within(Some(&self.namespace))
    }

    /// Waits until the ConfigMap and every key Secret it names are read and a resolver is built
    /// from them, and puts that resolver in `ctx`. Never gives up and never falls back to running
    /// without them: a start without its settings could deploy an image the overrides, mirrors or
    /// signature policy rule out.
    pub(in crate::controller) async fn read(
        ctx: Arc<Context>,
        namespace: String,
        base: ResolverOptions,
    ) -> Self {
        ctx.metrics.settings_loaded(false);
        let embedded = base.catalog.clone();
        let changes: Changes = Box::pin(operator_config_data(
            &ctx.client,
            &namespace,
            ["ConfigMap (operator)", "ConfigMap (OGX operator)"],
            ctx.metrics.watches(),
        ));
        let mut settings = Self {
            ctx,
            namespace,
            base,
            embedded,
            changes,
            data: BTreeMap::new(),
            secrets: KeySecrets::new(),
        };
        let Some(first) = settings.changes.next().await else {
            return std::future::pending().await;
        };
        settings.data = first;
        loop {
            let read = read_key_secrets_strictly(
                &settings.ctx.client,
                &settings.namespace,
                &settings.data,
            )
            .await;
            match read {
                Ok(secrets) => {
                    settings.secrets = secrets;
                    if settings.apply() {
                        break;
                    }
                    // Settings that build no resolver: wait for the ConfigMap to change.
                    let Some(changed) = settings.changes.next().await else {
                        return std::future::pending().await;
                    };
                    settings.data = changed;
                }
                Err(problem) => {
                    tracing::warn!(%problem, "cannot read the operator's settings; reconciling nothing until they are read");
                    settings
                        .ctx
                        .metrics
                        .watches()
                        .failed(&settings.key_secrets(), &problem);
                    // A fixed ConfigMap (naming another Secret) is taken as soon as it comes.
                    tokio::select! {
                        changed = settings.changes.next() => {
                            let Some(changed) = changed else {
                                return std::future::pending().await;
                            };
                            settings.data = changed;
                        }
                        () = tokio::time::sleep(FIRST_READ_RETRY) => {}
                    }
                }
            }
        }
        settings
            .ctx
            .metrics
            .watches()
            .succeeded(&settings.key_secrets(), false);
        settings.ctx.metrics.settings_loaded(true);
        tracing::info!(namespace = %settings.namespace, "operator settings read");
        settings
    }

    /// Follows the settings: on every change of the ConfigMap, and when a key Secret changes,
    /// rebuilds the resolver and asks every controller (`triggers`) to reconcile all stacks (a
    /// changed image-override rolls image and config together).
    pub(in crate::controller) async fn follow(mut self, triggers: Vec<mpsc::Sender<()>>) {
        let mut refresh = tokio::time::interval(KEY_REFRESH);
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        refresh.tick().await;
        loop {
            tokio::select! {
                next = self.changes.next() => {
                    let Some(changed) = next else { break };
                    self.secrets =
                        read_key_secrets(&self.ctx.client, &self.namespace, &changed, &self.secrets)
                            .await;
                    self.data = changed;
                }
                _ = refresh.tick() => {
                    let fresh =
                        read_key_secrets(&self.ctx.client, &self.namespace, &self.data, &self.secrets)
                            .await;
                    if fresh == self.secrets {
                        continue;
                    }
                    self.secrets = fresh;
                }
            }
            if self.apply() {
                for trigger in &triggers {
                    let _ = trigger.try_send(());
                }
            }
        }
    }

    /// Builds the resolver from the current settings and puts it in the context; false (and the
    /// previous resolver kept) when they build none.
    fn apply(&self) -> bool {
        let (options, problems) = operator_config::resolver_options(
            &self.base,
            &self.embedded,
            &self.data,
            &self.secrets,
        );
        for problem in &problems {
            tracing::warn!(problem = %problem, "operator ConfigMap");
        }
        match Resolver::new(options) {
            Ok(resolver) => {
                self.ctx.replace_resolver(resolver);
                true
            }
            Err(error) => {
                tracing::warn!(%error, "operator ConfigMap: keeping the previous settings");
                false
            }
        }
    }
}

/// Every key Secret `data` names, from `namespace`; the first that cannot be read fails the
/// whole read.
async fn read_key_secrets_strictly(
    client: &kube::Client,
    namespace: &str,
    data: &BTreeMap<String, String>,
) -> Result<KeySecrets, String> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut secrets = KeySecrets::new();
    for name in operator_config::key_secret_names(data) {
        let value = read_key_secret(&api, &name).await.map_err(|error| {
            format!("Secret {namespace}/{name}: {}", crate::error_chain(&error))
        })?;
        secrets.insert(name, value);
    }
    Ok(secrets)
}

/// The key Secrets `data` names. A read that fails keeps what `previous` had for that Secret
/// (an API hiccup must not drop a key).
async fn read_key_secrets(
    client: &kube::Client,
    namespace: &str,
    data: &BTreeMap<String, String>,
    previous: &KeySecrets,
) -> KeySecrets {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut secrets = KeySecrets::new();
    for name in operator_config::key_secret_names(data) {
        let value = match read_key_secret(&api, &name).await {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(secret = %name, error = %crate::error_chain(&error), "cannot read a signature key Secret; keeping what was read before");
                previous.get(&name).cloned().flatten()
            }
        };
        secrets.insert(name, value);
    }
    secrets
}

/// One key Secret's data; `None` when it does not exist.
async fn read_key_secret(
    api: &Api<Secret>,
    name: &str,
) -> Result<Option<BTreeMap<String, Vec<u8>>>, kube::Error> {
    Ok(api.get_opt(name).await?.map(|secret| {
        secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect()
    }))
}
