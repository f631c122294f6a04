//! `OGXServer` providers into the operator's model: each typed provider (`inference.remote.vllm[]`,
//! `files.inline.localfs`, ...) and each `custom` one becomes one provider of the generated
//! config, with the id the OGX operator derives (`remote-vllm`, `inline-localfs`, the custom
//! type with `::` as `-`), since `resources.models[].provider` names providers by it.
//!
//! The provider type is the typed key in kebab case under its side (`braveSearch` →
//! `remote::brave-search`, `fileSearch` → `inline::file-search`): the names the OGX 1.x server
//! registers. (The OGX operator writes `inline::rag-runtime`, `inline::batch-reference` and
//! `inline::responses` for three of them, which the 1.x server refuses.) Fields become config
//! keys in snake case; a `{name, key}` value is a Secret reference, passed as an environment
//! variable. The generator then checks every key against the server's provider table, starting
//! from the base config's entry of the same type (so a pgvector provider keeps the base's
//! `persistence`, which the OGX operator drops).
//!
//! Works on the JSON of the typed spec, so the typed API and this mapping cannot disagree on a
//! field name.

use serde_json::{Map, Value, json};

use super::Untranslatable;
use crate::api::apis;
use crate::api::polymorphic::OneOrMany;
use crate::api::v1alpha2::{ProviderConfig, ProvidersSpec, SecretKeyRef, SecretValue};
use crate::stack_config::ProviderTable;

/// The API sections of `OGXServer.spec.providers`, with the model's field for each.
const APIS: &[&str] = &[
    "inference",
    "vectorIo",
    "toolRuntime",
    "files",
    "batches",
    "responses",
    "fileProcessors",
];

/// Config keys whose name is not the snake case of the field (the server's name differs).
const RENAMED: &[(&str, &str, &str)] = &[("bedrock", "region", "region_name")];

/// Maps whose keys are the user's own (HTTP header names), not field names.
const VERBATIM_MAPS: &[&str] = &["headers"];

/// `spec.providers` (its JSON) as the model's providers.
pub fn providers(spec: &Value) -> Result<ProvidersSpec, Untranslatable> {
    let mut model = ProvidersSpec::default();
    for api in APIS {
        let Some(section) = spec.get(*api) else {
            continue;
        };
        let mut list = Vec::new();
        for side in ["remote", "inline"] {
            let Some(Value::Object(types)) = section.get(side) else {
                continue;
            };
            for (type_key, entries) in types {
                let path = format!("spec.providers.{api}.{side}.{type_key}");
                let items: Vec<&Value> = match entries {
                    Value::Array(items) => items.iter().collect(),
                    single => vec![single],
                };
                for (i, item) in items.into_iter().enumerate() {
                    let path = match entries.is_array() {
                        true => format!("{path}[{i}]"),
                        false => path.clone(),
                    };
                    let provider = match type_key.as_str() {
                        "custom" => custom(api, item, &path)?,
                        typed_key => typed(side, typed_key, item, &path)?,
                    };
                    list.push(provider);
                }
            }
        }
        if list.is_empty() {
            continue;
        }
        let field = Some(OneOrMany::Many(list));
        match *api {
            "inference" => model.inference = field,
            "vectorIo" => model.vector_io = field,
            "toolRuntime" => model.tool_runtime = field,
            "files" => model.files = field,
            "batches" => model.batches = field,
            "responses" => model.responses = field,
            _ => model.file_processors = field,
        }
    }
    Ok(model)
}

/// A typed provider: its type from the key, its fields as config keys.
fn typed(
    side: &str,
    key: &str,
    item: &Value,
    path: &str,
) -> Result<ProviderConfig, Untranslatable> {
    let kebab = kebab_case(key);
    let Value::Object(fields) = item else {
        return Err(Untranslatable::new(path, "a provider is an object"));
    };
    let mut provider = ProviderConfig {
        id: Some(
            fields
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{side}-{kebab}"), str::to_owned),
        ),
        provider: format!("{side}::{kebab}"),
        ..ProviderConfig::default()
    };
    let mut settings = Map::new();
    for (field, value) in fields {
        match field.as_str() {
            "id" => {}
            "endpoint" | "baseUrl" => provider.endpoint = value.as_str().map(str::to_owned),
            "apiKey" => {
                provider.api_key = Some(SecretValue {
                    secret_key_ref: secret_ref(value).ok_or_else(|| {
                        Untranslatable::new(
                            format!("{path}.apiKey"),
                            "a Secret reference is {name, key}",
                        )
                    })?,
                });
            }
            other => {
                let config_key = RENAMED
                    .iter()
                    .find(|(t, f, _)| *t == key && *f == other)
                    .map_or_else(|| snake_case(other), |(_, _, to)| (*to).to_owned());
                let value = match secret_ref(value) {
                    Some(secret) => json!({"secretKeyRef": secret}),
                    None => snake_keys(other, value),
                };
                settings.insert(config_key, value);
            }
        }
    }
    provider.settings = (!settings.is_empty()).then_some(settings);
    Ok(provider)
}

/// A `custom` provider: `type` as given, `settings` as given (they are config keys already),
/// `secretRefs` as Secret references (the one in the provider's key setting as its API key, so
/// that a provider converted from a LlamaStackDistribution reads its key from the same variable).
fn custom(api: &str, item: &Value, path: &str) -> Result<ProviderConfig, Untranslatable> {
    let provider_type = item.get("type").and_then(Value::as_str).ok_or_else(|| {
        Untranslatable::new(format!("{path}.type"), "a custom provider names its type")
    })?;
    let mut settings = match item.get("settings") {
        Some(Value::Object(settings)) => settings.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => {
            return Err(Untranslatable::new(
                format!("{path}.settings"),
                "settings is an object of config keys",
            ));
        }
    };
    let key_field = apis::stack_name(api)
        .and_then(|config_api| ProviderTable::ogx().get(config_api, provider_type))
        .and_then(|info| info.secret_field.as_deref());
    let mut api_key = None;
    if let Some(Value::Object(refs)) = item.get("secretRefs") {
        for (field, value) in refs {
            let secret = secret_ref(value).ok_or_else(|| {
                Untranslatable::new(
                    format!("{path}.secretRefs.{field}"),
                    "a Secret reference is {name, key}",
                )
            })?;
            if Some(field.as_str()) == key_field {
                api_key = Some(SecretValue {
                    secret_key_ref: secret,
                });
            } else {
                settings.insert(field.clone(), json!({"secretKeyRef": secret}));
            }
        }
    }
    Ok(ProviderConfig {
        api_key,
        id: Some(
            item.get("id")
                .and_then(Value::as_str)
                .map_or_else(|| provider_type.replace("::", "-"), str::to_owned),
        ),
        provider: provider_type.to_owned(),
        settings: (!settings.is_empty()).then_some(settings),
        ..ProviderConfig::default()
    })
}

/// A `{name, key}` object (and nothing else) as a Secret reference.
fn secret_ref(value: &Value) -> Option<SecretKeyRef> {
    let Value::Object(map) = value else {
        return None;
    };
    match (map.len(), map.get("name"), map.get("key")) {
        (2, Some(Value::String(name)), Some(Value::String(key))) => Some(SecretKeyRef {
            name: name.clone(),
            key: key.clone(),
        }),
        _ => None,
    }
}

/// A field's value with the keys of nested objects in snake case (a map of the user's own keys,
/// such as HTTP headers, stays as written).
fn snake_keys(field: &str, value: &Value) -> Value {
    match value {
        Value::Object(map) if !VERBATIM_MAPS.contains(&field) => Value::Object(
            map.iter()
                .map(|(k, v)| (snake_case(k), snake_keys(k, v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| snake_keys(field, v)).collect()),
        other => other.clone(),
    }
}

/// `maxTokens` → `max_tokens`, `cacert` → `ca_cert` (the one field whose words are not marked).
fn snake_case(field: &str) -> String {
    if field == "cacert" {
        return "ca_cert".to_owned();
    }
    separated(field, '_')
}

/// `braveSearch` → `brave-search`.
fn kebab_case(field: &str) -> String {
    separated(field, '-')
}

/// camelCase words joined by `separator`, in lower case; a run of capitals is one word
/// (`awsRoleARN` → `aws_role_arn`, `doOCR` → `do_ocr`).
fn separated(field: &str, separator: char) -> String {
    let chars: Vec<char> = field.chars().collect();
    let mut out = String::with_capacity(field.len() + 4);
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let previous_lower = i > 0 && !chars[i - 1].is_ascii_uppercase();
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            let in_run = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (previous_lower || (in_run && next_lower)) {
                out.push(separator);
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_snake_and_kebab_case() {
        assert_eq!(snake_case("maxTokens"), "max_tokens");
        assert_eq!(snake_case("awsAccessKeyId"), "aws_access_key_id");
        assert_eq!(snake_case("sessionTTL"), "session_ttl");
        assert_eq!(snake_case("doOcr"), "do_ocr");
        assert_eq!(snake_case("ttlSecs"), "ttl_secs");
        assert_eq!(snake_case("cacert"), "ca_cert");
        assert_eq!(kebab_case("modelContextProtocol"), "model-context-protocol");
        assert_eq!(kebab_case("fileSearch"), "file-search");
        assert_eq!(kebab_case("vllm"), "vllm");
    }
}
