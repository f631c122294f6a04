//! Signature-verified base configs: before the resolver reads an image's `io.llamastack.config`
//! label, an image covered by the signature policy must carry a cosign signature of its digest
//! made by a trusted key. Whoever controls a mirror or can push a tag then cannot choose the
//! config the operator derives from the image.

pub mod envelope;
pub mod fetch;
pub mod keys;
pub mod policy;

pub use keys::{KeyError, KeyKind, PublicKey};
pub use policy::{Mode, Rule, SignaturePolicy};

/// What the signatures of one image digest came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureVerdict {
    /// A trusted key verified a signature of the digest.
    Verified {
        /// The key.
        key: String,
        /// The signature's form (simple-signing or sigstore bundle).
        form: &'static str,
    },
    /// No signature was found in either form.
    Unsigned,
    /// Signatures were found; none counts (each one's reason).
    Refused(Vec<String>),
}

/// The outcome of checking one image against the rule that covers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureCheck {
    /// The rule's name.
    pub rule: String,
    /// The rule's mode.
    pub mode: Mode,
    /// The image checked, pinned by digest.
    pub image: String,
    /// Where the signatures were looked for (`registry/repository`).
    pub signatures_in: String,
    /// The keys tried, by name.
    pub keys: Vec<String>,
    /// Keys the rule names that could not be loaded.
    pub missing_keys: Vec<String>,
    /// The outcome.
    pub verdict: SignatureVerdict,
}

impl SignatureCheck {
    /// Whether a trusted key verified the image.
    pub fn verified(&self) -> bool {
        matches!(self.verdict, SignatureVerdict::Verified { .. })
    }

    /// `verified`, `unsigned` or `failed`: the metric label.
    pub fn outcome(&self) -> &'static str {
        match self.verdict {
            SignatureVerdict::Verified { .. } => "verified",
            SignatureVerdict::Unsigned => "unsigned",
            SignatureVerdict::Refused(_) => "failed",
        }
    }

    /// One sentence: the image, the policy, the keys tried and what was found.
    pub fn describe(&self) -> String {
        let keys = if self.keys.is_empty() {
            "none could be loaded".to_owned()
        } else {
            self.keys.join(", ")
        };
        let missing = if self.missing_keys.is_empty() {
            String::new()
        } else {
            format!(" (not loaded: {})", self.missing_keys.join("; "))
        };
        let policy = format!(
            "signature policy {:?} ({}), keys tried: {keys}{missing}",
            self.rule,
            self.mode.as_str()
        );
        match &self.verdict {
            SignatureVerdict::Verified { key, form } => {
                format!("image {} is signed by {key} ({form}); {policy}", self.image)
            }
            SignatureVerdict::Unsigned => format!(
                "image {} has no signature in {} (neither a cosign .sig tag nor a sigstore bundle referrer); {policy}",
                self.image, self.signatures_in
            ),
            SignatureVerdict::Refused(reasons) => format!(
                "image {} is not signed by a trusted key: found {} in {}; {policy}",
                self.image,
                reasons.join("; "),
                self.signatures_in
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_digest_the_policy_and_the_keys() {
        let check = SignatureCheck {
            rule: "mirrored".into(),
            mode: Mode::Required,
            image: "mirror/ls@sha256:abc".into(),
            signatures_in: "mirror/sigs".into(),
            keys: vec!["signing/cosign.pub".into()],
            missing_keys: vec!["Secret old does not exist".into()],
            verdict: SignatureVerdict::Refused(vec![
                "a simple-signing signature that none of the keys verifies".into(),
            ]),
        };
        let text = check.describe();
        for part in [
            "mirror/ls@sha256:abc",
            "\"mirrored\" (required)",
            "signing/cosign.pub",
            "Secret old",
            "mirror/sigs",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert_eq!(check.outcome(), "failed");
        assert!(!check.verified());
    }
}
