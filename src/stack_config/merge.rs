//! Spec 001's configuration merge: external providers (from their images' metadata and the
//! CRD) added to a base config. Pure; `merge-config` runs it in the Pod.
//!
//! - CRD order; an external id equal to a base id in the same API replaces the base provider
//!   (with the spec's WARNING text); two external providers with one id fail, naming both images.
//! - The metadata's API must equal the CRD section (the spec's API placement error).
//! - Entries carry `provider_id`, `provider_type`, `module` (the import package llama-stack
//!   loads `<module>.provider` from) and `config`; every other key of the base config survives.

use llama_stack_resolver::server_line::ServerLine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::api::apis;

/// `/lls-provider/lls-provider-spec.yaml` of a provider image.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderPackage {
    /// Must be `llamastack.io/v1alpha1`.
    pub api_version: String,
    /// Must be `ProviderPackage`.
    pub kind: String,
    /// Who and what.
    pub metadata: PackageMetadata,
    /// What to load.
    pub spec: PackageSpec,
}

/// `metadata` of a ProviderPackage.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PackageMetadata {
    /// Package identifier.
    pub name: String,
    /// Semantic version.
    pub version: String,
    /// Organization.
    pub vendor: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Contact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainer: Option<String>,
}

/// `spec` of a ProviderPackage.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageSpec {
    /// Python import package providing `<packageName>.provider.get_provider_spec()`.
    pub package_name: String,
    /// `remote::name` or `inline::name`.
    pub provider_type: String,
    /// API the provider implements.
    pub api: String,
    /// Main wheel, under `/lls-provider/packages/`.
    pub wheel_path: String,
    /// Further wheels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_wheels: Option<Vec<String>>,
    /// The server line the provider was written for: `ogx` (it imports `ogx_api`) or
    /// `llama-stack` (it imports `llama_stack_api`), the default, since every provider written
    /// before OGX is one. The other line cannot load it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_line: Option<String>,
}

impl PackageSpec {
    /// The line the provider was written for ([`server_line`](Self::server_line), checked by
    /// [`parse_provider_package`]).
    pub fn built_for(&self) -> ServerLine {
        self.server_line
            .as_deref()
            .and_then(ServerLine::parse)
            .unwrap_or(ServerLine::LlamaStack)
    }
}

/// A provider's metadata file that cannot be used, with what to fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid /lls-provider/lls-provider-spec.yaml in image {image}: {problem}")]
pub struct MetadataError {
    /// The provider image.
    pub image: String,
    /// What is wrong (YAML errors carry line and column).
    pub problem: String,
}

fn valid_module(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

fn valid_provider_type(t: &str) -> bool {
    let Some((kind, name)) = t.split_once("::") else {
        return false;
    };
    matches!(kind, "remote" | "inline")
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The llama-stack 0.7 name of an API written in metadata (snake or camel case).
pub fn metadata_api(api: &str) -> Option<&'static str> {
    apis::APIS
        .iter()
        .find(|(camel, snake)| *camel == api || *snake == api)
        .map(|(_, snake)| *snake)
}

/// Parses and validates a provider's metadata, field by field.
pub fn parse_provider_package(yaml: &str, image: &str) -> Result<ProviderPackage, MetadataError> {
    let err = |problem: String| MetadataError {
        image: image.to_owned(),
        problem,
    };
    let package: ProviderPackage =
        serde_saphyr::from_str(yaml).map_err(|e| err(format!("YAML error: {e}")))?;
    if package.api_version != "llamastack.io/v1alpha1" {
        return Err(err(format!(
            "apiVersion must be llamastack.io/v1alpha1, found {:?}",
            package.api_version
        )));
    }
    if package.kind != "ProviderPackage" {
        return Err(err(format!(
            "kind must be ProviderPackage, found {:?}",
            package.kind
        )));
    }
    for (field, value) in [
        ("metadata.name", &package.metadata.name),
        ("metadata.version", &package.metadata.version),
        ("metadata.vendor", &package.metadata.vendor),
    ] {
        if value.trim().is_empty() {
            return Err(err(format!("{field} must not be empty")));
        }
    }
    if !valid_module(&package.spec.package_name) {
        return Err(err(format!(
            "spec.packageName {:?} must be a Python module path such as my_org.custom_vllm",
            package.spec.package_name
        )));
    }
    if !valid_provider_type(&package.spec.provider_type) {
        return Err(err(format!(
            "spec.providerType {:?} must match (remote|inline)::[a-z0-9-]+",
            package.spec.provider_type
        )));
    }
    if let Some(line) = &package.spec.server_line
        && ServerLine::parse(line).is_none()
    {
        return Err(err(format!(
            "spec.serverLine {line:?} must be ogx (a provider importing ogx_api) or llama-stack (importing llama_stack_api)"
        )));
    }
    if metadata_api(&package.spec.api).is_none() {
        let hint = apis::removed(&package.spec.api)
            .map(|why| format!(" ({why})"))
            .unwrap_or_default();
        return Err(err(format!(
            "spec.api {:?} is not an API of llama-stack 0.7{hint}; use one of {}",
            package.spec.api,
            apis::APIS
                .iter()
                .map(|(_, s)| *s)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if package.spec.wheel_path.trim().is_empty() || !package.spec.wheel_path.ends_with(".whl") {
        return Err(err(format!(
            "spec.wheelPath {:?} must name a .whl file under /lls-provider/packages/",
            package.spec.wheel_path
        )));
    }
    Ok(package)
}

/// One external provider: what the CRD says plus its image's metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternalProvider {
    /// `providerId` from the CRD.
    pub provider_id: String,
    /// The CRD section (camelCase, e.g. `vectorIo`).
    pub section: String,
    /// The provider image.
    pub image: String,
    /// `config` from the CRD.
    pub config: Option<Map<String, Value>>,
    /// The image's metadata.
    pub package: ProviderPackage,
}

/// The merge result.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeOutput {
    /// Merged config.yaml.
    pub config_yaml: String,
    /// `extra-providers.yaml` (kind ExternalProviders).
    pub extra_providers_yaml: String,
    /// Override warnings, in the spec's format.
    pub warnings: Vec<String>,
}

/// Why the merge failed; each message names the provider, its image and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// The base config is not a mapping with `providers`.
    #[error("ERROR: the base config is not a llama-stack config: {0}")]
    Base(String),
    /// Two external providers share an id.
    #[error(
        "ERROR: Duplicate external provider id '{provider_id}'\n\nProvider '{provider_id}' is declared by two external providers:\n  image: {first_image}\n  image: {second_image}\n\nResolution: Give each entry of spec.externalProviders a unique providerId."
    )]
    DuplicateId {
        /// The id.
        provider_id: String,
        /// First image.
        first_image: String,
        /// Second image.
        second_image: String,
    },
    /// The CRD section is not an API.
    #[error(
        "ERROR: externalProviders.{section} is not an API of llama-stack 0.7 (provider '{provider_id}', image: {image})"
    )]
    UnknownSection {
        /// Section.
        section: String,
        /// Provider id.
        provider_id: String,
        /// Image.
        image: String,
    },
    /// The metadata's API differs from the CRD section.
    #[error(
        "ERROR: Provider API type mismatch\n\nProvider '{provider_id}' (image: {image})\ndeclares api={declared} in lls-provider-spec.yaml\nbut is placed under externalProviders.{placement}\n\nResolution: Move the provider to externalProviders.{declared_section} section in the LLSD spec."
    )]
    ApiMismatch {
        /// Provider id.
        provider_id: String,
        /// Image.
        image: String,
        /// API in the metadata.
        declared: String,
        /// The CRD section it belongs in.
        declared_section: String,
        /// The CRD section it is in.
        placement: String,
    },
    /// Serialization failed.
    #[error("ERROR: cannot write YAML: {0}")]
    Yaml(String),
}

/// `my_org.custom_vllm.provider` -> `my_org.custom_vllm` (llama-stack appends `.provider`).
fn module_of(package_name: &str) -> &str {
    package_name
        .strip_suffix(".provider")
        .unwrap_or(package_name)
}

/// Merges external providers, in CRD order, into a base config.
pub fn merge(base_yaml: &str, externals: &[ExternalProvider]) -> Result<MergeOutput, MergeError> {
    let base: Value =
        serde_saphyr::from_str(base_yaml).map_err(|e| MergeError::Base(e.to_string()))?;
    let Value::Object(mut config) = base else {
        return Err(MergeError::Base(
            "the top level is not a mapping".to_owned(),
        ));
    };
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut extra = Map::new();
    let mut warnings = Vec::new();
    for ext in externals {
        if let Some((_, first_image)) = seen.iter().find(|(id, _)| *id == ext.provider_id) {
            return Err(MergeError::DuplicateId {
                provider_id: ext.provider_id.clone(),
                first_image: (*first_image).to_owned(),
                second_image: ext.image.clone(),
            });
        }
        seen.push((&ext.provider_id, &ext.image));
        let api = placed_api(ext)?;
        let entry = json!({
            "provider_id": ext.provider_id,
            "provider_type": ext.package.spec.provider_type,
            "module": module_of(&ext.package.spec.package_name),
            "config": Value::Object(ext.config.clone().unwrap_or_default()),
        });
        if let Some(warning) = place(&mut config, api, ext, entry.clone())? {
            warnings.push(warning);
        }
        if let Some(Value::Array(served)) = config.get_mut("apis")
            && !served.iter().any(|a| a.as_str() == Some(api))
        {
            served.push(json!(api));
        }
        if let Value::Array(list) = extra.entry(api.to_owned()).or_insert_with(|| json!([])) {
            list.push(entry);
        }
    }
    let extra_doc = json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "ExternalProviders", "providers": Value::Object(extra)});
    Ok(MergeOutput {
        config_yaml: serde_saphyr::to_string(&Value::Object(config))
            .map_err(|e| MergeError::Yaml(e.to_string()))?,
        extra_providers_yaml: serde_saphyr::to_string(&extra_doc)
            .map_err(|e| MergeError::Yaml(e.to_string()))?,
        warnings,
    })
}

/// The llama-stack API of the section the provider is placed in, which must be the API its
/// package declares.
fn placed_api(ext: &ExternalProvider) -> Result<&'static str, MergeError> {
    let Some(api) = apis::stack_name(&ext.section) else {
        return Err(MergeError::UnknownSection {
            section: ext.section.clone(),
            provider_id: ext.provider_id.clone(),
            image: ext.image.clone(),
        });
    };
    let declared = metadata_api(&ext.package.spec.api);
    if declared == Some(api) {
        return Ok(api);
    }
    let declared_section = declared
        .and_then(|d| {
            apis::APIS
                .iter()
                .find(|(_, s)| *s == d)
                .map(|(c, _)| (*c).to_owned())
        })
        .unwrap_or_else(|| ext.package.spec.api.clone());
    Err(MergeError::ApiMismatch {
        provider_id: ext.provider_id.clone(),
        image: ext.image.clone(),
        declared: ext.package.spec.api.clone(),
        declared_section,
        placement: ext.section.clone(),
    })
}

/// Adds `entry` to `providers.<api>`, replacing a base provider with the same ID; returns the
/// warning that says so.
fn place(
    config: &mut Map<String, Value>,
    api: &str,
    ext: &ExternalProvider,
    entry: Value,
) -> Result<Option<String>, MergeError> {
    let providers = config.entry("providers").or_insert_with(|| json!({}));
    let Value::Object(providers) = providers else {
        return Err(MergeError::Base("providers is not a mapping".to_owned()));
    };
    let Value::Array(list) = providers.entry(api.to_owned()).or_insert_with(|| json!([])) else {
        return Ok(None);
    };
    let replaced = list.iter().position(|p| {
        p.get("provider_id").and_then(Value::as_str) == Some(ext.provider_id.as_str())
    });
    let warning = replaced.map(|pos| {
        let base = list.remove(pos);
        let base_type = base
            .get("provider_type")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        format!(
            "WARNING: External provider '{}' overrides base provider in API '{api}'\n  Base type: {base_type}\n  External type: {}\n  Using the external provider (image: {})",
            ext.provider_id, ext.package.spec.provider_type, ext.image
        )
    });
    list.push(entry);
    Ok(warning)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(api: &str, provider_type: &str, package_name: &str) -> ProviderPackage {
        parse_provider_package(
            &format!("apiVersion: llamastack.io/v1alpha1\nkind: ProviderPackage\nmetadata: {{name: p, version: 1.0.0, vendor: acme}}\nspec:\n  packageName: {package_name}\n  providerType: {provider_type}\n  api: {api}\n  wheelPath: /lls-provider/packages/p-1.0.0-py3-none-any.whl\n"),
            "img",
        )
        .unwrap()
    }

    fn external(
        id: &str,
        section: &str,
        image: &str,
        package: ProviderPackage,
    ) -> ExternalProvider {
        ExternalProvider {
            provider_id: id.into(),
            section: section.into(),
            image: image.into(),
            config: Some(Map::from_iter([(
                "url".to_owned(),
                json!(format!("http://{id}")),
            )])),
            package,
        }
    }

    const BASE: &str = "version: 2\ndistro_name: x\napis: [inference]\nproviders:\n  inference:\n  - provider_id: ollama\n    provider_type: remote::ollama\n    config: {url: 'http://ollama:11434'}\nserver: {port: 8321}\ncustom_top_level: {kept: true}\n";

    #[test]
    fn spec_example_adds_and_overrides_in_crd_order() {
        let out = merge(
            BASE,
            &[
                external(
                    "custom-vllm",
                    "inference",
                    "reg/custom-vllm:1",
                    package("inference", "remote::vllm", "custom_vllm.provider"),
                ),
                external(
                    "ollama",
                    "inference",
                    "reg/ollama-custom:1",
                    package("inference", "remote::ollama-custom", "custom_ollama"),
                ),
            ],
        )
        .unwrap();
        let config: Value = serde_saphyr::from_str(&out.config_yaml).unwrap();
        assert_eq!(
            config["providers"]["inference"],
            json!([
                {"provider_id": "custom-vllm", "provider_type": "remote::vllm", "module": "custom_vllm", "config": {"url": "http://custom-vllm"}},
                {"provider_id": "ollama", "provider_type": "remote::ollama-custom", "module": "custom_ollama", "config": {"url": "http://ollama"}},
            ])
        );
        assert_eq!(
            config["custom_top_level"],
            json!({"kept": true}),
            "other top-level keys survive"
        );
        assert_eq!(
            out.warnings,
            [
                "WARNING: External provider 'ollama' overrides base provider in API 'inference'\n  Base type: remote::ollama\n  External type: remote::ollama-custom\n  Using the external provider (image: reg/ollama-custom:1)"
            ]
        );
        let extra: Value = serde_saphyr::from_str(&out.extra_providers_yaml).unwrap();
        assert_eq!(extra["kind"], "ExternalProviders");
        assert_eq!(extra["providers"]["inference"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn new_api_sections_are_created_and_served() {
        let out = merge(
            BASE,
            &[external(
                "shield",
                "safety",
                "img",
                package("safety", "remote::acme", "acme"),
            )],
        )
        .unwrap();
        let config: Value = serde_saphyr::from_str(&out.config_yaml).unwrap();
        assert_eq!(config["providers"]["safety"][0]["provider_id"], "shield");
        assert_eq!(config["apis"], json!(["inference", "safety"]));
    }

    #[test]
    fn duplicate_external_ids_name_both_images() {
        let err = merge(
            BASE,
            &[
                external(
                    "dup",
                    "inference",
                    "reg/a:1",
                    package("inference", "remote::a", "a"),
                ),
                external(
                    "dup",
                    "safety",
                    "reg/b:1",
                    package("safety", "remote::b", "b"),
                ),
            ],
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("Duplicate external provider id 'dup'")
                && text.contains("image: reg/a:1")
                && text.contains("image: reg/b:1"),
            "{text}"
        );
    }

    #[test]
    fn api_placement_error_has_the_spec_format() {
        let err = merge(
            BASE,
            &[external(
                "p",
                "safety",
                "reg/p:1",
                package("inference", "remote::p", "p"),
            )],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ERROR: Provider API type mismatch\n\nProvider 'p' (image: reg/p:1)\ndeclares api=inference in lls-provider-spec.yaml\nbut is placed under externalProviders.safety\n\nResolution: Move the provider to externalProviders.inference section in the LLSD spec."
        );
        let err = merge(
            BASE,
            &[external(
                "v",
                "vectorIo",
                "img",
                package("inference", "remote::v", "v"),
            )],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("but is placed under externalProviders.vectorIo")
        );
        assert!(
            merge(
                BASE,
                &[external(
                    "v",
                    "vectorIo",
                    "img",
                    package("vector_io", "remote::v", "v")
                )]
            )
            .is_ok(),
            "snake_case metadata api matches the camelCase section"
        );
    }

    #[test]
    fn metadata_is_validated_field_by_field() {
        let ok = "apiVersion: llamastack.io/v1alpha1\nkind: ProviderPackage\nmetadata: {name: p, version: 1.0.0, vendor: acme}\nspec:\n  packageName: acme.p\n  providerType: remote::p\n  api: inference\n  wheelPath: /lls-provider/packages/p.whl\n";
        assert!(parse_provider_package(ok, "img").is_ok());
        let cases = [
            (
                ok.replace("kind: ProviderPackage", "kind: Package"),
                "kind must be ProviderPackage",
            ),
            (
                ok.replace("remote::p", "cloud::p"),
                "spec.providerType \"cloud::p\" must match",
            ),
            (
                ok.replace("acme.p", "acme-p"),
                "spec.packageName \"acme-p\" must be a Python module path",
            ),
            (
                ok.replace("api: inference", "api: agents"),
                "the agents API was replaced by responses",
            ),
            (ok.replace("p.whl", "p.tar.gz"), "must name a .whl file"),
            (
                ok.replace("vendor: acme", "vendor: ''"),
                "metadata.vendor must not be empty",
            ),
            (
                ok.replace("  api: inference\n", "  api: inference\n  surprise: 1\n"),
                "unknown field `surprise`",
            ),
            (ok.replace("spec:\n", "spec:\n bad indent: [\n"), "line"),
        ];
        for (yaml, needle) in cases {
            let err = parse_provider_package(&yaml, "reg/p:1")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("invalid /lls-provider/lls-provider-spec.yaml in image reg/p:1: ")
                    && err.contains(needle),
                "{needle}: {err}"
            );
        }
    }
}
