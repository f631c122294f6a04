//! Distribution names and the images they run, from `distributions.json`.

use std::collections::BTreeMap;

use crate::image_ref::ImageRef;

/// `distributions.json` as shipped in the binary: the distributions of the pinned llama-stack
/// release, each pinned to that release's tag.
pub const EMBEDDED_DISTRIBUTIONS_JSON: &str = include_str!("../../distributions.json");

/// Names of the upstream operator's catalog (its `distributions.json` at its last commit) that
/// llama-stack 0.7 no longer builds: they still resolve to the upstream operator's images (pinned
/// by digest like any other), run with the image's own config, and `image-overrides` can remap
/// them. Each with what replaces it in v1alpha2.
const LEGACY: &[(&str, &str, &str)] = &[
    (
        "remote-vllm",
        "docker.io/llamastack/distribution-remote-vllm:latest",
        "use distribution name \"starter\" with a vllm inference provider (providers.inference: {provider: vllm, endpoint: ...})",
    ),
    (
        "meta-reference-gpu",
        "docker.io/llamastack/distribution-meta-reference-gpu:latest",
        "use distribution name \"starter\" with a remote inference provider, or an image built for local GPU inference via distribution.image",
    ),
];

/// What replaces a name of the upstream operator's catalog that llama-stack no longer builds.
pub fn legacy_replacement(name: &str) -> Option<&'static str> {
    LEGACY
        .iter()
        .find(|(legacy, _, _)| *legacy == name)
        .map(|(_, _, instead)| *instead)
}

/// The warning for a [legacy name](legacy_replacement), for admission and the status alike.
pub fn legacy_warning(name: &str) -> Option<String> {
    let instead = legacy_replacement(name)?;
    Some(format!(
        "distribution {name:?} comes from the upstream operator's catalog and is no longer built by llama-stack; in v1alpha2, {instead}"
    ))
}

/// Names that older llama-stack releases used, that neither llama-stack 0.7 nor the upstream
/// operator's last catalog has, with what to use instead.
const REMOVED: &[(&str, &str)] = &[(
    "ollama",
    "use distribution name \"starter\" with an ollama inference provider (providers.inference: {provider: ollama, endpoint: ...})",
)];

/// Errors reading a catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The JSON is not a map of name to image.
    #[error("distributions.json must map distribution names to image references: {0}")]
    Parse(#[from] serde_json::Error),
    /// An entry has an empty name or image.
    #[error("distributions.json entry {name:?} has an empty name or image")]
    EmptyEntry {
        /// The offending name.
        name: String,
    },
}

/// Errors looking up a distribution name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The name existed in older llama-stack releases.
    #[error("distribution {name:?} no longer exists in llama-stack 0.7: {instead}")]
    Removed {
        /// The requested name.
        name: String,
        /// What to use instead.
        instead: &'static str,
    },
    /// The name is not in the catalog.
    #[error("unknown distribution {name:?}; known distributions: {}", known.join(", "))]
    Unknown {
        /// The requested name.
        name: String,
        /// The names the catalog knows, sorted.
        known: Vec<String>,
    },
}

/// An `image-overrides` entry that was not applied, with why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("image-overrides entry {key:?} ignored: {reason}")]
pub struct OverrideProblem {
    /// The entry's key (distribution name), or `<document>` for a document-level problem.
    pub key: String,
    /// Why it was not applied.
    pub reason: String,
}

/// Parses the operator ConfigMap's `image-overrides` (a YAML map of distribution name to image).
/// Valid entries are returned; every invalid one is reported with its key and the reason.
pub fn parse_image_overrides(yaml: &str) -> (BTreeMap<String, String>, Vec<OverrideProblem>) {
    let mut valid = BTreeMap::new();
    let mut problems = Vec::new();
    if yaml.trim().is_empty() {
        return (valid, problems);
    }
    let document: serde_json::Value = match serde_saphyr::from_str(yaml) {
        Ok(v) => v,
        Err(e) => {
            problems.push(OverrideProblem {
                key: "<document>".to_owned(),
                reason: format!("not valid YAML: {e}"),
            });
            return (valid, problems);
        }
    };
    let serde_json::Value::Object(entries) = document else {
        problems.push(OverrideProblem {
            key: "<document>".to_owned(),
            reason: "must be a map of distribution name to image reference".to_owned(),
        });
        return (valid, problems);
    };
    for (key, value) in entries {
        match value {
            serde_json::Value::String(image) => match ImageRef::parse(image.trim()) {
                Ok(_) => {
                    valid.insert(key, image.trim().to_owned());
                }
                Err(e) => problems.push(OverrideProblem {
                    key,
                    reason: e.to_string(),
                }),
            },
            other => problems.push(OverrideProblem {
                key,
                reason: format!(
                    "the value must be an image reference string, found {}",
                    json_kind(&other)
                ),
            }),
        }
    }
    (valid, problems)
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a bool",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a map",
    }
}

/// Distribution name -> image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    entries: BTreeMap<String, String>,
}

impl Catalog {
    /// Parses a `distributions.json` document.
    pub fn parse(json: &str) -> Result<Self, CatalogError> {
        let entries: BTreeMap<String, String> = serde_json::from_str(json)?;
        if let Some((name, _)) = entries
            .iter()
            .find(|(name, image)| name.trim().is_empty() || image.trim().is_empty())
        {
            return Err(CatalogError::EmptyEntry { name: name.clone() });
        }
        Ok(Self { entries })
    }

    /// The catalog embedded in the binary.
    pub fn embedded() -> Result<Self, CatalogError> {
        Self::parse(EMBEDDED_DISTRIBUTIONS_JSON)
    }

    /// The image of a distribution name: the catalog's (with `image-overrides`), else the
    /// upstream operator's image of a [legacy name](legacy_replacement).
    pub fn image(&self, name: &str) -> Result<&str, LookupError> {
        if let Some(image) = self.entries.get(name) {
            return Ok(image);
        }
        if let Some((_, image, _)) = LEGACY.iter().find(|(legacy, _, _)| *legacy == name) {
            return Ok(image);
        }
        if let Some((_, instead)) = REMOVED.iter().find(|(removed, _)| *removed == name) {
            return Err(LookupError::Removed {
                name: name.to_owned(),
                instead,
            });
        }
        Err(LookupError::Unknown {
            name: name.to_owned(),
            known: self.names().map(str::to_owned).collect(),
        })
    }

    /// The catalog with `image-overrides` applied (an override may also add a name).
    pub fn with_overrides(&self, overrides: &BTreeMap<String, String>) -> Self {
        let mut entries = self.entries.clone();
        entries.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        Self { entries }
    }

    /// Known names, sorted (without the upstream operator's legacy names).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Every name that resolves, legacy names included, with its image.
    pub fn available(&self) -> BTreeMap<String, String> {
        let mut all: BTreeMap<String, String> = LEGACY
            .iter()
            .map(|(name, image, _)| ((*name).to_owned(), (*image).to_owned()))
            .collect();
        all.extend(self.entries.clone());
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_has_the_llama_stack_0_7_3_distributions_pinned_to_the_release() {
        let catalog = Catalog::embedded().unwrap();
        let names: Vec<&str> = catalog.names().collect();
        assert_eq!(
            names,
            [
                "nvidia",
                "oci",
                "open-benchmark",
                "postgres-demo",
                "starter",
                "watsonx"
            ]
        );
        for name in names {
            let image = catalog.image(name).unwrap();
            assert!(
                image.ends_with(":0.7.3"),
                "{name} -> {image} is not pinned to the release tag"
            );
        }
    }

    #[test]
    fn removed_names_say_what_to_use_instead() {
        let catalog = Catalog::embedded().unwrap();
        let err = catalog.image("ollama").unwrap_err();
        assert!(matches!(err, LookupError::Removed { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("no longer exists in llama-stack 0.7"),
            "{text}"
        );
        assert!(text.contains("starter"), "{text}");
    }

    /// The upstream operator's last catalog (llamastack/llama-stack-k8s-operator,
    /// distributions.json): its names resolve to its images, and overrides remap them.
    #[test]
    fn the_upstream_catalog_names_resolve_to_its_images_and_can_be_remapped() {
        let catalog = Catalog::embedded().unwrap();
        for name in ["remote-vllm", "meta-reference-gpu"] {
            let image = catalog.image(name).unwrap();
            assert_eq!(
                image,
                format!("docker.io/llamastack/distribution-{name}:latest")
            );
            assert!(legacy_replacement(name).unwrap().contains("starter"));
            assert_eq!(
                catalog.available().get(name).map(String::as_str),
                Some(image)
            );
        }
        assert_eq!(legacy_replacement("starter"), None);
        let mirror = BTreeMap::from([(
            "remote-vllm".to_owned(),
            "mirror.corp/llamastack/remote-vllm:0.2.23".to_owned(),
        )]);
        let remapped = catalog.with_overrides(&mirror);
        assert_eq!(
            remapped.image("remote-vllm").unwrap(),
            "mirror.corp/llamastack/remote-vllm:0.2.23"
        );
        assert_eq!(
            remapped.available()["remote-vllm"],
            "mirror.corp/llamastack/remote-vllm:0.2.23"
        );
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = Catalog::embedded().unwrap().image("startr").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown distribution \"startr\"; known distributions: nvidia, oci, open-benchmark, postgres-demo, starter, watsonx"
        );
    }

    #[test]
    fn overrides_replace_and_add_and_report_bad_entries() {
        let yaml = "starter: mirror.corp/lls/starter@sha256:0000000000000000000000000000000000000000000000000000000000000000\nrh-dev: quay.io/rh/dev:1\nbroken: Not A/Reference\nnumber: 5\n";
        let (valid, problems) = parse_image_overrides(yaml);
        assert_eq!(valid.len(), 2);
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0]
                .starts_with("image-overrides entry \"broken\" ignored: invalid image reference"),
            "{problems:?}"
        );
        assert_eq!(
            problems[1],
            "image-overrides entry \"number\" ignored: the value must be an image reference string, found a number"
        );
        let catalog = Catalog::embedded().unwrap().with_overrides(&valid);
        assert!(
            catalog
                .image("starter")
                .unwrap()
                .starts_with("mirror.corp/")
        );
        assert_eq!(catalog.image("rh-dev").unwrap(), "quay.io/rh/dev:1");
        assert!(catalog.image("nvidia").unwrap().ends_with(":0.7.3"));
        let (_, problems) = parse_image_overrides("- a\n- b\n");
        assert_eq!(problems[0].key, "<document>");
    }

    #[test]
    fn malformed_catalogs_are_errors() {
        assert!(matches!(
            Catalog::parse("[\"starter\"]"),
            Err(CatalogError::Parse(_))
        ));
        assert!(matches!(
            Catalog::parse(r#"{"starter": ""}"#),
            Err(CatalogError::EmptyEntry { name }) if name == "starter"
        ));
    }
}
