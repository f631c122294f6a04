//! The provider tables of the two server lines: llama-stack 0.7.3 (`providers.json`, regenerated
//! by `scripts/update-llama-stack-data.sh`) and the OGX release the catalog pins
//! (`providers-ogx.json`, by `scripts/update-ogx-data.sh`). Per API and provider type: the config
//! keys and which of them takes a URL or a secret.

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
    /// API (llama-stack name) -> provider type -> info.
    pub providers: BTreeMap<String, BTreeMap<String, ProviderInfo>>,
}

const LLAMA_STACK: &str = include_str!("../../providers.json");
const OGX: &str = include_str!("../../providers-ogx.json");

/// Parses an embedded table once.
fn parsed(cell: &'static OnceLock<ProviderTable>, text: &str) -> &'static ProviderTable {
    cell.get_or_init(|| {
        #[expect(
            clippy::expect_used,
            reason = "a startup invariant: the embedded tables are generated and checked by the unit tests"
        )]
        serde_json::from_str(text).expect("embedded provider table is valid")
    })
}

impl ProviderTable {
    /// The llama-stack 0.7.3 table (the llama-stack line).
    pub fn embedded() -> &'static ProviderTable {
        static TABLE: OnceLock<ProviderTable> = OnceLock::new();
        parsed(&TABLE, LLAMA_STACK)
    }

    /// The table of the OGX release the catalog pins (the OGX line).
    pub fn ogx() -> &'static ProviderTable {
        static TABLE: OnceLock<ProviderTable> = OnceLock::new();
        parsed(&TABLE, OGX)
    }

    /// The table of a line.
    pub fn for_line(line: ServerLine) -> &'static ProviderTable {
        match line {
            ServerLine::LlamaStack => Self::embedded(),
            ServerLine::Ogx => Self::ogx(),
        }
    }

    /// The table of the server a base config belongs to (the llama-stack line when nothing
    /// says: every image before OGX).
    pub fn for_server(server: Option<&ServerRelease>) -> &'static ProviderTable {
        Self::for_line(server.map_or(ServerLine::LlamaStack, |s| s.line))
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
        }
    }

    /// The server the table describes, for messages: `llama-stack 0.7.3`, `OGX 1.3.0`.
    pub fn server_name(&self) -> String {
        format!(
            "{} {}",
            self.line().display_name(),
            self.llama_stack_version
        )
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
}
