//! Base configs embedded in the binary, one per catalog distribution OGX publishes (Open Data
//! Hub's images carry their own), of the release the catalog pins ([`ServerRelease::CATALOG`],
//! `configs-ogx/<name>/config.yaml`, exported from that release's wheel by
//! `scripts/update-ogx-data.sh`).

use std::sync::{Arc, OnceLock};

use crate::base_config::{BaseConfig, BaseConfigError, ConfigSource, parse_base_config};
use crate::server_line::ServerRelease;

/// (distribution name, config.yaml).
pub const EMBEDDED_CONFIGS: &[(&str, &str)] = &[
    (
        "postgres-demo",
        include_str!("../../configs-ogx/postgres-demo/config.yaml"),
    ),
    (
        "starter",
        include_str!("../../configs-ogx/starter/config.yaml"),
    ),
];

/// A base config parsed from the embedded text, or why it cannot be used.
pub type Parsed = Result<Arc<BaseConfig>, BaseConfigError>;

/// The embedded config of a distribution name, parsed and validated once per process.
pub fn embedded_base_config(name: &str) -> Option<Parsed> {
    static PARSED: OnceLock<Vec<(&str, Parsed)>> = OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        EMBEDDED_CONFIGS
            .iter()
            .map(|(name, yaml)| {
                let config = parse_base_config(yaml.as_bytes(), None, ConfigSource::Embedded).map(
                    |config| BaseConfig {
                        server: Some(ServerRelease::CATALOG),
                        ..config
                    },
                );
                (*name, config.map(Arc::new))
            })
            .collect()
    });
    parsed
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, config)| config.clone())
}

/// The embedded config of a distribution name.
pub fn embedded_config(name: &str) -> Option<&'static str> {
    EMBEDDED_CONFIGS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    /// Open Data Hub's names carry their configs in their images (`rh` in its labels, `rh-dev`
    /// in its file system): nothing to embed for them.
    #[test]
    fn every_catalog_name_but_odh_s_has_a_valid_embedded_config_and_no_more() {
        let catalog = Catalog::embedded().unwrap();
        let names: Vec<&str> = catalog
            .names()
            .filter(|n| !crate::catalog::ODH_NAMES.contains(n))
            .collect();
        let embedded: Vec<&str> = EMBEDDED_CONFIGS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, embedded);
        for (name, yaml) in EMBEDDED_CONFIGS {
            let config = parse_base_config(yaml.as_bytes(), None, ConfigSource::Embedded)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(config.version, 2, "{name}");
            assert!(
                yaml.contains(&format!("distro_name: {name}")),
                "{name} config is for another distribution"
            );
        }
    }

    #[test]
    fn embedded_configs_are_parsed_once_per_process() {
        let first = embedded_base_config("starter").unwrap().unwrap();
        let again = embedded_base_config("starter").unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again), "parsed again");
        assert_eq!(first.yaml.as_ref(), embedded_config("starter").unwrap());
        assert!(first.document.contains_key("providers"));
        assert!(embedded_base_config("no-such-distribution").is_none());
    }

    #[test]
    fn the_cache_weight_counts_the_parsed_tree_too() {
        let config = embedded_base_config("starter").unwrap().unwrap();
        // The tree holds every key and string of the text plus per-node overhead.
        assert!(
            config.heap_bytes() > 2 * config.yaml.len(),
            "{} bytes for {} bytes of text",
            config.heap_bytes(),
            config.yaml.len()
        );
    }
}
