//! The signature check of a pinned image against the policy, made before its label is read and
//! cached once verified.

use std::sync::Arc;

use super::Resolver;
use super::credentials::{candidates, in_kubelet_order};
use crate::distribution::Distribution;
use crate::error::ResolveError;
use crate::image_ref::ImageRef;
use crate::keyring::Keyring;
use crate::mirror::apply_mirrors;
use crate::signature::{Mode, SignatureCheck};

impl Resolver {
    /// Whether a `required` signature rule covers the image.
    pub(super) fn signature_required(&self, distribution: &Distribution, image: &ImageRef) -> bool {
        self.options
            .signatures
            .rule_for(distribution, image)
            .is_some_and(|(_, rule)| rule.mode == Mode::Required)
    }

    /// The signature check of the image pinned to `digest`, when a rule covers it: cached once
    /// verified; an error when a `required` rule's check fails.
    pub(super) async fn check_signature(
        &self,
        distribution: &Distribution,
        image: &ImageRef,
        digest: &str,
        keyring: &Keyring,
    ) -> Result<Option<Arc<SignatureCheck>>, Arc<ResolveError>> {
        let Some((index, rule)) = self.options.signatures.rule_for(distribution, image) else {
            return Ok(None);
        };
        let signatures_in = match &rule.signature_repository {
            Some(repository) => apply_mirrors(
                &self.options.mirrors,
                &ImageRef::parse(repository).map_err(|e| Arc::new(e.into()))?,
            ),
            None => image.clone(),
        };
        let key = format!("{index}|{digest}|{}", signatures_in.name());
        if let Some(check) = self.verified.get(&key).await {
            return Ok(Some(check));
        }
        let verdict = self
            .signature_verdict(&signatures_in, digest, keyring, &rule.keys)
            .await?;
        let check = Arc::new(SignatureCheck {
            rule: rule.name.clone(),
            mode: rule.mode,
            image: image.pinned(digest).to_string(),
            signatures_in: signatures_in.name(),
            keys: rule.key_names(),
            missing_keys: rule.missing_keys.clone(),
            verdict,
        });
        self.options.stats.signature(check.outcome());
        if check.verified() {
            self.verified.insert(key, check.clone()).await;
        } else if rule.mode == Mode::Required {
            return Err(Arc::new(ResolveError::Signature { check }));
        }
        Ok(Some(check))
    }

    /// The verdict from the signatures in `repository`, read with the credentials kubelet would
    /// use for it (the next one after a refusal).
    pub(super) async fn signature_verdict(
        &self,
        repository: &ImageRef,
        digest: &str,
        keyring: &Keyring,
        keys: &[crate::signature::PublicKey],
    ) -> Result<crate::signature::SignatureVerdict, Arc<ResolveError>> {
        let name = repository.name();
        let (node, _) = self.node_credentials(&name).await;
        let creds = in_kubelet_order(keyring, &node, &name);
        let mut rejected = Vec::new();
        for credential in candidates(&creds) {
            let client = self.client(repository, credential).await?;
            match crate::signature::fetch::verdict(&client, &repository.repository, digest, keys)
                .await
            {
                Ok(verdict) => return Ok(verdict),
                Err(source) if source.is_unauthorized() && credential.is_some() => {
                    rejected.push(credential.map(|c| c.source.to_string()).unwrap_or_default());
                }
                Err(source) => {
                    return Err(Arc::new(ResolveError::Registry {
                        image: name,
                        source,
                    }));
                }
            }
        }
        Err(Arc::new(ResolveError::CredentialsRejected {
            image: name,
            registry: repository.api_host().to_owned(),
            tried: rejected.join(", "),
        }))
    }
}
