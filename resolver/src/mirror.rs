//! Mirror rules for air-gapped clusters: a registry or repository prefix rewritten to a mirror.
//! The deployed image follows the same rules, so the Deployment pulls from where the config was
//! read.

use std::str::FromStr;

use crate::image_ref::{ImageRef, ReferenceError};

/// `FROM=TO`, e.g. `docker.io/llamastack=mirror.corp:5000/llamastack` or `quay.io=mirror.corp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorRule {
    from: String,
    to: String,
}

/// A rule that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MirrorRuleError {
    /// No `=`.
    #[error(
        "mirror rule {0:?} must be FROM=TO, e.g. docker.io/llamastack=mirror.example.com/llamastack"
    )]
    Shape(String),
    /// A side is not a registry or registry/repository prefix.
    #[error(
        "mirror rule {rule:?}: {side} is not a registry or registry/repository prefix: {source}"
    )]
    Side {
        /// The rule.
        rule: String,
        /// `FROM` or `TO`.
        side: &'static str,
        /// Why.
        source: ReferenceError,
    },
}

/// Normalises a prefix (`docker.io/llamastack`, `quay.io`) through the reference parser.
fn prefix(side: &str) -> Result<String, ReferenceError> {
    // A bare registry host is a valid prefix; give the parser a repository to check the host.
    if side.contains(['.', ':']) && !side.contains('/') || side == "localhost" {
        let probe = ImageRef::parse(&format!("{side}/x"))?;
        return Ok(probe.registry);
    }
    let parsed = ImageRef::parse(side)?;
    if parsed.tag.is_some() || parsed.digest.is_some() {
        return Err(ReferenceError {
            reference: side.to_owned(),
            reason: "a prefix has no tag or digest",
        });
    }
    // `docker.io/llamastack` must not become `docker.io/library/llamastack`.
    let explicit = side.split('/').count() > 1;
    Ok(
        if parsed.registry == "docker.io" && explicit && !side.starts_with("docker.io/library/") {
            format!(
                "{}/{}",
                parsed.registry,
                side.split_once('/').map_or(side, |(_, r)| r)
            )
        } else {
            parsed.name()
        },
    )
}

impl FromStr for MirrorRule {
    type Err = MirrorRuleError;

    fn from_str(rule: &str) -> Result<Self, Self::Err> {
        let (from, to) = rule
            .split_once('=')
            .ok_or_else(|| MirrorRuleError::Shape(rule.to_owned()))?;
        let side = |value: &str, side| {
            prefix(value.trim()).map_err(|source| MirrorRuleError::Side {
                rule: rule.to_owned(),
                side,
                source,
            })
        };
        Ok(Self {
            from: side(from, "FROM")?,
            to: side(to, "TO")?,
        })
    }
}

impl MirrorRule {
    /// The rewritten reference when the rule applies (on path-component boundaries).
    fn apply(&self, image: &ImageRef) -> Option<ImageRef> {
        let name = image.name();
        let rest = name.strip_prefix(&self.from)?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        let mirrored = format!("{}{rest}", self.to);
        let (registry, repository) = mirrored.split_once('/')?;
        Some(ImageRef {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: image.tag.clone(),
            digest: image.digest.clone(),
        })
    }
}

/// Applies the most specific (longest `FROM`) matching rule, if any.
pub fn apply_mirrors(rules: &[MirrorRule], image: &ImageRef) -> ImageRef {
    rules
        .iter()
        .filter_map(|rule| rule.apply(image).map(|r| (rule.from.len(), r)))
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| image.clone(), |(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(rules: &[&str], image: &str) -> String {
        let rules: Vec<MirrorRule> = rules.iter().map(|r| r.parse().unwrap()).collect();
        apply_mirrors(&rules, &ImageRef::parse(image).unwrap()).to_string()
    }

    #[test]
    fn registry_and_repository_prefixes() {
        assert_eq!(
            rewrite(
                &["docker.io=mirror.corp:5000/hub"],
                "docker.io/llamastack/distribution-starter:0.7.3"
            ),
            "mirror.corp:5000/hub/llamastack/distribution-starter:0.7.3"
        );
        assert_eq!(
            rewrite(
                &["docker.io=m.corp/hub", "docker.io/llamastack=m.corp/lls"],
                "llamastack/distribution-starter:0.7.3"
            ),
            "m.corp/lls/distribution-starter:0.7.3",
            "the longest prefix wins"
        );
        assert_eq!(
            rewrite(&["docker.io/llamastack=m.corp/lls"], "llamastackx/app:1"),
            "docker.io/llamastackx/app:1"
        );
        assert_eq!(
            rewrite(&["quay.io=m.corp"], "nginx"),
            "docker.io/library/nginx"
        );
    }

    #[test]
    fn digests_survive() {
        let d = format!("sha256:{}", "b".repeat(64));
        assert_eq!(
            rewrite(
                &["quay.io/org=127.0.0.1:5000/org"],
                &format!("quay.io/org/app@{d}")
            ),
            format!("127.0.0.1:5000/org/app@{d}")
        );
    }

    #[test]
    fn bad_rules_say_why() {
        assert!(matches!(
            "quay.io".parse::<MirrorRule>(),
            Err(MirrorRuleError::Shape(_))
        ));
        let err = "quay.io=Mirror/UPPER".parse::<MirrorRule>().unwrap_err();
        assert!(err.to_string().contains("TO is not a registry"), "{err}");
    }
}
