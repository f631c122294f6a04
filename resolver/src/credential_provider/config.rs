//! kubelet's `CredentialProviderConfig` (`kubelet.config.k8s.io/v1`), the file given to kubelet's
//! `--image-credential-provider-config`, read and validated as kubelet validates it, so that the
//! operator runs the same plugins with the same settings.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::keyring::normalize_key;

/// The largest config file read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Request/response versions a plugin may speak.
pub const REQUEST_VERSIONS: [&str; 3] = [
    "credentialprovider.kubelet.k8s.io/v1",
    "credentialprovider.kubelet.k8s.io/v1beta1",
    "credentialprovider.kubelet.k8s.io/v1alpha1",
];

const CONFIG_VERSIONS: [&str; 3] = [
    "kubelet.config.k8s.io/v1",
    "kubelet.config.k8s.io/v1beta1",
    "kubelet.config.k8s.io/v1alpha1",
];

/// One plugin, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    /// The executable's name in the bin directory.
    pub name: String,
    /// The executable.
    pub path: PathBuf,
    /// Images it is asked about (kubelet's key globs).
    pub match_images: Vec<String>,
    /// How long an answer without `cacheDuration` is kept (0: not kept).
    pub default_cache_duration: Duration,
    /// The request/response `apiVersion`.
    pub api_version: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Environment added to the operator's own (last wins).
    pub env: Vec<(String, String)>,
}

/// A config that kubelet would refuse too, or one the operator cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("credential provider config {path}: {detail}")]
pub struct ConfigError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub detail: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    api_version: String,
    kind: String,
    #[serde(default)]
    providers: Vec<RawProvider>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProvider {
    name: String,
    #[serde(default)]
    match_images: Vec<String>,
    default_cache_duration: Option<String>,
    api_version: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<RawEnv>,
    #[serde(default)]
    token_attributes: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnv {
    name: String,
    value: String,
}

/// Reads `config` and checks each provider's executable in `bin_dir`.
pub fn load(config: &Path, bin_dir: &Path) -> Result<Vec<Provider>, ConfigError> {
    let err = |detail: String| ConfigError {
        path: config.display().to_string(),
        detail,
    };
    let bytes = crate::limits::read_file_within(config, MAX_CONFIG_BYTES).map_err(|e| {
        err(match e.kind() {
            std::io::ErrorKind::FileTooLarge => e.to_string(),
            _ => format!("cannot read it: {e}"),
        })
    })?;
    let text = String::from_utf8(bytes).map_err(|_| err("not UTF-8 text".to_owned()))?;
    parse(&text, bin_dir).map_err(err)
}

/// Parses and validates a config's text; executables are looked up in `bin_dir`.
pub fn parse(text: &str, bin_dir: &Path) -> Result<Vec<Provider>, String> {
    let raw: RawConfig =
        serde_saphyr::from_str(text).map_err(|e| format!("not a CredentialProviderConfig: {e}"))?;
    if raw.kind != "CredentialProviderConfig"
        || !CONFIG_VERSIONS.contains(&raw.api_version.as_str())
    {
        return Err(format!(
            "apiVersion/kind {}/{} is not kubelet.config.k8s.io/v1 CredentialProviderConfig",
            raw.api_version, raw.kind
        ));
    }
    if raw.providers.is_empty() {
        return Err("providers: at least one is required".to_owned());
    }
    let mut providers: Vec<Provider> = Vec::new();
    for p in raw.providers {
        let at = |detail: String| format!("provider {:?}: {detail}", p.name);
        if p.name.is_empty()
            || p.name.contains('/')
            || p.name.contains(char::is_whitespace)
            || p.name == "."
            || p.name == ".."
        {
            return Err(at(
                "name must be an executable's name, without '/' or spaces".to_owned(),
            ));
        }
        if providers.iter().any(|q| q.name == p.name) {
            return Err(at("duplicate name".to_owned()));
        }
        if p.match_images.is_empty() {
            return Err(at("matchImages: at least one is required".to_owned()));
        }
        if let Some(bad) = p.match_images.iter().find(|m| normalize_key(m).is_none()) {
            return Err(at(format!(
                "matchImages entry {bad:?} is not an image pattern"
            )));
        }
        let default = p
            .default_cache_duration
            .as_deref()
            .ok_or_else(|| at("defaultCacheDuration is required".to_owned()))?;
        let default_cache_duration =
            go_duration(default).map_err(|e| at(format!("defaultCacheDuration: {e}")))?;
        if !REQUEST_VERSIONS.contains(&p.api_version.as_str()) {
            return Err(at(format!(
                "apiVersion {:?} is not one of {}",
                p.api_version,
                REQUEST_VERSIONS.join(", ")
            )));
        }
        if p.token_attributes.is_some() {
            return Err(at(
                "tokenAttributes (service account tokens for the plugin) is not supported: the operator resolves images for no Pod's ServiceAccount".to_owned(),
            ));
        }
        let path = bin_dir.join(&p.name);
        if !path.is_file() {
            return Err(at(format!(
                "no executable {} in the bin directory",
                path.display()
            )));
        }
        providers.push(Provider {
            name: p.name,
            path,
            match_images: p.match_images,
            default_cache_duration,
            api_version: p.api_version,
            args: p.args,
            env: p.env.into_iter().map(|e| (e.name, e.value)).collect(),
        });
    }
    Ok(providers)
}

/// A Go duration (`12h`, `1m30s`, `500ms`, `0`); negative ones are refused.
pub fn go_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration such as 12h, 30m or 1m30s");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err(format!("{text:?} is negative"));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..number_end].parse().map_err(|_| bad())?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: ecr-credential-provider\n    matchImages: ['*.dkr.ecr.*.amazonaws.com', 'mirror.corp:5000']\n    defaultCacheDuration: 12h\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    args: [get-credentials]\n    env: [{name: AWS_PROFILE, value: pulls}]\n";

    fn bin_dir_with(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in names {
            std::fs::write(dir.path().join(name), "#!/bin/sh\n").unwrap();
        }
        dir
    }

    #[test]
    fn durations_parse_as_go_does() {
        assert_eq!(go_duration("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(go_duration("0s"), Ok(Duration::ZERO));
        for bad in ["", "12", "h", "5d", "1h-2m", "-1s"] {
            assert!(go_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_kubelet_config_loads_with_its_executables() {
        let dir = bin_dir_with(&["ecr-credential-provider"]);
        let providers = parse(CONFIG, dir.path()).unwrap();
        assert_eq!(providers.len(), 1);
        let p = &providers[0];
        assert_eq!(p.default_cache_duration, Duration::from_secs(43_200));
        assert_eq!(p.args, ["get-credentials"]);
        assert_eq!(p.env, [("AWS_PROFILE".to_owned(), "pulls".to_owned())]);
        assert_eq!(p.path, dir.path().join("ecr-credential-provider"));
    }

    #[test]
    fn what_kubelet_refuses_is_refused_by_name() {
        let dir = bin_dir_with(&["ecr-credential-provider", "p"]);
        let cases = [
            (CONFIG.replace("kind: CredentialProviderConfig", "kind: Other"), "is not kubelet.config.k8s.io/v1"),
            (CONFIG.replace("name: ecr-credential-provider", "name: ../bin/sh"), "without '/'"),
            (CONFIG.replace("    defaultCacheDuration: 12h\n", ""), "defaultCacheDuration is required"),
            (CONFIG.replace("defaultCacheDuration: 12h", "defaultCacheDuration: -1h"), "negative"),
            (CONFIG.replace("credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v2"), "apiVersion"),
            (CONFIG.replace("matchImages: ['*.dkr.ecr.*.amazonaws.com', 'mirror.corp:5000']", "matchImages: []"), "at least one"),
            (CONFIG.replace("args: [get-credentials]", "tokenAttributes: {serviceAccountTokenAudience: x}"), "not supported"),
            (CONFIG.replace("name: ecr-credential-provider", "name: missing"), "no executable"),
            (CONFIG.replace("args:", "argz:"), "not a CredentialProviderConfig"),
            ("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n".to_owned(), "at least one is required"),
        ];
        for (text, wanted) in cases {
            let err = parse(&text, dir.path()).unwrap_err();
            assert!(err.contains(wanted), "{wanted:?} not in {err}");
        }
        let twice = format!("{CONFIG}{}", &CONFIG[CONFIG.find("  - name").unwrap()..]);
        assert!(parse(&twice, dir.path()).unwrap_err().contains("duplicate"));
    }
}
