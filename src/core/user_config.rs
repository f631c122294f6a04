//! A user's config ConfigMap (`overrideConfig`, v1alpha1 `userConfig`) as the upstream operator
//! used it: the whole ConfigMap is mounted, and the server's config is the key `config.yaml`,
//! else `run.yaml` (what many real ConfigMaps use), else the only key. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease};

/// Keys taken as the config, in order, when the ConfigMap has several.
pub const CONFIG_KEYS: [&str; 2] = ["config.yaml", "run.yaml"];

/// The config in a user's ConfigMap.
#[derive(Debug, PartialEq, Eq)]
pub struct UserConfig<'a> {
    /// The key holding the server's config.
    pub key: &'a str,
    /// Its content.
    pub yaml: &'a str,
    /// `sha256:<hex>` over every key and value of the ConfigMap (all are mounted, so an edit of
    /// any of them rolls the Pods).
    pub hash: String,
}

/// Why a ConfigMap holds no config to run.
#[derive(Debug, PartialEq, Eq)]
pub enum UserConfigError {
    /// No data at all.
    Empty,
    /// Several keys, none of them a config key.
    Ambiguous(Vec<String>),
    /// The key the spec names is not in the ConfigMap (its keys follow).
    MissingKey(String, Vec<String>),
}

impl UserConfigError {
    /// The message for the status, naming the ConfigMap `name`, the field that names it
    /// (`spec.overrideConfig` or `spec.baseConfig`) and the fix.
    pub fn message(&self, name: &str, field: &str) -> String {
        match self {
            Self::Empty => format!(
                "ConfigMap \"{name}\" has no data; put the server's config under the key config.yaml. Referenced by: {field}.configMapName"
            ),
            Self::Ambiguous(keys) => format!(
                "ConfigMap \"{name}\" has no config.yaml or run.yaml key, and several others ({}), so it is not clear which one is the server's config; name it config.yaml. Referenced by: {field}.configMapName",
                keys.join(", ")
            ),
            Self::MissingKey(key, keys) => format!(
                "ConfigMap \"{name}\" has no key {key:?} (its keys: {}). Referenced by: {field}",
                keys.join(", ")
            ),
        }
    }
}

/// Why a user's config cannot be the server's config.
#[derive(Debug, PartialEq, Eq)]
pub enum Unrunnable {
    /// It is not a config (not YAML); the message names the key and the ConfigMap.
    Unusable(String),
    /// It is written for the other server line ([`line_mismatch`]).
    OtherLine(String),
}

/// The user's config (ConfigMap `name`) as the operator records a generated one (its provider
/// count and version), when it is YAML and not written for another line than `server`'s.
pub fn as_generated(
    user: &UserConfig<'_>,
    name: &str,
    server: ServerRelease,
) -> Result<crate::stack_config::GeneratedConfig, Unrunnable> {
    let parsed: serde_json::Value = serde_saphyr::from_str(user.yaml).map_err(|e| {
        Unrunnable::Unusable(format!(
            "{} of ConfigMap \"{name}\" is not valid YAML: {e}",
            user.key
        ))
    })?;
    if let Some(message) = line_mismatch(&parsed, user.key, name, server) {
        return Err(Unrunnable::OtherLine(message));
    }
    let provider_count = parsed
        .get("providers")
        .and_then(|p| p.as_object())
        .map(|p| p.values().filter_map(|l| l.as_array()).map(Vec::len).sum())
        .unwrap_or(0);
    Ok(crate::stack_config::GeneratedConfig {
        yaml: user.yaml.to_owned(),
        hash: user.hash.clone(),
        env: Vec::new(),
        provider_count,
        resource_count: 0,
        config_version: parsed
            .get("version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(2),
        warnings: Vec::new(),
    })
}

/// APIs of llama-stack 0.x that OGX 1.x does not have: OGX 1.0 removed `safety`, `eval`,
/// `datasetio` and `scoring`; `agents`, `telemetry` and `post_training` are older still. OGX stops
/// at start-up on any of them (`API 'safety' does not exist`).
const LLAMA_STACK_ONLY_APIS: [&str; 7] = [
    "agents",
    "datasetio",
    "eval",
    "post_training",
    "safety",
    "scoring",
    "telemetry",
];

/// APIs OGX added that no llama-stack 0.x release has (from the provider tables of ogx 1.0.4
/// and 1.5.0 against llama-stack 0.7.3's).
const OGX_ONLY_APIS: [&str; 4] = ["container_runtime", "interactions", "messages", "skills"];

/// The server line a config is written for, when the APIs it names (its `apis` list and the
/// keys of its `providers`) belong to one line only, with those names; `None` when they name
/// APIs of both lines or of neither.
pub fn written_for(config: &serde_json::Value) -> Option<(ServerLine, Vec<&str>)> {
    let listed = config
        .get("apis")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str);
    let configured = config
        .get("providers")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flat_map(|providers| providers.keys().map(String::as_str));
    let names: std::collections::BTreeSet<&str> = listed.chain(configured).collect();
    let of = |apis: &[&str]| -> Vec<&str> {
        names.iter().copied().filter(|n| apis.contains(n)).collect()
    };
    match (of(&LLAMA_STACK_ONLY_APIS), of(&OGX_ONLY_APIS)) {
        (llama_stack, ogx) if ogx.is_empty() && !llama_stack.is_empty() => {
            Some((ServerLine::LlamaStack, llama_stack))
        }
        (llama_stack, ogx) if llama_stack.is_empty() && !ogx.is_empty() => {
            Some((ServerLine::Ogx, ogx))
        }
        _ => None,
    }
}

/// Why the user's config (key `key` of ConfigMap `name`, parsed) cannot run on `server`: it is
/// written for the other server line. Only an image whose line was told (labels, catalog, spec)
/// is judged; one assumed to be llama-stack is not.
pub fn line_mismatch(
    config: &serde_json::Value,
    key: &str,
    name: &str,
    server: ServerRelease,
) -> Option<String> {
    if server.evidence == Evidence::Assumed {
        return None;
    }
    let (line, apis) = written_for(config).filter(|(line, _)| *line != server.line)?;
    let (written, lacking) = match line {
        ServerLine::LlamaStack => ("llama-stack 0.x", "OGX does not have"),
        ServerLine::Ogx => ("OGX", "llama-stack 0.x does not have"),
    };
    Some(format!(
        "{key} of ConfigMap \"{name}\" is written for {written} (it names the APIs {}, which {lacking}), but the image runs {} ({}): the server would not start. Write the config for {}, or run an image of its line (spec.distribution.image, or image-overrides)",
        apis.join(", "),
        server.describe(),
        server.evidence.as_str(),
        server.line.display_name(),
    ))
}

/// The config a user's ConfigMap holds: under `key` when the spec names one, else found by
/// [`CONFIG_KEYS`].
pub fn user_config<'a>(
    cm: &'a ConfigMap,
    key: Option<&str>,
) -> Result<UserConfig<'a>, UserConfigError> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    let data = cm.data.as_ref().unwrap_or(&EMPTY);
    if let Some(wanted) = key {
        let (key, yaml) = data.get_key_value(wanted).ok_or_else(|| {
            UserConfigError::MissingKey(wanted.to_owned(), data.keys().cloned().collect())
        })?;
        return Ok(UserConfig {
            key,
            yaml,
            hash: content_hash(cm),
        });
    }
    let (key, yaml) = CONFIG_KEYS
        .iter()
        .find_map(|k| data.get_key_value(*k))
        .or_else(
            || match (data.len(), cm.binary_data.as_ref().map_or(0, BTreeMap::len)) {
                (1, 0) => data.iter().next(),
                _ => None,
            },
        )
        .ok_or_else(|| match data.is_empty() {
            true => UserConfigError::Empty,
            false => UserConfigError::Ambiguous(data.keys().cloned().collect()),
        })?;
    Ok(UserConfig {
        key,
        yaml,
        hash: content_hash(cm),
    })
}

/// `sha256:<hex>` of every key and value, text and binary, in a form where no two different
/// ConfigMaps can write the same bytes (each part is length-prefixed).
fn content_hash(cm: &ConfigMap) -> String {
    let mut bytes = Vec::new();
    let mut part = |tag: u8, value: &[u8]| {
        bytes.push(tag);
        bytes.extend_from_slice(&(value.len() as u64).to_be_bytes());
        bytes.extend_from_slice(value);
    };
    for (key, value) in cm.data.iter().flatten() {
        part(b'k', key.as_bytes());
        part(b'v', value.as_bytes());
    }
    for (key, value) in cm.binary_data.iter().flatten() {
        part(b'K', key.as_bytes());
        part(b'B', &value.0);
    }
    llama_stack_resolver::sha256_hex(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn cm(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn config_yaml_then_run_yaml_then_the_only_key() {
        let both = cm(&[("run.yaml", "a"), ("config.yaml", "b")]);
        assert_eq!(user_config(&both, None).unwrap().key, "config.yaml");
        let run = cm(&[("run.yaml", "a"), ("notes.txt", "n")]);
        let found = user_config(&run, None).unwrap();
        assert_eq!((found.key, found.yaml), ("run.yaml", "a"));
        let only = cm(&[("stack.yaml", "c")]);
        assert_eq!(user_config(&only, None).unwrap().key, "stack.yaml");
    }

    #[test]
    fn several_other_keys_or_none_are_refused_with_the_keys_named() {
        let several = cm(&[("a.yaml", "a"), ("b.yaml", "b")]);
        let error = user_config(&several, None).unwrap_err();
        assert_eq!(
            error,
            UserConfigError::Ambiguous(vec!["a.yaml".into(), "b.yaml".into()])
        );
        assert!(
            error
                .message("cfg", "spec.overrideConfig")
                .contains("(a.yaml, b.yaml)")
        );
        assert_eq!(
            user_config(&ConfigMap::default(), None).unwrap_err(),
            UserConfigError::Empty
        );
        // One text key beside binary data: the binary file may be the config's companion or
        // the config itself, so nothing is guessed.
        let mut with_binary = cm(&[("stack.yaml", "c")]);
        with_binary.binary_data = Some(BTreeMap::from([(
            "model.bin".to_owned(),
            ByteString(vec![1]),
        )]));
        assert!(user_config(&with_binary, None).is_err());
    }

    #[test]
    fn the_hash_covers_every_key_and_tells_keys_from_values() {
        let base = cm(&[("run.yaml", "a"), ("extra.json", "{}")]);
        let hash = user_config(&base, None).unwrap().hash;
        let other_file = cm(&[("run.yaml", "a"), ("extra.json", "{\"x\":1}")]);
        assert_ne!(user_config(&other_file, None).unwrap().hash, hash);
        // The same bytes split differently between key and value hash differently.
        let shifted = cm(&[("run.yaml", "a"), ("extra.jso", "n{}")]);
        assert_ne!(user_config(&shifted, None).unwrap().hash, hash);
        assert_eq!(user_config(&base.clone(), None).unwrap().hash, hash);
    }
}

#[cfg(test)]
mod line_tests {
    use llama_stack_resolver::server_line::ServerVersion;

    use super::*;

    /// The real servers' own starter configs: llama-stack 0.7.3's and OGX 1.3.0's, as each
    /// release's wheel writes them.
    const LLAMA_STACK_STARTER: &str = include_str!("../../configs/starter/config.yaml");
    const OGX_STARTER: &str = include_str!("../../configs-ogx/starter/config.yaml");

    fn parsed(yaml: &str) -> serde_json::Value {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn told(line: ServerLine, version: (u32, u32, u32), evidence: Evidence) -> ServerRelease {
        let (major, minor, patch) = version;
        ServerRelease {
            line,
            version: Some(ServerVersion::new(major, minor, patch)),
            evidence,
            suffixed: false,
        }
    }

    #[test]
    fn a_config_says_its_line_by_the_apis_only_one_line_has() {
        let (llama_stack, ogx) = (parsed(LLAMA_STACK_STARTER), parsed(OGX_STARTER));
        let (line, apis) = written_for(&llama_stack).unwrap();
        assert_eq!(line, ServerLine::LlamaStack);
        assert_eq!(apis, ["datasetio", "eval", "safety", "scoring"]);
        let (line, apis) = written_for(&ogx).unwrap();
        assert_eq!(line, ServerLine::Ogx);
        assert_eq!(apis, ["interactions", "messages", "skills"]);
        // APIs both lines have say nothing; nor do APIs of both lines at once.
        let common = "apis: [inference, files]\nproviders: {inference: []}\n";
        assert_eq!(written_for(&parsed(common)), None);
        let both = "apis: [safety, messages]\nproviders: {}\n";
        assert_eq!(written_for(&parsed(both)), None);
        // A provider section alone tells, as a `apis` list alone does.
        let old = "providers: {agents: [], inference: []}\n";
        assert_eq!(
            written_for(&parsed(old)),
            Some((ServerLine::LlamaStack, vec!["agents"]))
        );
    }

    /// A llama-stack config on an image told to be OGX (and the reverse) is refused naming both
    /// lines; an image only assumed to be llama-stack is not judged.
    #[test]
    fn a_config_for_the_other_line_is_refused_naming_both() {
        let ogx = told(ServerLine::Ogx, (1, 2, 1), Evidence::OgxVersionLabel);
        let message = line_mismatch(&parsed(LLAMA_STACK_STARTER), "run.yaml", "mine", ogx).unwrap();
        assert_eq!(
            message,
            "run.yaml of ConfigMap \"mine\" is written for llama-stack 0.x (it names the APIs datasetio, eval, safety, scoring, which OGX does not have), but the image runs ogx 1.2.1 (label com.ogx.distribution.version): the server would not start. Write the config for OGX, or run an image of its line (spec.distribution.image, or image-overrides)"
        );
        let llama_stack = told(
            ServerLine::LlamaStack,
            (0, 7, 3),
            Evidence::LlamaStackLabels,
        );
        let message =
            line_mismatch(&parsed(OGX_STARTER), "config.yaml", "mine", llama_stack).unwrap();
        assert!(
            message.contains("is written for OGX (it names the APIs interactions, messages, skills, which llama-stack 0.x does not have), but the image runs llama-stack 0.7.3"),
            "{message}"
        );
        assert_eq!(line_mismatch(&parsed(OGX_STARTER), "k", "mine", ogx), None);
        assert_eq!(
            line_mismatch(&parsed(LLAMA_STACK_STARTER), "k", "mine", llama_stack),
            None
        );
        assert_eq!(
            line_mismatch(&parsed(OGX_STARTER), "k", "mine", ServerRelease::ASSUMED),
            None
        );
    }
}
