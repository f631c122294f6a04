//! A kubelet credential provider plugin of the tests' own (a shell script) and the kubelet
//! config naming it: it logs each request, then gives `user:password` for `registry`, or fails
//! with a message on stderr, as its config's `env` says.

use std::path::{Path, PathBuf};

const PLUGIN: &str = r#"#!/bin/sh
read -r request || true
echo "$request" >> "$REQUEST_LOG"
if [ "$MODE" = fail ]; then
  echo "token service unreachable" >&2
  exit 1
fi
printf '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"%s","auth":{"%s":{"username":"%s","password":"%s"}}}' "$CACHE" "$REGISTRY" "$PLUGIN_USER" "$PLUGIN_PASSWORD"
"#;

/// The plugin's name (its executable's).
pub const NAME: &str = "test-credential-provider";

/// An installed plugin.
pub struct Installed {
    /// kubelet's `--image-credential-provider-config`.
    pub config: PathBuf,
    /// kubelet's `--image-credential-provider-bin-dir`.
    pub bin_dir: PathBuf,
    /// One line per request the plugin answered.
    pub log: PathBuf,
}

impl Installed {
    /// Requests the plugin got.
    pub fn requests(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }
}

/// Installs the plugin under `dir`: `mode` is `answer` or `fail`; `cache` its `cacheDuration`.
pub fn install(
    dir: &Path,
    registry: &str,
    user: &str,
    password: &str,
    mode: &str,
    cache: &str,
) -> std::io::Result<Installed> {
    use std::os::unix::fs::PermissionsExt;
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir)?;
    let plugin = bin_dir.join(NAME);
    std::fs::write(&plugin, PLUGIN)?;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755))?;
    let log = dir.join("requests.log");
    let config = dir.join("credential-providers.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: {NAME}\n    matchImages: ['{registry}']\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    env:\n      - {{name: REQUEST_LOG, value: '{}'}}\n      - {{name: MODE, value: {mode}}}\n      - {{name: CACHE, value: '{cache}'}}\n      - {{name: REGISTRY, value: '{registry}'}}\n      - {{name: PLUGIN_USER, value: '{user}'}}\n      - {{name: PLUGIN_PASSWORD, value: '{password}'}}\n",
            log.display()
        ),
    )?;
    Ok(Installed {
        config,
        bin_dir,
        log,
    })
}
