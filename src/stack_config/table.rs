//! The provider tables of the two server lines: llama-stack 0.7.3 (`providers.json`, regenerated
//! by `scripts/update-llama-stack-data.sh`) and every OGX 1.x release (`providers-ogx/`, one file
//! per run of releases whose tables are the same, by `scripts/update-ogx-data.sh`, each from that
//! release's own package). Per API and provider type: the config keys and which of them takes a
//! URL or a secret.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
use serde::Deserialize;

/// One provider type of one API.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    /// `inline` or `remote`.
    pub kind: String,
    /// Keys of its config schema (by alias).
    #[serde(default)]
    pub config_keys: Vec<String>,
    /// The key taking the service URL.
    #[serde(default)]
    pub url_field: Option<String>,
    /// The key taking the API key or token.
    #[serde(default)]
    pub secret_field: Option<String>,
    /// Connection given as host/port/db/user instead of a URL.
    #[serde(default)]
    pub host_port: bool,
    /// Keys the server requires.
    #[serde(default)]
    pub required_keys: Vec<String>,
    /// APIs that must be served for the provider to start.
    #[serde(default)]
    pub api_dependencies: Vec<String>,
    /// Set when the provider type can no longer be used.
    #[serde(default)]
    pub deprecation_error: Option<String>,
    /// Set when the provider type is deprecated.
    #[serde(default)]
    pub deprecation_warning: Option<String>,
}

/// The whole table.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderTable {
    /// Server version the table was generated from.
    pub llama_stack_version: String,
    /// The server line (`ogx`; absent in the llama-stack table).
    #[serde(default)]
    pub server: Option<String>,
    /// Every release whose table this is, oldest first (OGX; empty in the llama-stack table,
    /// which is its version's alone).
    #[serde(default)]
    pub releases: Vec<String>,
    /// API (llama-stack name) -> provider type -> info.
    pub providers: BTreeMap<String, BTreeMap<String, ProviderInfo>>,
}

const LLAMA_STACK: &str = include_str!("../../providers.json");
/// The OGX tables, oldest first, each named after the first release of its run.
const OGX: [&str; 9] = [
    include_str!("../../providers-ogx/1.0.0.json"),
    include_str!("../../providers-ogx/1.0.3.json"),
    include_str!("../../providers-ogx/1.1.0.json"),
    include_str!("../../providers-ogx/1.2.0.json"),
    include_str!("../../providers-ogx/1.2.5.json"),
    include_str!("../../providers-ogx/1.3.0.json"),
    include_str!("../../providers-ogx/1.3.1.json"),
    include_str!("../../providers-ogx/1.4.0.json"),
    include_str!("../../providers-ogx/1.5.0.json"),
];

/// Parses an embedded table.
fn parse(text: &str) -> ProviderTable {
    #[expect(
        clippy::expect_used,
        reason = "a startup invariant: the embedded tables are generated and checked by the unit tests"
    )]
    serde_json::from_str(text).expect("embedded provider table is valid")
}

/// The OGX tables, parsed once.
fn ogx_tables() -> &'static [ProviderTable] {
    static TABLES: OnceLock<Vec<ProviderTable>> = OnceLock::new();
    TABLES.get_or_init(|| OGX.iter().map(|text| parse(text)).collect())
}

impl ProviderTable {
    /// The llama-stack 0.7.3 table (the llama-stack line).
    pub fn embedded() -> &'static ProviderTable {
        static TABLE: OnceLock<ProviderTable> = OnceLock::new();
        TABLE.get_or_init(|| parse(LLAMA_STACK))
    }

    /// The table of the OGX release the catalog pins (the OGX line).
    pub fn ogx() -> &'static ProviderTable {
        let pinned = ServerRelease::CATALOG.version;
        Self::ogx_release(pinned.unwrap_or(ServerVersion::new(1, 3, 0)))
    }

    /// The table of an OGX release: the one that lists it; for a release no table lists, the
    /// table of the newest release before it (a release newer than this operator), or the
    /// oldest table (a release before 1.0).
    pub fn ogx_release(version: ServerVersion) -> &'static ProviderTable {
        let tables = ogx_tables();
        tables
            .iter()
            .rev()
            .find(|table| table.first_release().is_some_and(|first| first <= version))
            .or_else(|| tables.first())
            .unwrap_or_else(|| Self::embedded())
    }

    /// The table of a line.
    pub fn for_line(line: ServerLine) -> &'static ProviderTable {
        match line {
            ServerLine::LlamaStack => Self::embedded(),
            ServerLine::Ogx => Self::ogx(),
        }
    }

    /// The table of the server a base config belongs to: its OGX release's, when the image
    /// tells one; the pinned OGX release's for an OGX image of unknown version; the llama-stack
    /// line's when nothing says (every image before OGX).
    pub fn for_server(server: Option<&ServerRelease>) -> &'static ProviderTable {
        match server {
            Some(ServerRelease {
                line: ServerLine::Ogx,
                version: Some(version),
                ..
            }) => Self::ogx_release(*version),
            other => Self::for_line(other.map_or(ServerLine::LlamaStack, |s| s.line)),
        }
    }

    /// The first release the table is for.
    fn first_release(&self) -> Option<ServerVersion> {
        ServerVersion::parse(&self.llama_stack_version)
    }

    /// Whether the table was exported from this release's own package (or one whose table is
    /// the same). The llama-stack table lists only its own version.
    pub fn lists(&self, version: ServerVersion) -> bool {
        if self.releases.is_empty() {
            return self.first_release() == Some(version);
        }
        self.releases
            .iter()
            .any(|release| ServerVersion::parse(release) == Some(version))
    }

    /// A warning when the table stands in for a release it was not exported from (an OGX
    /// release newer than this operator's tables): what the image runs and whose table checks
    /// its providers.
    pub fn stand_in_warning(&self, server: Option<&ServerRelease>) -> Option<String> {
        let server = server?;
        let version = server.version?;
        let known = ogx_tables().iter().any(|table| table.lists(version));
        (server.line == ServerLine::Ogx && self.line() == ServerLine::Ogx && !known)
            .then(|| {
                format!(
                    "the image runs OGX {version}, which this operator has no provider table for; its providers are checked against {}'s",
                    self.server_name()
                )
            })
    }

    /// The line of the server the table describes.
    pub fn line(&self) -> ServerLine {
        self.server
            .as_deref()
            .and_then(ServerLine::parse)
            .unwrap_or(ServerLine::LlamaStack)
    }

    /// The release the table was exported from, for a base config that does not say which
    /// server reads it (a file given to `render --base-config`, a test's config).
    pub fn release(&self) -> ServerRelease {
        ServerRelease {
            line: self.line(),
            version: ServerVersion::parse(&self.llama_stack_version),
            evidence: Evidence::Catalog,
            suffixed: false,
        }
    }

    /// The server the table describes, for messages: `llama-stack 0.7.3`, `OGX 1.3.0`, and
    /// `OGX 1.2.0 to 1.2.4` for a table several releases share.
    pub fn server_name(&self) -> String {
        match self.releases.as_slice() {
            [first, .., last] => format!("{} {first} to {last}", self.line().display_name()),
            _ => format!(
                "{} {}",
                self.line().display_name(),
                self.llama_stack_version
            ),
        }
    }

    /// The provider-hosting APIs of the table's server.
    pub fn apis(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// Info of a provider type for an API.
    pub fn get(&self, api: &str, provider_type: &str) -> Option<&ProviderInfo> {
        self.providers.get(api)?.get(provider_type)
    }

    /// Provider types of an API, sorted.
    pub fn types(&self, api: &str) -> Vec<&str> {
        self.providers
            .get(api)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_embedded_table_names_its_own_line_and_release() {
        assert_eq!(ProviderTable::embedded().line(), ServerLine::LlamaStack);
        assert_eq!(ProviderTable::embedded().server_name(), "llama-stack 0.7.3");
        assert_eq!(ProviderTable::ogx().line(), ServerLine::Ogx);
        assert_eq!(ProviderTable::ogx().server_name(), "OGX 1.3.0");
        assert!(ProviderTable::ogx().apis().all(|api| api != "safety"));
    }

    /// The embedded array names every file of `providers-ogx/` (a regenerated directory with a
    /// new run fails here until the array lists it), each file is named after its first
    /// release, and the runs are in order without overlap.
    #[test]
    fn the_ogx_tables_are_every_file_of_their_directory_in_release_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("providers-ogx");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort_by_key(|name| ServerVersion::parse(name.trim_end_matches(".json")));
        let embedded: Vec<String> = ogx_tables()
            .iter()
            .map(|t| format!("{}.json", t.llama_stack_version))
            .collect();
        assert_eq!(embedded, files);
        let mut previous = None;
        for table in ogx_tables() {
            assert_eq!(table.line(), ServerLine::Ogx);
            assert_eq!(table.releases.first(), Some(&table.llama_stack_version));
            for release in &table.releases {
                let version = ServerVersion::parse(release).unwrap();
                assert!(previous < Some(version), "{release} out of order");
                previous = Some(version);
            }
        }
    }

    #[test]
    fn an_ogx_release_gets_the_table_that_lists_it_else_the_nearest_before_it() {
        for table in ogx_tables() {
            for release in &table.releases {
                let version = ServerVersion::parse(release).unwrap();
                assert!(
                    std::ptr::eq(ProviderTable::ogx_release(version), table),
                    "{release}"
                );
            }
        }
        let at = |text: &str| ProviderTable::ogx_release(ServerVersion::parse(text).unwrap());
        // RHOAI 3.5 ships OGX 1.2.2.
        assert_eq!(at("1.2.2").server_name(), "OGX 1.2.0 to 1.2.4");
        assert_eq!(at("1.3.0").server_name(), "OGX 1.3.0");
        assert_eq!(at("1.9.7").server_name(), "OGX 1.5.0");
        assert_eq!(at("0.8.0").server_name(), "OGX 1.0.0 to 1.0.2");
        let ogx = |version| ServerRelease {
            line: ServerLine::Ogx,
            version: Some(ServerVersion::parse(version).unwrap()),
            evidence: Evidence::OgxVersionLabel,
            suffixed: false,
        };
        assert_eq!(
            ProviderTable::for_server(Some(&ogx("1.1.2"))).server_name(),
            "OGX 1.1.0 to 1.1.3"
        );
        let unknown_ogx = ServerRelease {
            version: None,
            ..ogx("1.0.0")
        };
        assert!(std::ptr::eq(
            ProviderTable::for_server(Some(&unknown_ogx)),
            ProviderTable::ogx()
        ));
        assert!(std::ptr::eq(
            ProviderTable::for_server(None),
            ProviderTable::embedded()
        ));
        assert_eq!(at("1.2.2").stand_in_warning(Some(&ogx("1.2.2"))), None);
        let newer = at("1.9.7").stand_in_warning(Some(&ogx("1.9.7"))).unwrap();
        assert!(
            newer.contains("OGX 1.9.7") && newer.contains("OGX 1.5.0's"),
            "{newer}"
        );
    }

    /// What the releases differ in, read from their packages: a provider added in one release is
    /// absent from the tables before it.
    #[test]
    fn each_release_knows_only_its_own_providers() {
        let at = |text: &str| ProviderTable::ogx_release(ServerVersion::parse(text).unwrap());
        // remote::deepseek came in 1.3.0; remote::exa-search in 1.5.0.
        assert!(at("1.2.5").get("inference", "remote::deepseek").is_none());
        assert!(at("1.3.0").get("inference", "remote::deepseek").is_some());
        assert!(
            at("1.4.1")
                .get("tool_runtime", "remote::exa-search")
                .is_none()
        );
        assert!(
            at("1.5.0")
                .get("tool_runtime", "remote::exa-search")
                .is_some()
        );
    }
}
