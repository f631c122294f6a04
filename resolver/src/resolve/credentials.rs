//! The credentials a resolve uses: the Pod's pull secrets, then the node's from kubelet's
//! credential provider plugins; their fingerprint in cache keys; a plugin's failure told beside
//! the registry's refusal.

use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use crate::credential_provider::ProviderFailure;
use crate::error::ResolveError;
use crate::keyring::{Credential, Keyring};

/// A short hash of the credentials (never the credentials), so that cached results are keyed by
/// what fetched them.
pub(super) fn fingerprint(creds: &[&Credential]) -> String {
    if creds.is_empty() {
        return "anonymous".to_owned();
    }
    let mut hash = Sha256::new();
    for c in creds {
        hash.update(c.username.as_bytes());
        hash.update([0]);
        hash.update(c.password.as_bytes());
        hash.update([0]);
    }
    hash.finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A registry failure, told with the plugin that failed to give credentials for the image.
pub(super) fn with_provider_failure(
    err: Arc<ResolveError>,
    failures: Vec<ProviderFailure>,
) -> Arc<ResolveError> {
    match failures.into_iter().next() {
        Some(failure) if err.is_registry_failure() => {
            Arc::new(ResolveError::CredentialProvider { failure, then: err })
        }
        _ => err,
    }
}

/// The credentials kubelet would try for `name`: the Pod's, then the node's.
pub(super) fn in_kubelet_order<'a>(
    pod: &'a Keyring,
    node: &'a Keyring,
    name: &str,
) -> Vec<&'a Credential> {
    let mut creds = pod.lookup(name);
    creds.extend(node.lookup(name));
    creds
}

/// Each credential to try in turn; anonymous when none matches.
pub(super) fn candidates<'a>(creds: &[&'a Credential]) -> Vec<Option<&'a Credential>> {
    if creds.is_empty() {
        vec![None]
    } else {
        creds.iter().map(|c| Some(*c)).collect()
    }
}
