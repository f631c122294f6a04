//! Whether the Secrets and ConfigMaps an object refers to exist.
//!
//! Admission reports missing ones as **warnings**, not denials: GitOps tools often apply a
//! resource before its Secret, and denying would deadlock them. The reconciler reports the
//! same problem in `SecretsResolved` until it is fixed.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use crate::api::object_refs::{RefKind, Reference};

/// Warnings for references that do not resolve (never the content of a Secret).
pub async fn check(client: &kube::Client, namespace: &str, refs: &[Reference]) -> Vec<String> {
    let mut warnings = Vec::new();
    for r in refs {
        let ns = r.namespace.as_deref().unwrap_or(namespace);
        let (found, keys): (Result<Option<()>, kube::Error>, Vec<String>) = match r.kind {
            RefKind::Secret => match Api::<Secret>::namespaced(client.clone(), ns)
                .get_opt(&r.name)
                .await
            {
                Ok(Some(s)) => {
                    let mut keys: Vec<String> = s.data.unwrap_or_default().into_keys().collect();
                    keys.extend(s.string_data.unwrap_or_default().into_keys());
                    (Ok(Some(())), keys)
                }
                Ok(None) => (Ok(None), Vec::new()),
                Err(e) => (Err(e), Vec::new()),
            },
            RefKind::ConfigMap => match Api::<ConfigMap>::namespaced(client.clone(), ns)
                .get_opt(&r.name)
                .await
            {
                Ok(found) => (Ok(found.map(|_| ())), Vec::new()),
                Err(e) => (Err(e), Vec::new()),
            },
        };
        let kind = match r.kind {
            RefKind::Secret => "Secret",
            RefKind::ConfigMap => "ConfigMap",
        };
        match found {
            Ok(None) => warnings.push(format!("{}: {kind} {:?} not found in namespace {ns:?}; the operator reports it in the status until it exists", r.path, r.name)),
            Ok(Some(())) => {
                if let Some(key) = &r.key
                    && !keys.contains(key)
                {
                    warnings.push(format!("{}: key {key:?} not found in Secret {:?} (namespace {ns:?}); available keys: {}", r.path.trim_end_matches(".name"), r.name, keys.join(", ")));
                }
            }
            Err(e) => warnings.push(format!("{}: cannot check {kind} {:?}: {e}", r.path, r.name)),
        }
    }
    warnings
}
