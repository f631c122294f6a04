//! The two forms cosign attaches a signature in, checked offline against public keys (no
//! transparency log or timestamp authority, as `cosign verify --key … --insecure-ignore-tlog`):
//!
//! - **simple signing** (cosign 2's default; tag `sha256-<hex>.sig`): a layer per signature whose
//!   blob is a JSON payload naming the image digest and whose annotation
//!   `dev.cosignproject.cosign/signature` is the base64 signature over the blob's exact bytes;
//! - **sigstore bundle** (cosign 3's default; an OCI referrer of the image): a DSSE envelope over
//!   an in-toto statement whose subject is the image digest, signed over DSSE's pre-authentication
//!   encoding.
//!
//! A signature counts only if a key verifies it *and* what it signs names the digest being
//! checked: a valid signature of another image is refused.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::keys::PublicKey;

/// The layer annotation holding a simple-signing signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The media type of a simple-signing layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The media type prefix of sigstore bundles.
pub const BUNDLE_MEDIA_TYPE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The statement predicate of `cosign sign` in the bundle form. Other predicates (an SBOM
/// attestation signed with the same key) are not a signature of the image.
pub const COSIGN_SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";
const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// Why one signature does not count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// No key verifies it.
    #[error("a {form} signature that none of the keys verifies")]
    NoKeyVerifies {
        /// Which form.
        form: &'static str,
    },
    /// A valid signature of another digest.
    #[error("a valid {form} signature, but of {signed} (a signature of another image)")]
    OtherDigest {
        /// Which form.
        form: &'static str,
        /// What it signs.
        signed: String,
    },
    /// Not readable as that form.
    #[error("an unreadable {form} signature: {detail}")]
    Malformed {
        /// Which form.
        form: &'static str,
        /// Why.
        detail: String,
    },
}

impl Rejection {
    /// What makes a [`Rejection::Malformed`] of `form` from the reason.
    fn malformed(form: &'static str) -> impl Fn(String) -> Self {
        move |detail| Self::Malformed { form, detail }
    }
}

const SIMPLE: &str = "simple-signing";
const BUNDLE: &str = "sigstore bundle";

/// The key that verifies a simple-signing signature of `digest` (`sha256:…`).
pub fn check_simple_signing<'k>(
    payload: &[u8],
    signature_b64: &str,
    digest: &str,
    keys: &'k [PublicKey],
) -> Result<&'k PublicKey, Rejection> {
    let malformed = Rejection::malformed(SIMPLE);
    let signature = STANDARD
        .decode(signature_b64.trim())
        .map_err(|e| malformed(format!("the signature annotation is not base64: {e}")))?;
    let key = keys
        .iter()
        .find(|k| k.verifies(payload, &signature))
        .ok_or(Rejection::NoKeyVerifies { form: SIMPLE })?;
    // Only a verified payload is parsed.
    #[derive(Deserialize)]
    struct Payload {
        critical: Critical,
    }
    #[derive(Deserialize)]
    struct Critical {
        #[serde(rename = "type")]
        kind: String,
        image: Image,
    }
    #[derive(Deserialize)]
    struct Image {
        #[serde(rename = "docker-manifest-digest", alias = "Docker-manifest-digest")]
        digest: String,
    }
    let parsed: Payload = serde_json::from_slice(payload)
        .map_err(|e| malformed(format!("the payload is not a cosign payload: {e}")))?;
    if parsed.critical.kind != SIMPLE_SIGNING_TYPE {
        return Err(malformed(format!(
            "the payload's type is {:?}, not {SIMPLE_SIGNING_TYPE:?}",
            parsed.critical.kind
        )));
    }
    if parsed.critical.image.digest != digest {
        return Err(Rejection::OtherDigest {
            form: SIMPLE,
            signed: parsed.critical.image.digest,
        });
    }
    Ok(key)
}

/// DSSE's pre-authentication encoding: what a DSSE signature signs.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A sigstore bundle, as far as an image signature needs it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    dsse_envelope: Option<Envelope>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    #[serde(default)]
    signatures: Vec<EnvelopeSignature>,
}
#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}
/// An in-toto statement, as far as its subjects and predicate go.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    #[serde(default)]
    subject: Vec<Subject>,
    predicate_type: String,
}
#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: std::collections::BTreeMap<String, String>,
}

/// The key that verifies a sigstore bundle (`bundle_json`) signing `digest` (`sha256:…`).
pub fn check_bundle<'k>(
    bundle_json: &[u8],
    digest: &str,
    keys: &'k [PublicKey],
) -> Result<&'k PublicKey, Rejection> {
    let malformed = Rejection::malformed(BUNDLE);
    let bundle: Bundle = serde_json::from_slice(bundle_json)
        .map_err(|e| malformed(format!("not a sigstore bundle: {e}")))?;
    if !bundle.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX) {
        return Err(malformed(format!(
            "media type {:?} is not a sigstore bundle's",
            bundle.media_type
        )));
    }
    let envelope = bundle.dsse_envelope.ok_or_else(|| {
        malformed("no DSSE envelope (a message signature does not name an image)".to_owned())
    })?;
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return Err(malformed(format!(
            "the envelope's payload type is {:?}, not {IN_TOTO_PAYLOAD_TYPE:?}",
            envelope.payload_type
        )));
    }
    let payload = STANDARD
        .decode(&envelope.payload)
        .map_err(|e| malformed(format!("the envelope's payload is not base64: {e}")))?;
    let signed = pae(&envelope.payload_type, &payload);
    let key = envelope
        .signatures
        .iter()
        .filter_map(|s| STANDARD.decode(&s.sig).ok())
        .find_map(|sig| keys.iter().find(|k| k.verifies(&signed, &sig)))
        .ok_or(Rejection::NoKeyVerifies { form: BUNDLE })?;
    let statement: Statement = serde_json::from_slice(&payload)
        .map_err(|e| malformed(format!("the payload is not an in-toto statement: {e}")))?;
    if statement.predicate_type != COSIGN_SIGN_PREDICATE {
        return Err(malformed(format!(
            "an attestation of {:?}, not an image signature ({COSIGN_SIGN_PREDICATE})",
            statement.predicate_type
        )));
    }
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
    let subjects: Vec<String> = statement
        .subject
        .iter()
        .filter_map(|s| s.digest.get(algorithm))
        .map(|h| format!("{algorithm}:{h}"))
        .collect();
    if subjects
        .iter()
        .any(|s| s.split_once(':').map(|(_, h)| h) == Some(hex))
    {
        return Ok(key);
    }
    Err(Rejection::OtherDigest {
        form: BUNDLE,
        signed: if subjects.is_empty() {
            "no image".to_owned()
        } else {
            subjects.join(", ")
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::keys::tests::{p256, sign};
    use super::*;

    const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    /// A simple-signing payload as cosign 2 writes it.
    pub(crate) fn payload(digest: &str) -> Vec<u8> {
        format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"registry.example/app"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
        )
        .into_bytes()
    }

    /// A bundle as cosign 3 writes it, signed by `pair`.
    pub(crate) fn bundle(
        pair: &ring::signature::EcdsaKeyPair,
        digest: &str,
        predicate: &str,
    ) -> Vec<u8> {
        let hex = digest.trim_start_matches("sha256:");
        let statement = format!(
            r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"digest":{{"sha256":"{hex}"}}}}],"predicateType":"{predicate}","predicate":{{}}}}"#
        );
        let sig = sign(pair, &pae(IN_TOTO_PAYLOAD_TYPE, statement.as_bytes()));
        serde_json::to_vec(&serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {"publicKey": {"hint": "x"}},
            "dsseEnvelope": {
                "payload": STANDARD.encode(statement),
                "payloadType": IN_TOTO_PAYLOAD_TYPE,
                "signatures": [{"sig": STANDARD.encode(sig)}],
            },
        }))
        .unwrap()
    }

    #[test]
    fn pae_is_dsse_v1() {
        assert_eq!(pae("t", b"hello"), b"DSSEv1 1 t 5 hello");
    }

    #[test]
    fn simple_signing_needs_the_key_and_the_digest() {
        let (pair, pem) = p256();
        let (other_pair, other_pem) = p256();
        let keys = PublicKey::from_pem("mine", pem.as_bytes()).unwrap();
        let other_keys = PublicKey::from_pem("theirs", other_pem.as_bytes()).unwrap();
        let body = payload(DIGEST);
        let signature = STANDARD.encode(sign(&pair, &body));
        let key = check_simple_signing(&body, &signature, DIGEST, &keys).unwrap();
        assert_eq!(key.name, "mine");
        assert_eq!(
            check_simple_signing(&body, &signature, DIGEST, &other_keys),
            Err(Rejection::NoKeyVerifies { form: SIMPLE })
        );
        assert_eq!(
            check_simple_signing(&body, &signature, OTHER, &keys),
            Err(Rejection::OtherDigest {
                form: SIMPLE,
                signed: DIGEST.to_owned()
            })
        );
        let mut tampered = body.clone();
        tampered[10] ^= 1;
        assert!(check_simple_signing(&tampered, &signature, DIGEST, &keys).is_err());
        let theirs = STANDARD.encode(sign(&other_pair, &body));
        assert!(check_simple_signing(&body, &theirs, DIGEST, &keys).is_err());
        let not_cosign = br#"{"critical":{"type":"x","image":{"docker-manifest-digest":"d"}}}"#;
        let sig = STANDARD.encode(sign(&pair, not_cosign));
        assert!(matches!(
            check_simple_signing(not_cosign, &sig, "d", &keys),
            Err(Rejection::Malformed { .. })
        ));
    }

    #[test]
    fn bundles_need_the_key_the_digest_and_the_sign_predicate() {
        let (pair, pem) = p256();
        let (_, other_pem) = p256();
        let keys = PublicKey::from_pem("mine", pem.as_bytes()).unwrap();
        let other_keys = PublicKey::from_pem("theirs", other_pem.as_bytes()).unwrap();
        let good = bundle(&pair, DIGEST, COSIGN_SIGN_PREDICATE);
        assert_eq!(check_bundle(&good, DIGEST, &keys).unwrap().name, "mine");
        assert_eq!(
            check_bundle(&good, DIGEST, &other_keys),
            Err(Rejection::NoKeyVerifies { form: BUNDLE })
        );
        assert!(matches!(
            check_bundle(&good, OTHER, &keys),
            Err(Rejection::OtherDigest { signed, .. }) if signed == DIGEST
        ));
        let sbom = bundle(&pair, DIGEST, "https://cyclonedx.org/bom");
        assert!(matches!(
            check_bundle(&sbom, DIGEST, &keys),
            Err(Rejection::Malformed { detail, .. }) if detail.contains("attestation")
        ));
        let message = br#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","messageSignature":{}}"#;
        assert!(check_bundle(message, DIGEST, &keys).is_err());
    }
}
