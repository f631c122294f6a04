//! Names the builders give and other parts look up again (watch selectors, status, pruning).
//! Each is spelt once here, because a typo in one place would silently break the other.

use crate::controller::stack::Stack;

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
    /// The operator's tools, copied in by the first init container.
    pub const TOOLS: &str = "llso-tools";
    /// The staged provider wheels and metadata.
    pub const EXTERNAL_PROVIDERS: &str = "external-providers";
    /// The config with the external providers merged in.
    pub const MERGED_CONFIG: &str = "merged-config";
}

/// The name of the server's port, used by the probes, the Service and the Ingress.
pub const PORT_NAME: &str = "http";

/// Where the config ConfigMap is mounted in the server container (where the upstream operator
/// mounted it, and where users' own commands name their config).
pub const CONFIG_DIR: &str = "/etc/llama-stack";
/// Where a generated config is mounted instead when the user mounts a volume of their own at
/// [`CONFIG_DIR`].
pub const MOVED_CONFIG_DIR: &str = "/etc/llama-stack-operator";
/// How long a stopping server keeps serving before it is signalled (the `preStop` sleep, a
/// native action since Kubernetes 1.30), while the Service's endpoints update everywhere.
pub const PRE_STOP_SECONDS: i64 = 5;
/// The server container's command unless the user gives one: `llama stack run` on the config in
/// `LLAMA_STACK_CONFIG` (Kubernetes expands `$(VAR)` from the container's environment), on the
/// port in `LLAMA_STACK_PORT`.
pub const SERVER_COMMAND: [&str; 4] = ["llama", "stack", "run", "$(LLAMA_STACK_CONFIG)"];

/// Name of the generated ConfigMap: `<cr>-config-<first 8 hex of the content hash>`. Hash-named
/// and immutable, so a rollout's old and new Pods each mount exactly the config they started with.
pub fn config_map_name(cr: &str, hash: &str) -> String {
    format!("{}{}", generated_config_map_prefix(cr), short_hash(hash))
}

/// The first 8 hex digits of a hash (`sha256:<hex>` or bare hex): the suffix of every object the
/// operator names by content (generated configs, CA bundles, derived Secrets).
pub fn short_hash(hash: &str) -> &str {
    let hex = hash.strip_prefix("sha256:").unwrap_or(hash);
    &hex[..8.min(hex.len())]
}

/// What every generated ConfigMap of `cr` is named with (pruning finds the old ones by it).
pub fn generated_config_map_prefix(cr: &str) -> String {
    format!("{cr}-config-")
}

/// Name of the data PVC.
pub fn pvc_name(stack: &Stack) -> String {
    format!("{}-pvc", stack.name)
}

/// Name of the operator-managed ServiceAccount (made unless the user names their own).
pub fn managed_service_account_name(stack: &Stack) -> String {
    format!("{}-sa", stack.name)
}

/// The ServiceAccount the server Pods run as: the user's, else the operator-managed one.
pub fn service_account_name(stack: &Stack) -> String {
    stack
        .user_service_account()
        .map_or_else(|| managed_service_account_name(stack), str::to_owned)
}
