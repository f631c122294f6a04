//! The managed CA bundle: certificates from the user's ConfigMap keys, each checked to be a
//! parseable X.509 certificate, re-encoded, and copied into an owned ConfigMap the Pods mount
//! (so a bundle in another namespace works, and nothing but certificates reaches the Pod).

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::naming::{CA_BUNDLE_KEY, labels};

/// Where the managed bundle is mounted in the server container.
pub const MOUNT_DIR: &str = "/etc/ssl/certs/ca-bundle";
/// Most bytes read from the source keys together.
pub const MAX_BUNDLE_BYTES: usize = 10 * 1024 * 1024;
/// Most certificates in one bundle.
pub const MAX_CERTIFICATES: usize = 1000;

/// Why a CA bundle cannot be used. Messages name the key and what to fix; never certificate bytes.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CaBundleError {
    /// A key holds something that is not PEM certificates.
    #[error("key \"{key}\": {detail}")]
    Invalid {
        /// Key.
        key: String,
        /// What is wrong.
        detail: String,
    },
    /// A key holds no certificate at all.
    #[error("key \"{key}\" holds no PEM CERTIFICATE block")]
    Empty {
        /// Key.
        key: String,
    },
    /// Too big.
    #[error("the CA bundle is larger than {MAX_BUNDLE_BYTES} bytes")]
    TooLarge,
    /// Too many certificates.
    #[error("the CA bundle holds more than {MAX_CERTIFICATES} certificates")]
    TooMany,
}

/// Checks the PEM text of each `(key, text)` and joins the certificates into one bundle.
/// Non-certificate PEM blocks (a stray private key) are dropped, never copied.
pub fn collect_certificates(sources: &[(String, String)]) -> Result<String, CaBundleError> {
    let total: usize = sources.iter().map(|(_, text)| text.len()).sum();
    if total > MAX_BUNDLE_BYTES {
        return Err(CaBundleError::TooLarge);
    }
    let mut out = String::new();
    let mut count = 0usize;
    for (key, text) in sources {
        let mut in_key = 0usize;
        for item in CertificateDer::pem_slice_iter(text.as_bytes()) {
            let der = item.map_err(|e| CaBundleError::Invalid {
                key: key.clone(),
                detail: format!("not valid PEM ({e})"),
            })?;
            webpki::EndEntityCert::try_from(&der).map_err(|e| CaBundleError::Invalid {
                key: key.clone(),
                detail: format!(
                    "certificate {} is not a valid X.509 certificate ({e:?})",
                    in_key + 1
                ),
            })?;
            count += 1;
            in_key += 1;
            if count > MAX_CERTIFICATES {
                return Err(CaBundleError::TooMany);
            }
            out.push_str(&pem(der.as_ref()));
        }
        if in_key == 0 {
            return Err(CaBundleError::Empty { key: key.clone() });
        }
    }
    Ok(out)
}

fn pem(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// The operator's copy of the validated bundle `pem`, named `name`, which the server mounts.
pub(super) fn managed_copy(name: &str, pem: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(
                labels::COMPONENT.to_owned(),
                "ca-bundle".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(CA_BUNDLE_KEY.to_owned(), pem.to_owned())])),
        ..ConfigMap::default()
    }
}
