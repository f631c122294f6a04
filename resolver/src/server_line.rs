//! Which server an image runs: the llama-stack line (0.x, the `llama` command, `LLAMA_STACK_*`
//! variables) or the OGX line (the project's new name from 0.8 on: the `ogx` command, `OGX_*`
//! variables, strict TLS from 1.2). Told from the image's labels first; an image that says
//! nothing is left to the caller (catalog, the user's field, then the llama-stack line).

use std::fmt;

use serde_json::{Map, Value};

/// OGX images: `com.ogx.config.<file>` holds the base64 of each config file (any such label
/// means OGX).
pub const OGX_CONFIG_PREFIX: &str = "com.ogx.config.";
/// `com.ogx.distribution.version`: the server version OGX's image build records.
pub const LABEL_OGX_VERSION: &str = "com.ogx.distribution.version";
/// `org.opencontainers.image.version`: the image version (OGX's build sets the server version).
pub const LABEL_OCI_VERSION: &str = "org.opencontainers.image.version";
/// Prefix of the labels this project (and the upstream spec) put on llama-stack images.
const LLAMA_STACK_LABEL_PREFIX: &str = "io.llamastack.config.";

/// The first OGX release published under the new name, with the `ogx` module and command.
const FIRST_OGX: ServerVersion = ServerVersion {
    major: 0,
    minor: 8,
    patch: 0,
};

/// The release from which the server refuses to start without TLS unless told it may
/// (`--insecure` or `server.insecure: true`).
const STRICT_TLS: ServerVersion = ServerVersion {
    major: 1,
    minor: 2,
    patch: 0,
};

/// `0.0`, which no release of either line is: Red Hat's Konflux builds of the ODH OGX image
/// (`red-hat-data-services/ogx-distribution`, `Dockerfile.konflux` with `konflux/cpu-ubi9.conf`'s
/// `OGX_VERSION=0.0`, on its main and rhoai-3.5 branches) write it into both version labels. Taken
/// as a version it would make those OGX images llama-stack 0.0; it says nothing instead.
const UNSET_VERSION: ServerVersion = ServerVersion {
    major: 0,
    minor: 0,
    patch: 0,
};

/// The two lines of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerLine {
    /// llama-stack 0.x (up to 0.7): `llama stack run`, `LLAMA_STACK_*`, state in `~/.llama`.
    LlamaStack,
    /// OGX (0.8 and 1.x): `ogx run`, `OGX_*`, state in `~/.ogx`.
    Ogx,
}

impl ServerLine {
    /// The name the status and the CRD use (`llama-stack`, `ogx`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LlamaStack => "llama-stack",
            Self::Ogx => "ogx",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "llama-stack" => Some(Self::LlamaStack),
            "ogx" => Some(Self::Ogx),
            _ => None,
        }
    }

    /// The line a release version belongs to.
    pub fn of_version(version: ServerVersion) -> Self {
        if version >= FIRST_OGX {
            Self::Ogx
        } else {
            Self::LlamaStack
        }
    }

    /// How people call the server of this line in messages.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::LlamaStack => "llama-stack",
            Self::Ogx => "OGX",
        }
    }
}

/// A server release version, `major.minor.patch` (pre-release suffixes such as `rc1` dropped:
/// they behave as their release).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerVersion {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl ServerVersion {
    /// A version.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Parses `1.3.0`, `v0.7.3`, `1.3.2rc1` and `1.3` (patch 0); anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts = text.splitn(3, '.');
        // Digits, then (on the patch only) a pre-release or build suffix: `rc1`, `a1`, `b2`,
        // `.dev0`, `+local`.
        let number = |part: Option<&str>, suffix_allowed: bool| -> Option<u32> {
            let part: &str = part?;
            let end = part
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(part.len());
            let (number, rest) = part.split_at(end);
            let suffix_ok = rest.is_empty()
                || (suffix_allowed && rest.starts_with(['r', 'a', 'b', '+']))
                || (suffix_allowed && rest.starts_with(".dev"));
            if number.is_empty() || !suffix_ok {
                return None;
            }
            number.parse().ok()
        };
        let major = number(parts.next(), false)?;
        let minor = number(parts.next(), false)?;
        let patch = match parts.next() {
            None => 0,
            part => number(part, true)?,
        };
        Some(Self::new(major, minor, patch))
    }

    /// Whether `text`, a version [`parse`](Self::parse) reads, carries a suffix after its
    /// numbers (`rc1`, `.dev0`, `+rhai1`): a build of the release rather than the release.
    pub fn is_suffixed(text: &str) -> bool {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        Self::parse(text).is_some()
            && text
                .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
                .contains(|c: char| !c.is_ascii_digit() && c != '.')
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// How the line was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Evidence {
    /// `com.ogx.distribution.version`.
    OgxVersionLabel,
    /// `com.ogx.config.*` labels without a version.
    OgxConfigLabels,
    /// `io.llamastack.config.*` labels.
    LlamaStackLabels,
    /// `org.opencontainers.image.version` of a 0.x release.
    OciVersionLabel,
    /// The operator's catalog (the release its embedded configs come from).
    Catalog,
    /// The user said so in the spec.
    Spec,
    /// Nothing said: the llama-stack line, as every image before OGX.
    Assumed,
}

impl Evidence {
    /// Where the answer came from, for the status and `resolve`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OgxVersionLabel => "label com.ogx.distribution.version",
            Self::OgxConfigLabels => "labels com.ogx.config.*",
            Self::LlamaStackLabels => "labels io.llamastack.config.*",
            Self::OciVersionLabel => "label org.opencontainers.image.version",
            Self::Catalog => "catalog",
            Self::Spec => "spec",
            Self::Assumed => "assumed (the image says nothing)",
        }
    }
}

/// The server an image runs: its line, its version when known, and how that was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ServerRelease {
    /// The line.
    pub line: ServerLine,
    /// The version, when a label or the catalog gives it.
    pub version: Option<ServerVersion>,
    /// How the line was told.
    pub evidence: Evidence,
    /// Whether the version label carried a pre-release, `.dev` or `+local` suffix: a build of
    /// that release (a midstream or development one), which may have what the release lacks.
    pub suffixed: bool,
}

impl Default for ServerRelease {
    /// [`ServerRelease::ASSUMED`].
    fn default() -> Self {
        Self::ASSUMED
    }
}

impl ServerRelease {
    /// The release the embedded catalog pins: OGX 1.3.0, the release the OGX operator's latest
    /// catalog (v0.14) deploys, published as `docker.io/ogxai/distribution-*:1.3.0`.
    pub const CATALOG: Self = Self {
        line: ServerLine::Ogx,
        version: Some(ServerVersion::new(1, 3, 0)),
        evidence: Evidence::Catalog,
        suffixed: false,
    };

    /// What is assumed of an image that says nothing: the llama-stack line, how every image
    /// before OGX ran (and how v1alpha1 users' own images run today).
    pub const ASSUMED: Self = Self {
        line: ServerLine::LlamaStack,
        version: None,
        evidence: Evidence::Assumed,
        suffixed: false,
    };

    /// Whether the server refuses plain HTTP unless told it may: OGX from 1.2.0. An OGX image of
    /// unknown version is taken to be strict (telling a strict server is harmless in a config).
    pub fn requires_tls_opt_out(&self) -> bool {
        self.line == ServerLine::Ogx && self.version.is_none_or(|v| v >= STRICT_TLS)
    }

    /// Whether the server takes the `--insecure` flag (OGX 1.2.0 and later; older ones stop at
    /// an unknown flag).
    pub fn takes_insecure_flag(&self) -> bool {
        self.line == ServerLine::Ogx && self.version.is_some_and(|v| v >= STRICT_TLS)
    }

    /// Whether the image's server is OGX `first` or later, as far as the image (or the user) told:
    /// `None` when its release is assumed (the image says nothing), taken from the catalog (at
    /// admission, before the image is read), or an OGX release without a version. For a change
    /// that only some releases read, judged alike wherever it is asked.
    pub fn told_ogx_since(&self, first: ServerVersion) -> Option<bool> {
        if matches!(self.evidence, Evidence::Assumed | Evidence::Catalog) {
            return None;
        }
        match self.line {
            ServerLine::LlamaStack => Some(false),
            ServerLine::Ogx => self.version.map(|v| v >= first),
        }
    }

    /// `ogx 1.3.0`, `llama-stack 0.7.3`, `ogx` (version unknown).
    pub fn describe(&self) -> String {
        match self.version {
            Some(v) => format!("{} {v}", self.line.as_str()),
            None => self.line.as_str().to_owned(),
        }
    }
}

/// What an image's labels say about its server, or `None` when they say nothing.
///
/// `com.ogx.distribution.version` decides first (OGX's build also back-fills 0.x llama-stack
/// releases under it, which stay on the llama-stack line); then any `com.ogx.config.*` label
/// means OGX; then `io.llamastack.config.*` means llama-stack; then an
/// `org.opencontainers.image.version` of 0.x before 0.8 means llama-stack. Other image versions
/// say nothing: base images set that label to their own versions.
pub fn from_labels(labels: Option<&Map<String, Value>>) -> Option<ServerRelease> {
    let labels = labels?;
    let text = |key: &str| labels.get(key).and_then(Value::as_str);
    let version_of = |key: &str| {
        text(key)
            .and_then(ServerVersion::parse)
            .filter(|v| *v != UNSET_VERSION)
    };
    let oci_version = version_of(LABEL_OCI_VERSION);
    if let Some(version) = version_of(LABEL_OGX_VERSION) {
        return Some(ServerRelease {
            line: ServerLine::of_version(version),
            version: Some(version),
            evidence: Evidence::OgxVersionLabel,
            suffixed: text(LABEL_OGX_VERSION).is_some_and(ServerVersion::is_suffixed),
        });
    }
    let has_prefix = |prefix: &str| labels.keys().any(|k| k.starts_with(prefix));
    if has_prefix(OGX_CONFIG_PREFIX) {
        return Some(ServerRelease {
            line: ServerLine::Ogx,
            version: oci_version.filter(|v| ServerLine::of_version(*v) == ServerLine::Ogx),
            evidence: Evidence::OgxConfigLabels,
            suffixed: text(LABEL_OCI_VERSION).is_some_and(ServerVersion::is_suffixed),
        });
    }
    let legacy_version =
        oci_version.filter(|v| ServerLine::of_version(*v) == ServerLine::LlamaStack);
    if has_prefix(LLAMA_STACK_LABEL_PREFIX) {
        return Some(ServerRelease {
            line: ServerLine::LlamaStack,
            version: legacy_version,
            evidence: Evidence::LlamaStackLabels,
            suffixed: false,
        });
    }
    legacy_version.map(|version| ServerRelease {
        line: ServerLine::LlamaStack,
        version: Some(version),
        evidence: Evidence::OciVersionLabel,
        suffixed: false,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    fn told(value: Value) -> Option<ServerRelease> {
        from_labels(Some(&labels(value)))
    }

    #[test]
    fn versions_parse_as_releases_are_tagged() {
        for (text, version) in [
            ("1.3.0", (1, 3, 0)),
            ("v0.7.3", (0, 7, 3)),
            ("1.3.2rc1", (1, 3, 2)),
            ("1.10", (1, 10, 0)),
        ] {
            let (major, minor, patch) = version;
            assert_eq!(
                ServerVersion::parse(text),
                Some(ServerVersion::new(major, minor, patch)),
                "{text:?}"
            );
        }
        for bad in ["", "latest", "1", "1.x.0", "3.12-slim-bookworm", "1.2.3.4"] {
            assert_eq!(ServerVersion::parse(bad), None, "{bad:?}");
        }
        assert!(ServerVersion::new(1, 10, 0) > ServerVersion::new(1, 9, 9));
    }

    /// The labels of RHOAI's own OGX image (`red-hat-data-services/ogx-distribution` on branch
    /// rhoai-3.5, `Dockerfile.konflux` built with `konflux/cpu-ubi9.conf`: both version labels are
    /// the build argument `OGX_VERSION=0.0`): an OGX image of unknown release, not llama-stack 0.0.
    #[test]
    fn rhoai_images_labelled_0_0_are_ogx_of_an_unknown_release() {
        let rhoai = told(json!({
            "com.ogx.config.config.yaml": "dmVyc2lvbjogMgo=",
            "com.ogx.distribution.name": "rh",
            "com.ogx.distribution.version": "0.0",
            "com.ogx.distribution.default-config": "config.yaml",
            "com.ogx.distribution.configs": "config.yaml",
            "org.opencontainers.image.version": "0.0",
        }));
        assert_eq!(
            rhoai,
            Some(ServerRelease {
                line: ServerLine::Ogx,
                version: None,
                evidence: Evidence::OgxConfigLabels,
                suffixed: false,
            })
        );
        // ODH's own build of the same image says its release.
        let odh = told(json!({
            "com.ogx.config.config.yaml": "dmVyc2lvbjogMgo=",
            "com.ogx.distribution.name": "rh",
            "com.ogx.distribution.version": "v1.2.2+rhaiv.0",
        }));
        assert_eq!(
            odh.map(|r| (r.line, r.version)),
            Some((ServerLine::Ogx, Some(ServerVersion::new(1, 2, 2))))
        );
    }

    /// The labels `scripts/generate-config-labels.sh` of ogx-ai/ogx puts on a 1.x image, and on
    /// a 0.6.1 image back-filled with the `llama-stack` package (the `llama` command).
    #[test]
    fn ogx_version_label_decides_and_backfilled_0x_images_stay_llama_stack() {
        let ogx = told(json!({
            "com.ogx.distribution.name": "starter",
            "com.ogx.distribution.version": "1.3.0",
            "com.ogx.config.config.yaml": "dmVyc2lvbjogMgo=",
            "org.opencontainers.image.version": "1.3.0"
        }))
        .unwrap();
        assert_eq!(ogx.line, ServerLine::Ogx);
        assert_eq!(ogx.version, Some(ServerVersion::new(1, 3, 0)));
        assert_eq!(ogx.evidence, Evidence::OgxVersionLabel);
        assert_eq!(ogx.describe(), "ogx 1.3.0");
        let backfill = told(json!({"com.ogx.distribution.version": "0.6.1"})).unwrap();
        assert_eq!(backfill.line, ServerLine::LlamaStack);
        let first_ogx = told(json!({"com.ogx.distribution.version": "0.8.0"})).unwrap();
        assert_eq!(first_ogx.line, ServerLine::Ogx);
    }

    #[test]
    fn other_labels_decide_in_order_and_foreign_versions_say_nothing() {
        let ogx = told(
            json!({"com.ogx.config.config.yaml": "x", "org.opencontainers.image.version": "0.7.3"}),
        )
        .unwrap();
        assert_eq!((ogx.line, ogx.version), (ServerLine::Ogx, None));
        let llama = told(json!({"io.llamastack.config.base64": "x", "org.opencontainers.image.version": "0.7.3"})).unwrap();
        assert_eq!(llama.line, ServerLine::LlamaStack);
        assert_eq!(llama.version, Some(ServerVersion::new(0, 7, 3)));
        assert_eq!(llama.evidence, Evidence::LlamaStackLabels);
        let oci = told(json!({"org.opencontainers.image.version": "0.5.2"})).unwrap();
        assert_eq!(
            (oci.line, oci.evidence),
            (ServerLine::LlamaStack, Evidence::OciVersionLabel)
        );
        // A Python base image's version, or a 1.x image version without OGX labels, tells nothing.
        assert_eq!(
            told(json!({"org.opencontainers.image.version": "3.12.1"})),
            None
        );
        assert_eq!(
            told(json!({"org.opencontainers.image.version": "1.3.0"})),
            None
        );
        assert_eq!(told(json!({})), None);
        assert_eq!(from_labels(None), None);
    }

    #[test]
    fn tls_opt_out_and_the_flag_follow_the_release() {
        let at = |line, version: Option<ServerVersion>| ServerRelease {
            line,
            version,
            evidence: Evidence::Spec,
            suffixed: false,
        };
        let v = ServerVersion::new;
        assert!(!at(ServerLine::Ogx, Some(v(1, 1, 2))).requires_tls_opt_out());
        assert!(at(ServerLine::Ogx, Some(v(1, 2, 0))).requires_tls_opt_out());
        assert!(at(ServerLine::Ogx, None).requires_tls_opt_out());
        assert!(!at(ServerLine::LlamaStack, None).requires_tls_opt_out());
        assert!(at(ServerLine::Ogx, Some(v(1, 3, 0))).takes_insecure_flag());
        assert!(!at(ServerLine::Ogx, Some(v(1, 0, 4))).takes_insecure_flag());
        assert!(!at(ServerLine::Ogx, None).takes_insecure_flag());
        assert_eq!(ServerLine::parse("ogx"), Some(ServerLine::Ogx));
        assert_eq!(
            ServerLine::parse(ServerLine::LlamaStack.as_str()),
            Some(ServerLine::LlamaStack)
        );
        assert_eq!(ServerLine::parse("OGX"), None);
    }
}
