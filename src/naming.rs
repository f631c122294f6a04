//! The operator's naming contract: the names, labels, annotations, volumes and paths it gives
//! the objects of a stack, and that other parts find them by again (the watches' selectors,
//! pruning, the status, admission's checks). Each is spelt once here, since a typo in one place
//! would silently break another, and nothing here depends on the reconciler: admission and the
//! builders both read it. Pure; names are built from the stack's name (`cr`).

use crate::stack_config::env::UrlPart;

/// Label keys and values on every owned object.
pub mod labels {
    /// `app.kubernetes.io/name`: what runs ([`APP`]).
    pub const NAME: &str = "app.kubernetes.io/name";
    /// `app.kubernetes.io/instance`: the LlamaStackDistribution's name (Pods are mapped back to
    /// their resource by it).
    pub const INSTANCE: &str = "app.kubernetes.io/instance";
    /// `app.kubernetes.io/managed-by`: the operator (owned objects are watched by it).
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// `app.kubernetes.io/component`: which part of a stack an object is.
    pub const COMPONENT: &str = "app.kubernetes.io/component";
    /// The value of [`NAME`].
    pub const APP: &str = "llama-stack";
    /// On server Pods that install external providers: only those Pods are watched, since
    /// their init containers are the install steps the status reports.
    pub const EXTERNAL_PROVIDERS: &str = "llamastack.io/external-providers";
}

/// Volume names in the server Pod; mounts refer to them, so both sides use these.
pub mod volumes {
    /// The config ConfigMap (generated, or the user's).
    pub const CONFIG: &str = "config";
    /// The server's state: an emptyDir, or the PVC of `workload.storage`.
    pub const DATA: &str = "data";
    /// The managed CA bundle.
    pub const CA_BUNDLE: &str = "ca-bundle";
    /// The serving certificate Secret.
    pub const TLS: &str = "tls";
    /// The client certificate and key (`networking.tls.clientIdentity`).
    pub const CLIENT_IDENTITY: &str = "client-identity";
    /// The operator's tools, copied in by the first init container.
    pub const TOOLS: &str = "llso-tools";
    /// The staged provider wheels and metadata.
    pub const EXTERNAL_PROVIDERS: &str = "external-providers";
    /// The config with the external providers merged in.
    pub const MERGED_CONFIG: &str = "merged-config";
}

/// Annotation a user sets (to any new value, e.g. a timestamp) to have the tags of a stack
/// looked up again: `kubectl annotate llsd <name> llamastack.io/repin="$(date +%s)" --overwrite`.
pub const REPIN_ANNOTATION: &str = "llamastack.io/repin";
/// Field manager of every apply (and the value of [`labels::MANAGED_BY`]).
pub const FIELD_MANAGER: &str = "llama-stack-operator";
/// Field manager of the writes an `OGXServer`'s adoption makes to another stack's objects (the
/// old Deployment scaled to zero, a Service re-pointed). Apart from [`FIELD_MANAGER`] so that
/// the old stack's drift repair sees them as not its own: an adoption abandoned before the
/// volume was taken gives the old Deployment its replicas back with the old stack's next apply.
pub const ADOPTION_FIELD_MANAGER: &str = "llama-stack-operator-adoption";
/// Pod-template annotation carrying the generated config's hash (a change rolls the Pods).
pub const CONFIG_HASH: &str = "llamastack.io/config-hash";
/// Pod-template annotation carrying the hash of the referenced Secret values (a change rolls).
pub const SECRETS_HASH: &str = "llamastack.io/secrets-hash";
/// Pod-template annotation carrying the hash of the managed CA bundle (a change rolls).
pub const CA_BUNDLE_HASH: &str = "llamastack.io/ca-bundle-hash";
/// Annotation carrying the hash of everything the operator applied to an object.
pub const DESIRED_HASH: &str = "llamastack.io/desired-hash";

/// The name of the server's port, used by the probes, the Service and the Ingress.
pub const PORT_NAME: &str = "http";
/// The name of the server's metrics port (an `OGXServer`'s `monitoring`), on the container and
/// the Service, where a ServiceMonitor scrapes it.
pub const METRICS_PORT_NAME: &str = "metrics";

/// Where the config ConfigMap is mounted in the server container (where the upstream operator
/// mounted it, and where users' own commands name their config).
pub const CONFIG_DIR: &str = "/etc/llama-stack";
/// Where a generated config is mounted instead when the user mounts a volume of their own at
/// [`CONFIG_DIR`].
pub const MOVED_CONFIG_DIR: &str = "/etc/llama-stack-operator";
/// Key of the managed CA bundle ConfigMap (and the default key read from the user's).
pub const CA_BUNDLE_KEY: &str = "ca-bundle.crt";

/// What the Service's name adds to the stack's (admission keeps names short enough for it).
pub const SERVICE_SUFFIX: &str = "-service";

/// The `managed-by` value of an `OGXServer`'s objects (what an OGX ServiceMonitor selects).
pub const OGX_MANAGED_BY: &str = "ogx-operator";

/// The labels that select the server Pods of the stack `cr` (both doors: a Deployment's
/// selector cannot change, so a stack moved keeps it).
pub fn selector_labels(cr: &str) -> std::collections::BTreeMap<String, String> {
    std::collections::BTreeMap::from([
        (labels::NAME.to_owned(), labels::APP.to_owned()),
        (labels::INSTANCE.to_owned(), cr.to_owned()),
    ])
}

/// The label selector of everything the operator made for the stack named `cr`, through either
/// API (a stack moved from one to the other keeps its old revisions, which a rollback may need,
/// and its old ConfigMaps, which pruning removes).
pub fn owned_by_selector(cr: &str) -> String {
    format!(
        "{}={cr},{} in ({FIELD_MANAGER},{OGX_MANAGED_BY})",
        labels::INSTANCE,
        labels::MANAGED_BY
    )
}

/// A mount path as the container sees it: `/.llama/` and `/.llama` are one path.
pub fn mount_path(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() { "/" } else { trimmed }
}

/// The first 8 hex digits of a hash (`sha256:<hex>` or bare hex): the suffix of every object the
/// operator names by content (generated configs, CA bundles, derived Secrets).
pub fn short_hash(hash: &str) -> &str {
    let hex = hash.strip_prefix("sha256:").unwrap_or(hash);
    &hex[..8.min(hex.len())]
}

/// Name of the generated ConfigMap: `<cr>-config-<first 8 hex of the content hash>`. Hash-named
/// and immutable, so a rollout's old and new Pods each mount exactly the config they started with.
pub fn config_map_name(cr: &str, hash: &str) -> String {
    format!("{}{}", generated_config_map_prefix(cr), short_hash(hash))
}

/// What every generated ConfigMap of `cr` is named with (pruning finds the old ones by it).
pub fn generated_config_map_prefix(cr: &str) -> String {
    format!("{cr}-config-")
}

/// Name of the managed ConfigMap holding `pem`: `<cr>-ca-bundle-<first 8 hex of its hash>`.
/// Named by content, as the generated config is, so a revision's Pods mount the bundle they
/// started with, and a rollback to the last Ready revision returns to its bundle too.
pub fn ca_bundle_name(cr: &str, pem: &str) -> String {
    let hash = llama_stack_resolver::sha256_hex(pem.as_bytes());
    format!("{}-{}", ca_bundle_prefix(cr), short_hash(&hash))
}

/// What every managed CA bundle of `cr` is named with (pruning finds the old ones by it; the
/// bundle of operators before content naming was `<cr>-ca-bundle`, which it also starts).
pub fn ca_bundle_prefix(cr: &str) -> String {
    format!("{cr}-ca-bundle")
}

/// Name of the derived Secret of the Secret values hashed to `secrets_hash` (the Pod
/// template's [`SECRETS_HASH`], salted with the stack's uid): `<cr>-derived-<first 8 hex of
/// it>`. A revision's Pods read the parts they started with, and a rollback to the last Ready
/// revision returns to its connection string too. The name tells no more than the annotation
/// already does.
pub fn derived_secret_name(cr: &str, secrets_hash: &str) -> String {
    format!("{}-{}", derived_secret_prefix(cr), short_hash(secrets_hash))
}

/// What every derived Secret of `cr` is named with (pruning finds the old ones by it; the Secret
/// of operators before content naming was `<cr>-derived`, which it also starts).
pub fn derived_secret_prefix(cr: &str) -> String {
    format!("{cr}-derived")
}

/// The key of one part of the SQL store's connection string in the derived Secret.
pub fn derived_secret_key(part: UrlPart) -> String {
    let part = serde_json::to_value(part)
        .ok()
        .and_then(|p| p.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!("storage-sql-{part}")
}

/// Whether `value` is an RFC 1123 label (1 to 63 lowercase letters, digits and '-', starting
/// and ending with a letter or digit): a name of most objects, and of a provider's init container.
pub fn is_dns_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && bytes.iter().all(|b| inner(b) || *b == b'-')
        && bytes.first().is_some_and(inner)
        && bytes.last().is_some_and(inner)
}

/// Name of the data PVC.
pub fn pvc_name(cr: &str) -> String {
    format!("{cr}-pvc")
}

/// Name of the operator-managed ServiceAccount (made unless the user names their own).
pub fn managed_service_account_name(cr: &str) -> String {
    format!("{cr}-sa")
}

/// Name of the Service.
pub fn service_name(cr: &str) -> String {
    format!("{cr}{SERVICE_SUFFIX}")
}

/// Name of the NetworkPolicy.
pub fn network_policy_name(cr: &str) -> String {
    format!("{cr}-network-policy")
}

/// Name of the Ingress (and of the Route).
pub fn ingress_name(cr: &str) -> String {
    format!("{cr}-ingress")
}

/// Name of the HorizontalPodAutoscaler.
pub fn hpa_name(cr: &str) -> String {
    format!("{cr}-hpa")
}

/// Name of the PodDisruptionBudget.
pub fn pdb_name(cr: &str) -> String {
    format!("{cr}-pdb")
}

/// Name of the ServiceMonitor (an `OGXServer`'s `monitoring`).
pub fn service_monitor_name(cr: &str) -> String {
    format!("{cr}-service-monitor")
}

/// Name of the PrometheusRule (an `OGXServer`'s `monitoring`).
pub fn prometheus_rule_name(cr: &str) -> String {
    format!("{cr}-prometheus-rules")
}
