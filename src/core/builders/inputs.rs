//! What the builders need besides the resource itself.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use llama_stack_resolver::server_line::ServerRelease;

use crate::stack_config::GeneratedConfig;

/// What the builders need besides the resource itself.
#[derive(Clone, Debug, Default)]
pub struct Inputs<'a> {
    /// Digest-pinned (or catalog) image of the server.
    pub image: &'a str,
    /// The server that image runs (how it is started, its variables, its state directory).
    pub server: ServerRelease,
    /// The generated config (or the user's, for `overrideConfig`).
    pub generated: Option<&'a GeneratedConfig>,
    /// Which config the server runs and how it reaches the container.
    pub config: ServerConfig,
    /// Validated PEM certificates of the managed CA bundle.
    pub ca_bundle: Option<&'a str>,
    /// Hash of the referenced Secret values (rolls the Pods when a value changes).
    pub secrets_hash: Option<&'a str>,
    /// Pull secrets of the namespace's default ServiceAccount, given to the server's own.
    pub pull_secrets: &'a [String],
    /// Namespace of the operator (allowed by the NetworkPolicy).
    pub operator_namespace: Option<&'a str>,
    /// Whether the cluster serves OpenShift Routes (exposure by Route instead of Ingress).
    pub routes_available: bool,
    /// Whether the cluster serves the Prometheus Operator's ServiceMonitor and PrometheusRule.
    pub monitoring_available: bool,
    /// The operator's own image (its static binary runs the external-provider steps).
    pub operator_image: &'a str,
    /// The selector of a Deployment of the same name that already exists (immutable): kept, and
    /// its labels put on the Pods, so one made by the upstream operator is taken over in place.
    pub existing_selector: Option<&'a BTreeMap<String, String>>,
    /// The parts of connection strings the server reads from the `<name>-derived` Secret.
    pub derived: Option<&'a BTreeMap<String, ByteString>>,
}

/// Which config the server runs, and how it reaches the server container: the one type the
/// plan decides, the builders build from, the status reports and `render` shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServerConfig {
    /// The generated, hash-named ConfigMap of this name (created and pruned by the operator),
    /// key `config.yaml`.
    Generated(String),
    /// The user's ConfigMap (`overrideConfig`, v1alpha1 `userConfig`), mounted whole (as the
    /// upstream operator did); the server runs its key `key`.
    User {
        /// The ConfigMap.
        config_map: String,
        /// The key holding the config: `config.yaml`, `run.yaml` or the only key.
        key: String,
    },
    /// The image's own config and entrypoint: no config is mounted and no command set.
    #[default]
    Image,
}

impl ServerConfig {
    /// The ConfigMap the Pods mount, if any.
    pub fn config_map(&self) -> Option<&str> {
        match self {
            Self::Generated(name)
            | Self::User {
                config_map: name, ..
            } => Some(name),
            Self::Image => None,
        }
    }

    /// The file name of the config inside the mounted ConfigMap.
    pub fn key(&self) -> &str {
        match self {
            Self::User { key, .. } => key,
            Self::Generated(_) | Self::Image => "config.yaml",
        }
    }
}
