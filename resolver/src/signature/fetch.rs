//! Finding an image's cosign signatures in a registry and deciding what they come to: the
//! simple-signing manifest at tag `sha256-<hex>.sig`, then the sigstore bundles among the
//! image's OCI referrers (the referrers API, or its fallback tag `sha256-<hex>`). Every read is
//! bounded; the first signature a trusted key verifies for the digest ends the search.

use super::SignatureVerdict;
use super::envelope::{
    BUNDLE_MEDIA_TYPE_PREFIX, SIGNATURE_ANNOTATION, check_bundle, check_simple_signing,
};
use super::keys::PublicKey;
use crate::manifest::{Descriptor, Manifest, parse_manifest};
use crate::registry::{RegistryClient, RegistryError};

/// Signatures (layers, referrers) looked at per image and form; more are ignored.
const MAX_SIGNATURES: usize = 16;
/// The largest simple-signing payload read (cosign's are a few hundred bytes).
const MAX_PAYLOAD_BYTES: usize = 64 << 10;
/// The largest bundle read (with a certificate chain and log entries, about 10 KiB).
const MAX_BUNDLE_BYTES: usize = 1 << 20;
/// The largest signature manifest or referrers index read.
const MAX_INDEX_BYTES: usize = 1 << 20;

/// What the signatures looked at so far came to.
#[derive(Default)]
struct Findings {
    /// Signatures found, in either form.
    found: usize,
    /// Why each found signature does not count.
    reasons: Vec<String>,
}

impl Findings {
    fn verdict(mut self) -> SignatureVerdict {
        if self.found == 0 {
            return SignatureVerdict::Unsigned;
        }
        self.reasons.dedup();
        SignatureVerdict::Refused(self.reasons)
    }
}

/// The verdict on `digest` (`sha256:…`) from the signatures in `repository` of `client`'s
/// registry, checked against `keys`.
pub async fn verdict(
    client: &RegistryClient,
    repository: &str,
    digest: &str,
    keys: &[PublicKey],
) -> Result<SignatureVerdict, RegistryError> {
    let mut findings = Findings::default();
    if let Some(verified) = simple_signing(client, repository, digest, keys, &mut findings).await? {
        return Ok(verified);
    }
    if let Some(verified) = bundles(client, repository, digest, keys, &mut findings).await? {
        return Ok(verified);
    }
    Ok(findings.verdict())
}

/// The simple-signing signatures at `sha256-<hex>.sig`: a verified verdict, or none.
async fn simple_signing(
    client: &RegistryClient,
    repository: &str,
    digest: &str,
    keys: &[PublicKey],
    findings: &mut Findings,
) -> Result<Option<SignatureVerdict>, RegistryError> {
    let tag = format!("{}.sig", digest.replacen(':', "-", 1));
    let Some(signatures) = client
        .manifest_if_present(repository, &tag, MAX_INDEX_BYTES)
        .await?
    else {
        return Ok(None);
    };
    for layer in image_layers(&signatures.bytes).iter().take(MAX_SIGNATURES) {
        let Some(signature) = layer.annotations.get(SIGNATURE_ANNOTATION) else {
            continue;
        };
        findings.found += 1;
        let payload = client
            .blob(repository, &layer.digest, MAX_PAYLOAD_BYTES)
            .await?;
        match check_simple_signing(&payload, signature, digest, keys) {
            Ok(key) => return Ok(Some(verified(key, "simple-signing"))),
            Err(rejection) => findings.reasons.push(rejection.to_string()),
        }
    }
    Ok(None)
}

/// The sigstore bundles among the image's referrers (the referrers API, else its fallback tag
/// `sha256-<hex>`): a verified verdict, or none.
async fn bundles(
    client: &RegistryClient,
    repository: &str,
    digest: &str,
    keys: &[PublicKey],
    findings: &mut Findings,
) -> Result<Option<SignatureVerdict>, RegistryError> {
    let index = match client
        .referrers(repository, digest, MAX_INDEX_BYTES)
        .await?
    {
        Some(index) => Some(index),
        None => client
            .manifest_if_present(repository, &digest.replacen(':', "-", 1), MAX_INDEX_BYTES)
            .await?
            .map(|m| m.bytes),
    };
    let entries = index
        .and_then(|bytes| match parse_manifest(repository, &bytes) {
            Ok(Manifest::Index(entries)) => Some(entries),
            _ => None,
        })
        .unwrap_or_default();
    let candidates = entries.iter().filter(|e| {
        e.artifact_type
            .as_deref()
            .is_none_or(|t| t.starts_with(BUNDLE_MEDIA_TYPE_PREFIX))
    });
    for entry in candidates.take(MAX_SIGNATURES) {
        let Some(manifest) = client
            .manifest_if_present(repository, &entry.digest, MAX_INDEX_BYTES)
            .await?
        else {
            continue;
        };
        // cosign's bundle manifest: exactly one layer, the bundle.
        let layers = image_layers(&manifest.bytes);
        let [layer] = layers.as_slice() else { continue };
        if !layer.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX) {
            continue;
        }
        findings.found += 1;
        let bundle = client
            .blob(repository, &layer.digest, MAX_BUNDLE_BYTES)
            .await?;
        match check_bundle(&bundle, digest, keys) {
            Ok(key) => return Ok(Some(verified(key, "sigstore bundle"))),
            Err(rejection) => findings.reasons.push(rejection.to_string()),
        }
    }
    Ok(None)
}

fn verified(key: &PublicKey, form: &'static str) -> SignatureVerdict {
    SignatureVerdict::Verified {
        key: key.name.clone(),
        form,
    }
}

/// The layers of an image manifest; none for anything else.
fn image_layers(bytes: &[u8]) -> Vec<Descriptor> {
    match parse_manifest("signature", bytes) {
        Ok(Manifest::Image { layers, .. }) => layers,
        _ => Vec::new(),
    }
}
