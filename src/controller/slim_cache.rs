//! What the operator's cache of LlamaStackDistributions keeps: everything a reconcile reads,
//! and nothing else. Dropped before the cache: `managedFields` (the operator's writes are
//! server-side applies; owned objects' field managers are read fresh) and kubectl's
//! last-applied copy of the manifest. Each provider's config in the status (what the server
//! reported: the largest part of a stack's object) is kept as a digest only: the server probe
//! already holds the answer once per stack, and the status step needs to know only whether
//! what it would write differs from what is stored.
//!
//! A status built from a cached one may therefore carry digests where configs were
//! ([`has_digests`]); before it is written, [`restore_configs`] puts the stored configs back
//! (from a fresh read), so a digest never reaches the API server.

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::api::common::ProviderInfo;
use crate::api::v1alpha2::{LlamaStackDistribution, LlamaStackDistributionStatus};

/// What kubectl keeps on an object of the last `kubectl apply`: the whole spec again.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The key of the digest that stands in for a provider's config in the cache. A `$` key is
/// not one a server's config schema has.
const DIGEST_KEY: &str = "$llsoConfigDigest";

/// Slims `stack` for the cache (see the module documentation).
pub(super) fn slim(stack: &mut LlamaStackDistribution) {
    stack.metadata.managed_fields = None;
    if let Some(annotations) = stack.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
    if let Some(status) = stack.status.as_mut() {
        slim_status(status);
    }
}

/// Replaces each provider's config in `status` with its digest. Idempotent, so a slimmed and a
/// full status compare equal exactly when their configs do.
pub(super) fn slim_status(status: &mut LlamaStackDistributionStatus) {
    providers_mut(status).for_each(slim_provider);
}

/// Replaces each provider's config with its digest, as the cache keeps it: what the server probe
/// remembers between reads (the reconcile that read the server writes the full answer).
pub(super) fn slim_providers(providers: &mut [ProviderInfo]) {
    providers.iter_mut().for_each(slim_provider);
}

fn slim_provider(provider: &mut ProviderInfo) {
    if let Some(config) = provider.config.as_mut()
        && !is_digest(config)
    {
        *config = Map::from_iter([(DIGEST_KEY.to_owned(), Value::String(digest(config)))]);
    }
}

/// Whether `status` carries a digest where a config belongs.
pub(super) fn has_digests(status: &LlamaStackDistributionStatus) -> bool {
    status
        .distribution_config
        .iter()
        .flat_map(|d| d.providers.iter().flatten())
        .any(|p| p.config.as_ref().is_some_and(is_digest))
}

/// Puts back the configs `status` carries as digests, from `stored` (the status as the API
/// server has it): the config of the same provider whose digest matches. One that no longer
/// matches (the object changed since) is left out, never written as a digest.
pub(super) fn restore_configs(
    status: &mut LlamaStackDistributionStatus,
    stored: &LlamaStackDistributionStatus,
) {
    let stored: Vec<&ProviderInfo> = stored
        .distribution_config
        .iter()
        .flat_map(|d| d.providers.iter().flatten())
        .collect();
    for provider in providers_mut(status) {
        let Some(wanted) = provider
            .config
            .as_ref()
            .and_then(digest_of)
            .map(str::to_owned)
        else {
            continue;
        };
        provider.config = stored
            .iter()
            .find(|s| {
                s.api == provider.api
                    && s.provider_id == provider.provider_id
                    && s.config.as_ref().is_some_and(|c| digest(c) == wanted)
            })
            .and_then(|s| s.config.clone());
    }
}

fn providers_mut(
    status: &mut LlamaStackDistributionStatus,
) -> impl Iterator<Item = &mut ProviderInfo> {
    status
        .distribution_config
        .iter_mut()
        .flat_map(|d| d.providers.iter_mut().flatten())
}

fn is_digest(config: &Map<String, Value>) -> bool {
    digest_of(config).is_some()
}

fn digest_of(config: &Map<String, Value>) -> Option<&str> {
    match (config.len(), config.get(DIGEST_KEY)) {
        (1, Some(Value::String(digest))) => Some(digest),
        _ => None,
    }
}

/// A digest of a config that does not depend on the order of its keys (the API server and the
/// server may list them in different orders).
fn digest(config: &Map<String, Value>) -> String {
    let mut hasher = Sha256::new();
    feed_map(config, &mut hasher);
    let hash = hasher.finalize();
    hash.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

fn feed_map(map: &Map<String, Value>, hasher: &mut Sha256) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    hasher.update(b"{");
    for key in keys {
        feed_str(key, hasher);
        if let Some(value) = map.get(key) {
            feed(value, hasher);
        }
    }
    hasher.update(b"}");
}

fn feed(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(map) => feed_map(map, hasher),
        Value::Array(items) => {
            hasher.update(b"[");
            hasher.update((items.len() as u64).to_le_bytes());
            for item in items {
                feed(item, hasher);
            }
            hasher.update(b"]");
        }
        Value::String(s) => {
            hasher.update(b"s");
            feed_str(s, hasher);
        }
        other => {
            hasher.update(b"v");
            feed_str(&other.to_string(), hasher);
        }
    }
}

fn feed_str(s: &str, hasher: &mut Sha256) {
    hasher.update((s.len() as u64).to_le_bytes());
    hasher.update(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn status(configs: &[Value]) -> LlamaStackDistributionStatus {
        let providers: Vec<Value> = configs
            .iter()
            .enumerate()
            .map(|(i, config)| {
                json!({"api": "inference", "provider_id": format!("p{i}"), "provider_type": "remote::vllm", "config": config})
            })
            .collect();
        serde_json::from_value(
            json!({"phase": "Ready", "distributionConfig": {"providers": providers}}),
        )
        .unwrap()
    }

    fn configs(status: &LlamaStackDistributionStatus) -> Vec<Option<Map<String, Value>>> {
        status
            .distribution_config
            .iter()
            .flat_map(|d| d.providers.iter().flatten())
            .map(|p| p.config.clone())
            .collect()
    }

    #[test]
    fn the_cache_keeps_no_managed_fields_kubectls_copy_nor_configs_and_everything_else() {
        let mut stack: LlamaStackDistribution = serde_json::from_value(json!({
            "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s", "namespace": "n",
                "annotations": {LAST_APPLIED: "{\"spec\": {}}", "llamastack.io/repin": "1"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"distribution": {"name": "starter"}},
            "status": serde_json::to_value(status(&[json!({"url": "http://v:8000/v1", "max_tokens": 4096})])).unwrap()
        }))
        .unwrap();
        let mut expected = stack.clone();
        slim(&mut stack);
        expected.metadata.managed_fields = None;
        expected.metadata.annotations =
            Some([("llamastack.io/repin".to_owned(), "1".to_owned())].into());
        let slimmed = configs(stack.status.as_ref().unwrap());
        assert!(is_digest(slimmed[0].as_ref().unwrap()), "{slimmed:?}");
        expected.status = stack.status.clone();
        assert_eq!(
            serde_json::to_value(&stack).unwrap(),
            serde_json::to_value(&expected).unwrap()
        );
    }

    #[test]
    fn slimmed_statuses_compare_equal_exactly_when_their_configs_do() {
        let full = status(&[
            json!({"url": "http://v", "tls": {"verify": true}}),
            json!({}),
        ]);
        let mut cached = full.clone();
        slim_status(&mut cached);
        assert_ne!(cached, full);
        let mut again = cached.clone();
        slim_status(&mut again);
        assert_eq!(again, cached, "idempotent");
        // The same config with its keys in another order: the same digest.
        let mut reordered = status(&[
            json!({"tls": {"verify": true}, "url": "http://v"}),
            json!({}),
        ]);
        slim_status(&mut reordered);
        assert_eq!(reordered, cached);
        // Another value: another digest.
        let mut changed = status(&[
            json!({"url": "http://w", "tls": {"verify": true}}),
            json!({}),
        ]);
        slim_status(&mut changed);
        assert_ne!(changed, cached);
        // A string and a number that print alike differ.
        let (mut text, mut number) = (status(&[json!({"n": "1"})]), status(&[json!({"n": 1})]));
        slim_status(&mut text);
        slim_status(&mut number);
        assert_ne!(text, number);
    }

    #[test]
    fn digests_are_put_back_from_the_stored_status_never_written() {
        let stored = status(&[json!({"url": "http://v"}), json!({"key": "${env.KEY}"})]);
        let mut built = stored.clone();
        slim_status(&mut built);
        assert!(has_digests(&built));
        restore_configs(&mut built, &stored);
        assert_eq!(built, stored);
        assert!(!has_digests(&built));
        // The stored object changed since the cache saw it: that config is left out.
        let mut built = stored.clone();
        slim_status(&mut built);
        let moved = status(&[
            json!({"url": "http://elsewhere"}),
            json!({"key": "${env.KEY}"}),
        ]);
        restore_configs(&mut built, &moved);
        assert_eq!(
            configs(&built),
            vec![
                None,
                Some(json!({"key": "${env.KEY}"}).as_object().unwrap().clone())
            ]
        );
        assert!(!has_digests(&built));
    }
}
