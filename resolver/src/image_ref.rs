//! Image references, normalised as Docker and kubelet do (`nginx` -> `docker.io/library/nginx`).

use std::fmt;

/// Docker Hub's canonical registry name in references.
pub const DOCKER_HUB: &str = "docker.io";
/// Where Docker Hub's registry API lives.
const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// A parsed image reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageRef {
    /// Registry host, with port when given (`docker.io` for Docker Hub).
    pub registry: String,
    /// Repository path (`library/nginx`).
    pub repository: String,
    /// Tag, when given.
    pub tag: Option<String>,
    /// Digest (`sha256:…`), when given.
    pub digest: Option<String>,
}

/// A reference that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid image reference {reference:?}: {reason}")]
pub struct ReferenceError {
    /// The input.
    pub reference: String,
    /// What is wrong.
    pub reason: &'static str,
}

fn valid_component(c: &str) -> bool {
    // Docker's path component: [a-z0-9]+ separated by ., _, __ or -+
    !c.is_empty()
        && c.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && c.bytes()
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && c.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

fn valid_tag(t: &str) -> bool {
    (1..=128).contains(&t.len())
        && t.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

fn valid_digest(d: &str) -> bool {
    match d.split_once(':') {
        Some(("sha256", hex)) => {
            hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }
        Some(("sha512", hex)) => {
            hex.len() == 128
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }
        _ => false,
    }
}

fn valid_registry(r: &str) -> bool {
    !r.is_empty()
        && r.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        && !r.starts_with(['.', '-', ':'])
}

impl ImageRef {
    /// Parses a reference the way `docker pull` does.
    pub fn parse(input: &str) -> Result<Self, ReferenceError> {
        let err = |reason| ReferenceError {
            reference: input.to_owned(),
            reason,
        };
        if input.is_empty() || input.len() > 4096 || input.trim() != input {
            return Err(err("must be non-empty, without surrounding spaces"));
        }
        let (name_tag, digest) = match input.split_once('@') {
            Some((n, d)) if valid_digest(d) => (n, Some(d.to_owned())),
            Some(_) => {
                return Err(err(
                    "the digest must be sha256:<64 hex> or sha512:<128 hex>",
                ));
            }
            None => (input, None),
        };
        let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => {
                let tag = &name_tag[last_slash + i + 1..];
                if !valid_tag(tag) {
                    return Err(err(
                        "the tag must be 1-128 of [A-Za-z0-9_.-], not starting with . or -",
                    ));
                }
                (&name_tag[..last_slash + i], Some(tag.to_owned()))
            }
            None => (name_tag, None),
        };
        let (registry, path) = match name.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
                (first.to_owned(), rest)
            }
            _ => (DOCKER_HUB.to_owned(), name),
        };
        if !valid_registry(&registry) {
            return Err(err("the registry host is not valid"));
        }
        let registry = if registry == "index.docker.io" {
            DOCKER_HUB.to_owned()
        } else {
            registry
        };
        let repository = if registry == DOCKER_HUB && !path.contains('/') {
            format!("library/{path}")
        } else {
            path.to_owned()
        };
        if !repository.split('/').all(valid_component) {
            return Err(err(
                "the repository must be lowercase path components of [a-z0-9._-]",
            ));
        }
        Ok(Self {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// `registry/repository`, the name kubelet matches credentials against.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The host to talk to for the registry API.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// The tag or digest to ask the registry for (`latest` when neither is given).
    pub fn reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The same image pinned to a digest (the tag is dropped: `repo@sha256:…`).
    pub fn pinned(&self, digest: &str) -> Self {
        Self {
            tag: None,
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_names_are_normalised() {
        let r = ImageRef::parse("nginx").unwrap();
        assert_eq!(r.to_string(), "docker.io/library/nginx");
        assert_eq!(r.reference(), "latest");
        assert_eq!(r.api_host(), "registry-1.docker.io");
        assert_eq!(
            ImageRef::parse("user/app:1").unwrap().to_string(),
            "docker.io/user/app:1"
        );
        assert_eq!(
            ImageRef::parse("index.docker.io/x/y").unwrap().name(),
            "docker.io/x/y"
        );
    }

    #[test]
    fn registries_ports_tags_and_digests() {
        let d = format!("sha256:{}", "a".repeat(64));
        let r = ImageRef::parse(&format!("127.0.0.1:5000/llamastack/starter:0.7.3@{d}")).unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str()),
            ("127.0.0.1:5000", "llamastack/starter")
        );
        assert_eq!(
            (r.tag.as_deref(), r.digest.as_deref()),
            (Some("0.7.3"), Some(d.as_str()))
        );
        assert_eq!(r.reference(), d);
        assert_eq!(
            r.pinned(&d).to_string(),
            format!("127.0.0.1:5000/llamastack/starter@{d}")
        );
        assert_eq!(
            ImageRef::parse("localhost/app").unwrap().registry,
            "localhost"
        );
        assert_eq!(
            ImageRef::parse("localhost:5000/app").unwrap().registry,
            "localhost:5000"
        );
    }

    #[test]
    fn invalid_references_say_why() {
        for (input, reason) in [
            ("", "non-empty"),
            ("Quay.io/Org/App", "lowercase"),
            ("docker.io/UPPER", "lowercase"),
            ("app:", "the tag"),
            ("app@sha256:abc", "the digest"),
            ("app:.bad", "the tag"),
            (" app", "surrounding spaces"),
        ] {
            let err = ImageRef::parse(input).unwrap_err();
            assert!(err.to_string().contains(reason), "{input:?}: {err}");
        }
    }
}
