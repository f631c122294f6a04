//! Public keys that signatures are checked against: PEM `PUBLIC KEY` blocks (PKIX
//! SubjectPublicKeyInfo, as `cosign generate-key-pair` writes `cosign.pub`) holding ECDSA P-256 or
//! P-384, Ed25519 or RSA keys, verified with ring.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P384_SHA384_ASN1, ED25519, RSA_PKCS1_2048_8192_SHA256,
    UnparsedPublicKey, VerificationAlgorithm,
};

/// The largest PEM text read as keys (a few keys are a few KiB).
pub const MAX_KEYS_PEM_BYTES: usize = 64 << 10;

/// The kinds of key a signature can be checked with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA on P-256 with SHA-256 (cosign's default).
    EcdsaP256,
    /// ECDSA on P-384 with SHA-384.
    EcdsaP384,
    /// Ed25519 (pure, over the message).
    Ed25519,
    /// RSA PKCS#1 v1.5 with SHA-256, 2048 bits or more.
    Rsa,
}

impl KeyKind {
    fn algorithm(self) -> &'static dyn VerificationAlgorithm {
        match self {
            Self::EcdsaP256 => &ECDSA_P256_SHA256_ASN1,
            Self::EcdsaP384 => &ECDSA_P384_SHA384_ASN1,
            Self::Ed25519 => &ED25519,
            Self::Rsa => &RSA_PKCS1_2048_8192_SHA256,
        }
    }

    /// A short name for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EcdsaP256 => "ECDSA P-256",
            Self::EcdsaP384 => "ECDSA P-384",
            Self::Ed25519 => "Ed25519",
            Self::Rsa => "RSA",
        }
    }
}

/// A named public key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// Where the key came from, for messages (`secret/key`, a file name).
    pub name: String,
    kind: KeyKind,
    /// The key as the algorithm takes it (an EC point, an Ed25519 key, an RSAPublicKey).
    raw: Vec<u8>,
    /// `sha256:` of the SubjectPublicKeyInfo, as a short identity in messages.
    fingerprint: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {})",
            self.name,
            self.kind.as_str(),
            self.fingerprint
        )
    }
}

/// Why a PEM text gives no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No `PUBLIC KEY` block.
    #[error(
        "{name}: no PEM \"PUBLIC KEY\" block (give the public key, e.g. cosign.pub, never the private key)"
    )]
    NoKey {
        /// The source.
        name: String,
    },
    /// A block that is not a usable key.
    #[error("{name}: {detail}")]
    Invalid {
        /// The source.
        name: String,
        /// Why.
        detail: String,
    },
    /// Larger than [`MAX_KEYS_PEM_BYTES`].
    #[error("{name}: more than {MAX_KEYS_PEM_BYTES} bytes; a public key is a few hundred")]
    TooLarge {
        /// The source.
        name: String,
    },
}

impl PublicKey {
    /// Every `PUBLIC KEY` block of a PEM text, named `name` (`name#2` and on for later blocks).
    /// A private key block is refused rather than skipped, so that it is noticed.
    pub fn from_pem(name: &str, pem: &[u8]) -> Result<Vec<Self>, KeyError> {
        if pem.len() > MAX_KEYS_PEM_BYTES {
            return Err(KeyError::TooLarge { name: name.into() });
        }
        let invalid = |detail: String| KeyError::Invalid {
            name: name.into(),
            detail,
        };
        let text = std::str::from_utf8(pem).map_err(|_| invalid("not UTF-8 text".into()))?;
        let mut keys = Vec::new();
        for (label, body) in pem_blocks(text) {
            if label.contains("PRIVATE KEY") {
                return Err(invalid(format!(
                    "holds a {label}; give only the public key"
                )));
            }
            if label != "PUBLIC KEY" {
                continue;
            }
            let der = STANDARD
                .decode(body)
                .map_err(|e| invalid(format!("the PUBLIC KEY block is not base64: {e}")))?;
            let (kind, raw) = parse_spki(&der).map_err(|detail| invalid(detail.to_owned()))?;
            let shown = if keys.is_empty() {
                name.to_owned()
            } else {
                format!("{name}#{}", keys.len() + 1)
            };
            keys.push(Self {
                name: shown,
                kind,
                raw,
                fingerprint: crate::digest::sha256_hex(&der),
            });
        }
        if keys.is_empty() {
            return Err(KeyError::NoKey { name: name.into() });
        }
        Ok(keys)
    }

    /// Whether `signature` is this key's signature of `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(self.kind.algorithm(), &self.raw)
            .verify(message, signature)
            .is_ok()
    }

    /// The kind of key.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// `sha256:` of the key's SubjectPublicKeyInfo.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

/// `(label, base64 body)` of each PEM block, whitespace removed from the body.
fn pem_blocks(text: &str) -> Vec<(&str, String)> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = &after[..label_end];
        let body_start = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body_start.find(&end_marker) else {
            break;
        };
        let body = body_start[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        blocks.push((label, body));
        rest = &body_start[end + end_marker.len()..];
    }
    blocks
}

const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

const TAG_SEQUENCE: u8 = 0x30;
const TAG_OID: u8 = 0x06;
const TAG_BIT_STRING: u8 = 0x03;

/// One DER element: `(tag, contents, rest)`.
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[count..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

fn expect(input: &[u8], tag: u8) -> Result<(&[u8], &[u8]), &'static str> {
    match der(input) {
        Some((t, contents, rest)) if t == tag => Ok((contents, rest)),
        _ => Err("the PUBLIC KEY block is not a DER SubjectPublicKeyInfo"),
    }
}

/// The key kind and the key bytes ring takes, from a SubjectPublicKeyInfo.
fn parse_spki(spki: &[u8]) -> Result<(KeyKind, Vec<u8>), &'static str> {
    let (info, trailing) = expect(spki, TAG_SEQUENCE)?;
    if !trailing.is_empty() {
        return Err("the PUBLIC KEY block has bytes after the key");
    }
    let (algorithm, rest) = expect(info, TAG_SEQUENCE)?;
    let (bits, _) = expect(rest, TAG_BIT_STRING)?;
    let (oid, params) = expect(algorithm, TAG_OID)?;
    let kind = match oid {
        OID_EC_PUBLIC_KEY => match der(params) {
            Some((TAG_OID, OID_P256, _)) => KeyKind::EcdsaP256,
            Some((TAG_OID, OID_P384, _)) => KeyKind::EcdsaP384,
            _ => return Err("an EC key on a curve other than P-256 or P-384"),
        },
        OID_ED25519 => KeyKind::Ed25519,
        OID_RSA => KeyKind::Rsa,
        _ => {
            return Err(
                "a key of an unsupported algorithm (use ECDSA P-256/P-384, Ed25519 or RSA)",
            );
        }
    };
    // A BIT STRING starts with its count of unused bits, 0 for a key.
    match bits.split_first() {
        Some((0, key)) if !key.is_empty() => Ok((kind, key.to_vec())),
        _ => Err("the key's BIT STRING is malformed"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};

    use super::*;

    /// PEM of a SubjectPublicKeyInfo built around `key` with the given algorithm identifier.
    fn spki_pem(algorithm: &[u8], key: &[u8]) -> String {
        fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
            let mut out = vec![tag];
            if body.len() < 0x80 {
                out.push(body.len() as u8);
            } else {
                out.extend([0x82, (body.len() >> 8) as u8, body.len() as u8]);
            }
            out.extend(body);
            out
        }
        let mut bits = vec![0];
        bits.extend(key);
        let mut info = tlv(TAG_SEQUENCE, algorithm);
        info.extend(tlv(TAG_BIT_STRING, &bits));
        let der = tlv(TAG_SEQUENCE, &info);
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode(der)
        )
    }

    fn oid(body: &[u8]) -> Vec<u8> {
        let mut out = vec![TAG_OID, body.len() as u8];
        out.extend(body);
        out
    }

    /// A fresh P-256 signer and its public key PEM.
    pub(crate) fn p256() -> (EcdsaKeyPair, String) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let mut algorithm = oid(OID_EC_PUBLIC_KEY);
        algorithm.extend(oid(OID_P256));
        let pem = spki_pem(&algorithm, pair.public_key().as_ref());
        (pair, pem)
    }

    /// Signs with a P-256 key pair (DER signature, as cosign writes).
    pub(crate) fn sign(pair: &EcdsaKeyPair, message: &[u8]) -> Vec<u8> {
        pair.sign(&SystemRandom::new(), message)
            .unwrap()
            .as_ref()
            .to_vec()
    }

    #[test]
    fn p256_and_ed25519_keys_verify_their_own_signatures_only() {
        let (pair, pem) = p256();
        let keys = PublicKey::from_pem("signing/cosign.pub", pem.as_bytes()).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kind(), KeyKind::EcdsaP256);
        let signature = sign(&pair, b"payload");
        assert!(keys[0].verifies(b"payload", &signature));
        assert!(!keys[0].verifies(b"payload!", &signature));

        let rng = SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let ed = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let ed_pem = spki_pem(&oid(OID_ED25519), ed.public_key().as_ref());
        let both = format!("{pem}{ed_pem}");
        let keys = PublicKey::from_pem("k", both.as_bytes()).unwrap();
        assert_eq!(
            keys.iter()
                .map(|k| (k.name.as_str(), k.kind()))
                .collect::<Vec<_>>(),
            [("k", KeyKind::EcdsaP256), ("k#2", KeyKind::Ed25519)]
        );
        let ed_signature = ed.sign(b"payload");
        assert!(keys[1].verifies(b"payload", ed_signature.as_ref()));
        assert!(!keys[0].verifies(b"payload", ed_signature.as_ref()));
        assert_ne!(keys[0].fingerprint(), keys[1].fingerprint());
    }

    #[test]
    fn unusable_pem_is_named() {
        let no_key = PublicKey::from_pem("a", b"hello").unwrap_err();
        assert!(no_key.to_string().contains("no PEM"), "{no_key}");
        let private = PublicKey::from_pem(
            "b",
            b"-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----\n",
        )
        .unwrap_err();
        assert!(
            private.to_string().contains("only the public key"),
            "{private}"
        );
        let garbage = PublicKey::from_pem(
            "c",
            b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        )
        .unwrap_err();
        assert!(
            garbage.to_string().contains("SubjectPublicKeyInfo"),
            "{garbage}"
        );
        let mut p521 = oid(OID_EC_PUBLIC_KEY);
        p521.extend(oid(&[0x2b, 0x81, 0x04, 0x00, 0x23]));
        let curve = PublicKey::from_pem("d", spki_pem(&p521, &[4; 133]).as_bytes()).unwrap_err();
        assert!(curve.to_string().contains("P-256 or P-384"), "{curve}");
        let big = vec![b'a'; MAX_KEYS_PEM_BYTES + 1];
        assert!(matches!(
            PublicKey::from_pem("e", &big),
            Err(KeyError::TooLarge { .. })
        ));
    }
}
