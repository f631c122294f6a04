//! Distribution names and the images they run, from `distributions.json`.

use std::collections::BTreeMap;

use crate::image_ref::ImageRef;

/// `distributions.json` as shipped in the binary: the distributions OGX publishes as images
/// (`docker.io/ogxai/distribution-*`), each pinned to the tag of the release the embedded configs
/// come from ([`ServerRelease::CATALOG`](crate::server_line::ServerRelease::CATALOG)); and the
/// two names Open Data Hub and Red Hat OpenShift AI users write ([`ODH_NAMES`]), each to the image
/// the Open Data Hub build of its operator deploys for it.
pub const EMBEDDED_DISTRIBUTIONS_JSON: &str = include_str!("../../distributions.json");

/// The names of Open Data Hub's builds, whose images carry their own configs (no embedded
/// config): `rh-dev`, the llama-stack image the ODH and RHOAI builds of the upstream operator
/// deploy for it (`quay.io/opendatahub/llama-stack:odh`: a llama-stack 0.x server running the
/// `run.yaml` it carries, without config labels); `rh`, the OGX image the ODH build of the OGX
/// operator deploys (`quay.io/opendatahub/odh-ogx-core`, labelled `com.ogx.*` with distribution
/// name `rh`).
pub const ODH_NAMES: [&str; 2] = ["rh", "rh-dev"];

/// The catalog name an `OGXServer`'s `distribution.name` is looked up as: `rh-dev` is `rh` there,
/// as the ODH and RHOAI builds of the OGX operator give both names their one OGX image (so a
/// mirror for `OGXServer`s overrides `rh`); every other name is itself.
pub fn ogx_server_name(name: &str) -> &str {
    match name {
        "rh-dev" => "rh",
        _ => name,
    }
}

/// Names no published image carries any more, with what to write instead. llama-stack 0.7's
/// other distributions and the upstream operator's own names were published only under
/// `docker.io/llamastack`, an organisation Docker Hub no longer has (June 2026); OGX publishes
/// `starter` and `postgres-demo` alone. None of them maps to another image: each ran a config of
/// its own that no published image reproduces. A stack already pinned to one of those images
/// keeps its pin (see the controller's plan).
const REMOVED: &[(&str, &str)] = &[
    (
        "nvidia",
        "use distribution name \"starter\" with an nvidia inference provider (providers.inference: {provider: nvidia, endpoint: ...}), or distribution.image with an image you build",
    ),
    (
        "oci",
        "use distribution name \"starter\" with an oci inference provider (providers.inference: {provider: oci, settings: ...}), or distribution.image with an image you build",
    ),
    (
        "watsonx",
        "use distribution name \"starter\" with a watsonx inference provider (providers.inference: {provider: watsonx, endpoint: ...}), or distribution.image with an image you build",
    ),
    (
        "open-benchmark",
        "use distribution name \"starter\" with the inference providers to compare, or distribution.image with an image you build",
    ),
    (
        "remote-vllm",
        "use distribution name \"starter\" with a vllm inference provider (providers.inference: {provider: vllm, endpoint: ...})",
    ),
    (
        "meta-reference-gpu",
        "use distribution name \"starter\" with a remote inference provider, or distribution.image with an image built for local GPU inference",
    ),
    (
        "ollama",
        "use distribution name \"starter\" with an ollama inference provider (providers.inference: {provider: ollama, endpoint: ...})",
    ),
];

/// What replaces a distribution name no published image carries any more.
pub fn removed_replacement(name: &str) -> Option<&'static str> {
    REMOVED
        .iter()
        .find(|(removed, _)| *removed == name)
        .map(|(_, instead)| *instead)
}

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
    /// The name's image is no longer published.
    #[error(
        "distribution {name:?} has no published image any more (OGX publishes only \"starter\" and \"postgres-demo\", as docker.io/ogxai/distribution-*): {instead}"
    )]
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

    /// The image of a distribution name: the catalog's, with `image-overrides` (which may also
    /// give an image to a removed name: a mirror that still has it).
    pub fn image(&self, name: &str) -> Result<&str, LookupError> {
        if let Some(image) = self.entries.get(name) {
            return Ok(image);
        }
        if let Some(instead) = removed_replacement(name) {
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

    /// Known names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Every name that resolves, with its image.
    pub fn available(&self) -> BTreeMap<String, String> {
        self.entries.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ogx-ai/ogx's release workflow publishes exactly two distributions, tagged with the
    /// release; the OGX operator's v0.14 catalog pins both at 1.3.0.
    #[test]
    fn embedded_catalog_names_the_published_ogx_images_pinned_to_the_release() {
        let catalog = Catalog::embedded().unwrap();
        let names: Vec<&str> = catalog.names().collect();
        assert_eq!(names, ["postgres-demo", "rh", "rh-dev", "starter"]);
        for name in names.iter().filter(|n| !ODH_NAMES.contains(n)) {
            let image = catalog.image(name).unwrap();
            assert_eq!(image, format!("docker.io/ogxai/distribution-{name}:1.3.0"));
        }
        assert!(
            catalog
                .available()
                .values()
                .all(|image| !image.contains("/llamastack/")),
            "the deleted organisation is named nowhere: {:?}",
            catalog.available()
        );
    }

    /// The images Open Data Hub's operators deploy for the names their users write:
    /// opendatahub-io/ogx-k8s-operator `config/overlays/odh/params.env` @ 347c2bf
    /// (`RELATED_IMAGE_RH_DISTRIBUTION=quay.io/opendatahub/odh-ogx-core:latest`, which its
    /// `pkg/cluster/cluster.go` @ 179d18e gives to `rh` and `rh-dev`), and the llama-stack image
    /// the ODH and RHOAI 2.x builds of the upstream operator deploy for `rh-dev`.
    #[test]
    fn odh_names_are_the_images_odh_deploys_for_them() {
        let catalog = Catalog::embedded().unwrap();
        assert_eq!(
            catalog.image("rh").unwrap(),
            "quay.io/opendatahub/odh-ogx-core:latest"
        );
        assert_eq!(
            catalog.image("rh-dev").unwrap(),
            "quay.io/opendatahub/llama-stack:odh"
        );
        assert_eq!(ogx_server_name("rh-dev"), "rh");
        for name in ["rh", "starter", "postgres-demo", "startr"] {
            assert_eq!(ogx_server_name(name), name);
        }
    }

    /// llama-stack 0.7's other distributions and the upstream operator's last catalog
    /// (llamastack/llama-stack-k8s-operator, distributions.json: remote-vllm,
    /// meta-reference-gpu) are refused with what to write instead; a mirror that still has one
    /// can give it back by image-overrides.
    #[test]
    fn unpublished_names_say_what_to_write_instead_and_overrides_can_restore_them() {
        let catalog = Catalog::embedded().unwrap();
        for name in [
            "nvidia",
            "oci",
            "watsonx",
            "open-benchmark",
            "remote-vllm",
            "meta-reference-gpu",
            "ollama",
        ] {
            let err = catalog.image(name).unwrap_err();
            assert!(matches!(err, LookupError::Removed { .. }), "{err:?}");
            let text = err.to_string();
            assert!(text.contains("has no published image"), "{text}");
            assert!(text.contains("use distribution name \"starter\""), "{text}");
        }
        assert_eq!(removed_replacement("starter"), None);
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
            "unknown distribution \"startr\"; known distributions: postgres-demo, rh, rh-dev, starter"
        );
    }

    #[test]
    fn overrides_replace_and_add_and_report_bad_entries() {
        let yaml = "starter: mirror.corp/lls/starter@sha256:0000000000000000000000000000000000000000000000000000000000000000\nmy-build: quay.io/rh/dev:1\nbroken: Not A/Reference\nnumber: 5\n";
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
        assert_eq!(catalog.image("my-build").unwrap(), "quay.io/rh/dev:1");
        assert!(catalog.image("postgres-demo").unwrap().ends_with(":1.3.0"));
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
