//! A user's config ConfigMap (`overrideConfig`, v1alpha1 `userConfig`) as the upstream operator
//! used it: the whole ConfigMap is mounted, and the server's config is the key `config.yaml`,
//! else `run.yaml` (what many real ConfigMaps use), else the only key. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

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

/// The user's config as the operator records a generated one (its provider count and version);
/// the error names the key and the ConfigMap `name` when the config is not YAML.
pub fn as_generated(
    user: &UserConfig<'_>,
    name: &str,
) -> Result<crate::stack_config::GeneratedConfig, String> {
    let parsed: serde_json::Value = serde_saphyr::from_str(user.yaml).map_err(|e| {
        format!(
            "{} of ConfigMap \"{name}\" is not valid YAML: {e}",
            user.key
        )
    })?;
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
