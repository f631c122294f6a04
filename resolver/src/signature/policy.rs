//! The signature policy: which images must be signed, by which keys, and what happens when they
//! are not. Written by an administrator as the operator ConfigMap's `image-signatures` (a YAML
//! list of rules; the first rule that matches an image applies), or made from `--verify-key`
//! files by `resolve`.
//!
//! ```yaml
//! - name: mirrored-llama-stack          # shown in conditions and metrics
//!   distributions: [starter]            # catalog names, and/or
//!   images: ["mirror.corp/llamastack/*"] # patterns on registry/repository (`*`: anything)
//!   mode: required                      # or audit: report, never refuse
//!   keys:
//!     - secret: llama-stack-signing     # a Secret in the operator's namespace
//!       key: cosign.pub                 # one of its keys (default: every key)
//!   signatureRepository: mirror.corp/signatures/llamastack   # optional
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use super::keys::PublicKey;
use crate::distribution::Distribution;
use crate::image_ref::ImageRef;

/// What a failed check does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The image is refused unless a key verifies its signature.
    #[default]
    Required,
    /// The outcome is reported (status, Events, metrics); the image is used either way.
    Audit,
}

impl Mode {
    /// As written in the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::Audit => "audit",
        }
    }
}

/// A rule with its keys loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Its name, for messages.
    pub name: String,
    /// Catalog names it covers.
    pub distributions: Vec<String>,
    /// Patterns on `registry/repository` it covers.
    pub images: Vec<String>,
    /// What a failed check does.
    pub mode: Mode,
    /// The trusted keys.
    pub keys: Vec<PublicKey>,
    /// Keys named by the rule that could not be loaded (named when an image is refused).
    pub missing_keys: Vec<String>,
    /// Where signatures are kept, when not beside the image (`registry/repository`).
    pub signature_repository: Option<String>,
}

impl Rule {
    fn covers(&self, distribution: &Distribution, image: &ImageRef) -> bool {
        let by_name =
            matches!(distribution, Distribution::Name(n) if self.distributions.contains(n));
        let name = image.name();
        by_name || self.images.iter().any(|p| glob_matches(p, &name))
    }

    /// The keys, as named in messages.
    pub fn key_names(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.name.clone()).collect()
    }
}

/// Rules, first match wins. The default policy has none: nothing is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignaturePolicy {
    /// The rules, in order.
    pub rules: Vec<Rule>,
}

impl SignaturePolicy {
    /// The rule (and its position) that applies to an image resolved for `distribution`.
    pub fn rule_for(
        &self,
        distribution: &Distribution,
        image: &ImageRef,
    ) -> Option<(usize, &Rule)> {
        self.rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.covers(distribution, image))
    }

    /// One required rule over every image, trusting `keys` (`resolve --verify-key`).
    pub fn require_everywhere(keys: Vec<PublicKey>, signature_repository: Option<String>) -> Self {
        Self {
            rules: vec![Rule {
                name: "--verify-key".to_owned(),
                distributions: Vec::new(),
                images: vec!["*".to_owned()],
                mode: Mode::Required,
                keys,
                missing_keys: Vec::new(),
                signature_repository,
            }],
        }
    }
}

/// `*` matches any run of characters (`/` included); everything else matches itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// A key named by a rule: a Secret in the operator's namespace, and optionally one of its keys.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRef {
    /// The Secret.
    pub secret: String,
    /// The key in it; every key when unset.
    #[serde(default)]
    pub key: Option<String>,
}

/// A rule as written, before its keys are read.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleSpec {
    /// Its name (default: `rule N`).
    #[serde(default)]
    pub name: Option<String>,
    /// Catalog names it covers.
    #[serde(default)]
    pub distributions: Vec<String>,
    /// Patterns on `registry/repository`.
    #[serde(default)]
    pub images: Vec<String>,
    /// `required` (default) or `audit`.
    #[serde(default)]
    pub mode: Mode,
    /// The trusted keys.
    pub keys: Vec<KeyRef>,
    /// Where signatures are kept.
    #[serde(default)]
    pub signature_repository: Option<String>,
}

/// Parses the `image-signatures` value. A rule that covers nothing or names no key is an error:
/// half a policy must not pass for a whole one.
pub fn parse_policy(text: &str) -> Result<Vec<RuleSpec>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let specs: Vec<RuleSpec> = serde_saphyr::from_str(text).map_err(|e| {
        format!("it must be a YAML list of rules (name, distributions, images, mode, keys, signatureRepository): {e}")
    })?;
    for (i, spec) in specs.iter().enumerate() {
        let shown = spec
            .name
            .clone()
            .unwrap_or_else(|| format!("rule {}", i + 1));
        if spec.distributions.is_empty() && spec.images.is_empty() {
            return Err(format!(
                "{shown} covers nothing: give distributions, images, or images: [\"*\"]"
            ));
        }
        if spec.keys.is_empty() {
            return Err(format!("{shown} names no key"));
        }
        if let Some(repo) = &spec.signature_repository {
            let parsed =
                ImageRef::parse(repo).map_err(|e| format!("{shown}: signatureRepository: {e}"))?;
            if parsed.tag.is_some() || parsed.digest.is_some() {
                return Err(format!(
                    "{shown}: signatureRepository {repo:?} is a repository, without tag or digest"
                ));
            }
        }
    }
    Ok(specs)
}

/// The Secrets the rules read keys from.
pub fn secret_names(specs: &[RuleSpec]) -> Vec<String> {
    let mut names: Vec<String> = specs
        .iter()
        .flat_map(|s| s.keys.iter().map(|k| k.secret.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The policy from its rules and the data of the Secrets they name (`None`: the Secret does not
/// exist), and the problems found (a key that cannot be loaded; the rule still applies with the
/// keys it has, so a required rule whose keys are all missing refuses every image it covers).
pub fn build_policy(
    specs: &[RuleSpec],
    secrets: &BTreeMap<String, Option<BTreeMap<String, Vec<u8>>>>,
) -> (SignaturePolicy, Vec<String>) {
    let mut problems = Vec::new();
    let mut rules = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let name = spec
            .name
            .clone()
            .unwrap_or_else(|| format!("rule {}", i + 1));
        let mut keys = Vec::new();
        let mut missing_keys = Vec::new();
        for key_ref in &spec.keys {
            let mut fail = |what: String| {
                problems.push(format!("signature policy {name:?}: {what}"));
                missing_keys.push(what);
            };
            let Some(Some(data)) = secrets.get(&key_ref.secret) else {
                fail(format!("Secret {} does not exist", key_ref.secret));
                continue;
            };
            let entries: Vec<(&String, &Vec<u8>)> = match &key_ref.key {
                Some(k) => match data.get_key_value(k) {
                    Some(entry) => vec![entry],
                    None => {
                        fail(format!("Secret {} has no key {k}", key_ref.secret));
                        continue;
                    }
                },
                None => data.iter().collect(),
            };
            for (k, pem) in entries {
                match PublicKey::from_pem(&format!("{}/{k}", key_ref.secret), pem) {
                    Ok(loaded) => keys.extend(loaded),
                    Err(e) => fail(e.to_string()),
                }
            }
        }
        rules.push(Rule {
            name,
            distributions: spec.distributions.clone(),
            images: spec.images.clone(),
            mode: spec.mode,
            keys,
            missing_keys,
            signature_repository: spec.signature_repository.clone(),
        });
    }
    (SignaturePolicy { rules }, problems)
}

#[cfg(test)]
mod tests {
    use super::super::keys::tests::p256;
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_matches("*", "quay.io/a/b"));
        assert!(glob_matches(
            "quay.io/llamastack/*",
            "quay.io/llamastack/distribution-starter"
        ));
        assert!(!glob_matches("quay.io/llamastack/*", "quay.io/other/x"));
        assert!(glob_matches(
            "*/distribution-*",
            "mirror:5000/ls/distribution-starter"
        ));
        assert!(
            !glob_matches("quay.io/a", "quay.io/ab"),
            "no implicit prefix"
        );
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(!glob_matches("a*b*c", "axxcyyb"));
    }

    #[test]
    fn rules_are_parsed_keys_loaded_and_the_first_match_applies() {
        let (_, pem) = p256();
        let specs = parse_policy(
            "- name: named\n  distributions: [starter]\n  keys: [{secret: signing, key: cosign.pub}]\n- images: ['mirror.corp/*']\n  mode: audit\n  keys: [{secret: absent}]\n  signatureRepository: mirror.corp/sigs\n",
        )
        .unwrap();
        assert_eq!(secret_names(&specs), ["absent", "signing"]);
        let secrets = BTreeMap::from([
            (
                "signing".to_owned(),
                Some(BTreeMap::from([
                    ("cosign.pub".to_owned(), pem.into_bytes()),
                    ("cosign.key".to_owned(), b"not read".to_vec()),
                ])),
            ),
            ("absent".to_owned(), None),
        ]);
        let (policy, problems) = build_policy(&specs, &secrets);
        assert_eq!(
            problems,
            ["signature policy \"rule 2\": Secret absent does not exist"]
        );
        assert_eq!(policy.rules[0].key_names(), ["signing/cosign.pub"]);
        assert!(policy.rules[1].keys.is_empty());
        assert_eq!(policy.rules[1].mode, Mode::Audit);

        let image = ImageRef::parse("mirror.corp/ls/starter:1").unwrap();
        let by_name = policy.rule_for(&Distribution::Name("starter".into()), &image);
        assert_eq!(by_name.map(|(i, _)| i), Some(0));
        let by_image = policy.rule_for(&Distribution::Image("x".into()), &image);
        assert_eq!(by_image.map(|(i, _)| i), Some(1));
        let other = ImageRef::parse("quay.io/x/y:1").unwrap();
        assert!(
            policy
                .rule_for(&Distribution::Image("x".into()), &other)
                .is_none()
        );
    }

    #[test]
    fn half_a_policy_is_refused() {
        for (text, wanted) in [
            ("- keys: [{secret: s}]\n", "covers nothing"),
            ("- images: ['*']\n  keys: []\n", "names no key"),
            (
                "- images: ['*']\n  keys: [{secret: s}]\n  mode: warn\n",
                "YAML list of rules",
            ),
            (
                "- images: ['*']\n  keys: [{secret: s}]\n  signatureRepository: 'a.io/b:1'\n",
                "without tag",
            ),
            (
                "- images: ['*']\n  keys: [{secret: s}]\n  typo: 1\n",
                "YAML list of rules",
            ),
        ] {
            let err = parse_policy(text).unwrap_err();
            assert!(err.contains(wanted), "{text:?}: {err}");
        }
        assert_eq!(parse_policy(" \n"), Ok(Vec::new()));
    }
}
