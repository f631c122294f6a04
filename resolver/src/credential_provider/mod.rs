//! kubelet credential provider plugins: the registry credentials a node gets from the executables
//! named in kubelet's `--image-credential-provider-config` (ECR, GCR, ACR and others), obtained
//! here the way kubelet obtains them, so that an image only node credentials reach resolves too.
//!
//! - Only the executables of the administrator's config, in the administrator's bin directory,
//!   run; an image reference (from a user's object) is only ever the request's `image` field.
//! - A plugin is asked only about images one of its `matchImages` matches, with a
//!   `CredentialProviderRequest` on stdin, its `args`, and the operator's environment plus its
//!   `env`; it has one minute; its answer is read strictly and within bounds.
//! - Answers are cached by the response's `cacheKeyType` (the image, its registry, or global) for
//!   `cacheDuration` (default: the provider's `defaultCacheDuration`; 0: not cached); one plugin
//!   run at a time per provider, so concurrent requests share an answer.
//! - Their credentials come after the Pod's pull secrets, as kubelet orders them.

pub mod config;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use config::{ConfigError, Provider};

use crate::keyring::{Credential, CredentialSource, Keyring, urls_match};

/// How long a plugin may run, as kubelet allows.
const PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer read from a plugin.
const MAX_RESPONSE_BYTES: u64 = 1 << 20;
/// The part of a failing plugin's stderr read for the message; the rest is drained unread, so a
/// chatty plugin never blocks on a full pipe.
const MAX_STDERR_BYTES: u64 = 2 << 10;
/// The part of that stderr the failure message carries (its first line, at most this many
/// characters): enough to say why, little enough for a status.
const MAX_STDERR_SHOWN: usize = 200;
/// How long a plugin's failure is remembered for an image: every reconcile of the images it
/// matches would otherwise run it again (up to its 60 s timeout each, one run at a time).
const FAILURE_TTL: Duration = Duration::from_secs(10);

/// A plugin that gave no credentials, and why (shown with a registry refusal).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("credential provider {provider} failed: {detail}")]
pub struct ProviderFailure {
    /// The plugin's name.
    pub provider: String,
    /// What went wrong (exit status and stderr, a timeout, a bad answer).
    pub detail: String,
}

struct Cached {
    /// The credentials, or why the plugin gave none (kept for [`FAILURE_TTL`]).
    answer: Result<Keyring, String>,
    expires: Instant,
}

struct Plugin {
    provider: Provider,
    /// Answers by cache key (the image, its registry, or `global`); one run at a time.
    cache: tokio::sync::Mutex<HashMap<String, Cached>>,
}

/// The configured plugins and their answers. Shared by every resolver built from the same
/// options, so that a change of the operator ConfigMap keeps the cached credentials.
pub struct CredentialProviders {
    plugins: Vec<Plugin>,
}

impl std::fmt::Debug for CredentialProviders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.plugins.iter().map(|p| &p.provider.name))
            .finish()
    }
}

/// The response, read strictly (as kubelet's codec reads it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Response {
    api_version: String,
    kind: String,
    cache_key_type: String,
    #[serde(default)]
    cache_duration: Option<String>,
    #[serde(default)]
    auth: Option<std::collections::BTreeMap<String, AuthConfig>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthConfig {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

impl CredentialProviders {
    /// The plugins of kubelet's config file, executables in `bin_dir`.
    pub fn load(config: &Path, bin_dir: &Path) -> Result<Self, ConfigError> {
        Ok(Self::new(config::load(config, bin_dir)?))
    }

    /// Plugins from validated providers.
    pub fn new(providers: Vec<Provider>) -> Self {
        Self {
            plugins: providers
                .into_iter()
                .map(|provider| Plugin {
                    provider,
                    cache: tokio::sync::Mutex::new(HashMap::new()),
                })
                .collect(),
        }
    }

    /// The credentials the plugins give for an image repository (`registry/repository`), in
    /// config order, and the plugins that failed.
    pub async fn keyring_for(&self, image: &str) -> (Keyring, Vec<ProviderFailure>) {
        let mut keyring = Keyring::default();
        let mut failures = Vec::new();
        for plugin in &self.plugins {
            if !plugin
                .provider
                .match_images
                .iter()
                .any(|m| urls_match(m, image))
            {
                continue;
            }
            match plugin.credentials(image).await {
                Ok(found) => keyring.extend(&found),
                Err(detail) => failures.push(ProviderFailure {
                    provider: plugin.provider.name.clone(),
                    detail,
                }),
            }
        }
        (keyring, failures)
    }
}

/// Spawns, retrying briefly while the executable is still open for writing elsewhere (ETXTBSY:
/// a file just installed, while another thread forks).
async fn spawn(command: &mut tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    const TEXT_FILE_BUSY: i32 = 26;
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Err(e) if e.raw_os_error() == Some(TEXT_FILE_BUSY) && attempts < 20 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            other => return other,
        }
    }
}

/// The registry part of an image repository (kubelet's `Registry` cache key).
fn registry_of(image: &str) -> &str {
    image.split('/').next().unwrap_or(image)
}

impl Plugin {
    async fn credentials(&self, image: &str) -> Result<Keyring, String> {
        let mut cache = self.cache.lock().await;
        let now = Instant::now();
        cache.retain(|_, c| c.expires > now);
        for key in [image, registry_of(image), "global"] {
            if let Some(hit) = cache.get(key) {
                return hit.answer.clone();
            }
        }
        let answer = match self.run(image).await {
            Ok(response) => self.read(image, &response),
            Err(detail) => Err(detail),
        };
        match answer {
            Ok((keyring, key, duration)) => {
                if !duration.is_zero() {
                    cache.insert(
                        key,
                        Cached {
                            answer: Ok(keyring.clone()),
                            expires: now + duration,
                        },
                    );
                }
                Ok(keyring)
            }
            Err(detail) => {
                cache.insert(
                    image.to_owned(),
                    Cached {
                        answer: Err(detail.clone()),
                        expires: Instant::now() + FAILURE_TTL,
                    },
                );
                Err(detail)
            }
        }
    }

    /// Runs the executable with the request on stdin; its stdout, or why there is none.
    async fn run(&self, image: &str) -> Result<Vec<u8>, String> {
        let p = &self.provider;
        let request = serde_json::json!({
            "apiVersion": p.api_version,
            "kind": "CredentialProviderRequest",
            "image": image,
        });
        let mut command = tokio::process::Command::new(&p.path);
        command
            .args(&p.args)
            .envs(p.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = spawn(&mut command)
            .await
            .map_err(|e| format!("cannot run {}: {e}", p.path.display()))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let mut stdout = child.stdout.take().ok_or("no stdout")?;
        let mut stderr = child.stderr.take().ok_or("no stderr")?;
        let talk = async {
            // A plugin that does not read its request must not block the answer.
            let write = async {
                let _ = stdin.write_all(request.to_string().as_bytes()).await;
                drop(stdin);
            };
            let mut out = Vec::new();
            let mut err = Vec::new();
            let mut limited_out = (&mut stdout).take(MAX_RESPONSE_BYTES + 1);
            let read_out = limited_out.read_to_end(&mut out);
            let read_err = async {
                let _ = (&mut stderr)
                    .take(MAX_STDERR_BYTES)
                    .read_to_end(&mut err)
                    .await;
                let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
            };
            let (_, out_result, ()) = tokio::join!(write, read_out, read_err);
            out_result.map_err(|e| format!("reading its answer failed: {e}"))?;
            let status = child
                .wait()
                .await
                .map_err(|e| format!("waiting for it failed: {e}"))?;
            Ok::<_, String>((status, out, err))
        };
        let (status, out, err) = tokio::time::timeout(PLUGIN_TIMEOUT, talk)
            .await
            .map_err(|_| format!("no answer within {}s", PLUGIN_TIMEOUT.as_secs()))??;
        if !status.success() {
            return Err(format!("{status}: {}", shown_stderr(&err)));
        }
        if out.len() as u64 > MAX_RESPONSE_BYTES {
            return Err(format!(
                "its answer is larger than {MAX_RESPONSE_BYTES} bytes"
            ));
        }
        Ok(out)
    }

    /// The credentials of an answer, its cache key and how long it is kept.
    fn read(&self, image: &str, bytes: &[u8]) -> Result<(Keyring, String, Duration), String> {
        let p = &self.provider;
        let response: Response = serde_json::from_slice(bytes)
            .map_err(|e| format!("its answer is not a CredentialProviderResponse: {e}"))?;
        if response.api_version != p.api_version || response.kind != "CredentialProviderResponse" {
            return Err(format!(
                "it answered {}/{}, not {}/CredentialProviderResponse",
                response.api_version, response.kind, p.api_version
            ));
        }
        let key = match response.cache_key_type.as_str() {
            "Image" => image.to_owned(),
            "Registry" => registry_of(image).to_owned(),
            "Global" => "global".to_owned(),
            other => {
                return Err(format!(
                    "cacheKeyType {other:?} is not Image, Registry or Global"
                ));
            }
        };
        let duration = match &response.cache_duration {
            Some(text) => config::go_duration(text).map_err(|e| format!("cacheDuration: {e}"))?,
            None => p.default_cache_duration,
        };
        let mut keyring = Keyring::default();
        for (pattern, auth) in response.auth.unwrap_or_default() {
            let credential = Credential {
                username: auth.username,
                password: auth.password,
                source: CredentialSource {
                    namespace: String::new(),
                    name: format!("credential provider {}", p.name),
                },
            };
            if !keyring.add(&pattern, credential) {
                return Err(format!("its auth key {pattern:?} is not an image pattern"));
            }
        }
        Ok((keyring, key, duration))
    }
}

/// What a failure message says of a plugin's stderr: its first non-empty line, bounded.
fn shown_stderr(err: &[u8]) -> String {
    let text = String::from_utf8_lossy(err);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    match line.char_indices().nth(MAX_STDERR_SHOWN) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(script: &str, dir: &Path) -> CredentialProviders {
        let path = dir.join("test-provider");
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        CredentialProviders::new(vec![Provider {
            name: "test-provider".into(),
            path,
            match_images: vec!["*.corp".into(), "registry.corp:5000/team".into()],
            default_cache_duration: Duration::from_secs(60),
            api_version: "credentialprovider.kubelet.k8s.io/v1".into(),
            args: vec!["--flag".into()],
            env: vec![("ANSWER_USER".into(), "robot".into())],
        }])
    }

    const ANSWER: &str = r#"#!/bin/sh
read request
echo "$request $*" >> "$(dirname "$0")/requests"
printf '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","auth":{"*.corp":{"username":"%s","password":"s3cret"}}}' "$ANSWER_USER"
"#;

    fn requests(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("requests"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[tokio::test]
    async fn a_plugin_is_asked_as_kubelet_asks_and_its_answer_cached() {
        let dir = tempfile::tempdir().unwrap();
        let providers = plugin(ANSWER, dir.path());
        let (keyring, failures) = providers
            .keyring_for("mirror.corp/llamastack/starter")
            .await;
        assert!(failures.is_empty(), "{failures:?}");
        let creds = keyring.lookup("mirror.corp/llamastack/starter");
        assert_eq!(creds.len(), 1);
        assert_eq!(
            (creds[0].username.as_str(), creds[0].password.as_str()),
            ("robot", "s3cret")
        );
        assert_eq!(
            creds[0].source.to_string(),
            "credential provider test-provider"
        );
        let asked = requests(dir.path());
        assert_eq!(asked.len(), 1);
        assert!(
            asked[0].contains(r#""image":"mirror.corp/llamastack/starter""#)
                && asked[0].contains("CredentialProviderRequest")
                && asked[0].ends_with(" --flag"),
            "{asked:?}"
        );
        // Cached by registry: another repository of it asks nothing.
        providers.keyring_for("mirror.corp/other/image").await;
        assert_eq!(requests(dir.path()).len(), 1);
        // Not matched by matchImages: not asked; a path-limited pattern matches below its path.
        let (unmatched, _) = providers.keyring_for("quay.io/x/y").await;
        assert!(unmatched.is_empty());
        assert_eq!(requests(dir.path()).len(), 1);
        providers.keyring_for("registry.corp:5000/team/app").await;
        assert_eq!(requests(dir.path()).len(), 2, "a new registry key");
    }

    #[tokio::test]
    async fn a_zero_cache_duration_asks_every_time() {
        let dir = tempfile::tempdir().unwrap();
        let providers = plugin(
            &ANSWER.replace(
                r#""cacheKeyType":"Registry","#,
                r#""cacheKeyType":"Image","cacheDuration":"0s","#,
            ),
            dir.path(),
        );
        for _ in 0..3 {
            providers.keyring_for("mirror.corp/a").await;
        }
        assert_eq!(requests(dir.path()).len(), 3);
    }

    #[tokio::test]
    async fn failures_are_named_and_bad_answers_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "#!/bin/sh\necho 'token service unreachable' >&2\nexit 3\n",
                "exit status: 3: token service unreachable",
            ),
            (
                "#!/bin/sh\necho '{\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1beta1\",\"kind\":\"CredentialProviderResponse\",\"cacheKeyType\":\"Image\"}'\n",
                "not credentialprovider.kubelet.k8s.io/v1/",
            ),
            (
                "#!/bin/sh\necho '{\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"kind\":\"CredentialProviderResponse\",\"cacheKeyType\":\"Node\"}'\n",
                "cacheKeyType \"Node\"",
            ),
            (
                "#!/bin/sh\necho '{\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"kind\":\"CredentialProviderResponse\",\"cacheKeyType\":\"Image\",\"extra\":1}'\n",
                "not a CredentialProviderResponse",
            ),
            (
                "#!/bin/sh\necho not json\n",
                "not a CredentialProviderResponse",
            ),
        ];
        for (script, wanted) in cases {
            let providers = plugin(script, dir.path());
            let (keyring, failures) = providers.keyring_for("a.corp/x").await;
            assert!(keyring.is_empty());
            assert_eq!(failures.len(), 1);
            let text = failures[0].to_string();
            assert!(
                text.starts_with("credential provider test-provider failed: ")
                    && text.contains(wanted),
                "{wanted:?} not in {text}"
            );
        }
    }

    /// A failing plugin runs once per image within the failure's time, not on every resolve.
    #[tokio::test]
    async fn a_failure_is_remembered_briefly() {
        let dir = tempfile::tempdir().unwrap();
        let script = "#!/bin/sh\necho run >> \"$(dirname \"$0\")/requests\"\necho 'token service down' >&2\nexit 1\n";
        let providers = plugin(script, dir.path());
        for _ in 0..3 {
            let (_, failures) = providers.keyring_for("a.corp/x").await;
            assert_eq!(failures.len(), 1);
            assert!(
                failures[0].detail.contains("token service down"),
                "{failures:?}"
            );
        }
        assert_eq!(requests(dir.path()).len(), 1, "ran once, then remembered");
    }

    /// A plugin writing far more than the pipe holds to stderr before failing is not left hanging
    /// to the timeout, and only its first line, bounded, reaches the message.
    #[tokio::test]
    async fn a_chatty_plugin_is_drained_and_its_stderr_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let script = "#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\0' x >&2\necho >&2\necho second line >&2\nexit 2\n";
        let providers = plugin(script, dir.path());
        // Undrained, it would block on the full pipe until the 60 s timeout ("no answer").
        let (_, failures) = providers.keyring_for("a.corp/x").await;
        let detail = &failures[0].detail;
        assert!(detail.starts_with("exit status: 2: xxx"), "{detail}");
        assert!(!detail.contains("second line"));
        assert!(
            detail.chars().count() < MAX_STDERR_SHOWN + 40,
            "{} characters",
            detail.len()
        );
    }
}
