//! Content digests in the form registries address content by (`sha256:<hex>`, `sha512:<hex>`):
//! of manifests and blobs, of configs, of keys.

use sha2::{Digest as _, Sha256, Sha512};

/// `sha256:<hex>` of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// The digest of `bytes` in the algorithm of `expected` (`sha512:…`, else sha256), so that a
/// content addressed by either algorithm the references accept is verified.
pub fn digest_like(expected: &str, bytes: &[u8]) -> String {
    if expected.starts_with("sha512:") {
        format!("sha512:{}", hex(&Sha512::digest(bytes)))
    } else {
        sha256_hex(bytes)
    }
}

/// Hashes content that arrives in pieces (a streamed layer) in the algorithm of the digest it
/// must match.
pub enum ContentHasher {
    /// `sha256:…`
    Sha256(Sha256),
    /// `sha512:…`
    Sha512(Sha512),
}

impl ContentHasher {
    /// A hasher in the algorithm of `expected` (`sha512:…`, else sha256), as [`digest_like`].
    pub fn like(expected: &str) -> Self {
        if expected.starts_with("sha512:") {
            Self::Sha512(Sha512::new())
        } else {
            Self::Sha256(Sha256::new())
        }
    }

    /// Adds the next piece.
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Self::Sha256(h) => h.update(bytes),
            Self::Sha512(h) => h.update(bytes),
        }
    }

    /// The digest of everything added, as `<algorithm>:<hex>`.
    pub fn finish(self) -> String {
        match self {
            Self::Sha256(h) => format!("sha256:{}", hex(&h.finalize())),
            Self::Sha512(h) => format!("sha512:{}", hex(&h.finalize())),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::{ContentHasher, digest_like};

    #[test]
    fn content_hashed_in_pieces_has_the_digest_of_the_whole() {
        for expected in ["sha256:00", "sha512:00"] {
            let mut hasher = ContentHasher::like(expected);
            hasher.update(b"a");
            hasher.update(b"");
            hasher.update(b"bc");
            assert_eq!(hasher.finish(), digest_like(expected, b"abc"));
        }
    }

    #[test]
    fn content_is_hashed_in_the_algorithm_of_the_reference() {
        // Known vectors of "abc" (FIPS 180-2).
        assert_eq!(
            digest_like("sha256:00", b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            digest_like("sha512:00", b"abc"),
            "sha512:ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
    }
}
