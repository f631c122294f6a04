//! Base configs embedded in the binary, one per catalog distribution, matching the pinned
//! llama-stack release (`configs/<name>/config.yaml`).

/// (distribution name, config.yaml).
pub const EMBEDDED_CONFIGS: &[(&str, &str)] = &[
    ("nvidia", include_str!("../../configs/nvidia/config.yaml")),
    ("oci", include_str!("../../configs/oci/config.yaml")),
    (
        "open-benchmark",
        include_str!("../../configs/open-benchmark/config.yaml"),
    ),
    (
        "postgres-demo",
        include_str!("../../configs/postgres-demo/config.yaml"),
    ),
    ("starter", include_str!("../../configs/starter/config.yaml")),
    ("watsonx", include_str!("../../configs/watsonx/config.yaml")),
];

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
    use crate::base_config::{ConfigSource, parse_base_config};
    use crate::catalog::Catalog;

    #[test]
    fn every_catalog_name_has_a_valid_embedded_config_and_no_more() {
        let catalog = Catalog::embedded().unwrap();
        let names: Vec<&str> = catalog.names().collect();
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
}
