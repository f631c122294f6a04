//! What the operator's cache of LlamaStackDistributions keeps: everything a reconcile reads,
//! and nothing else. Dropped before the cache: `managedFields` (the operator's writes are
//! server-side applies; owned objects' field managers are read fresh) and kubectl's
//! last-applied copy of the manifest. The list of providers in the status (what the server
//! reported: the largest part of a stack's object, about 17 KiB of heap a stack as decoded) is
//! kept as a [`ProvidersDigest`] only: no decision reads it, and the status step needs to know
//! only whether what it would write differs from what is stored. The server probe remembers its
//! last answer the same way ([`ServerProbe`](crate::controller::memory::server_info::ServerProbe)).
//!
//! A status built from a cached one may therefore carry a digest where the list was
//! ([`has_digests`]); before it is written, [`restore_providers`] puts the stored list back
//! (from a fresh read), so a status is never written without the list it had.

use serde_json::{Map, Value};

use super::field_digest::FieldDigest;
use crate::api::common::{ProviderInfo, ProvidersDigest};
use crate::api::v1alpha2::{LlamaStackDistribution, LlamaStackDistributionStatus};

/// What kubectl keeps on an object of the last `kubectl apply`: the whole spec again.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Slims `stack` for the cache (see the module documentation).
pub fn slim(stack: &mut LlamaStackDistribution) {
    stack.metadata.managed_fields = None;
    if let Some(annotations) = stack.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
    if let Some(status) = stack.status.as_mut() {
        slim_status(status);
    }
}

/// Replaces the list of providers in `status` with its digest. Idempotent, so a slimmed and a
/// full status compare equal exactly when their lists do.
pub(in crate::controller) fn slim_status(status: &mut LlamaStackDistributionStatus) {
    if let Some(config) = status.distribution_config.as_mut()
        && let Some(providers) = config.providers.take()
    {
        config.providers_digest = Some(providers_digest(&providers));
    }
}

/// Whether `status` carries a digest where the list of providers belongs.
pub(in crate::controller) fn has_digests(status: &LlamaStackDistributionStatus) -> bool {
    status
        .distribution_config
        .as_ref()
        .is_some_and(|c| c.providers.is_none() && c.providers_digest.is_some())
}

/// Puts back the list of providers `status` carries as a digest, from `stored` (the status as
/// the API server has it) when its list has that digest. One that no longer does (the object
/// changed since the cache saw it) is left out: the next read of the server writes it again.
pub(in crate::controller) fn restore_providers(
    status: &mut LlamaStackDistributionStatus,
    stored: &LlamaStackDistributionStatus,
) {
    if !has_digests(status) {
        return;
    }
    let stored = stored
        .distribution_config
        .as_ref()
        .and_then(|c| c.providers.as_ref());
    if let Some(config) = status.distribution_config.as_mut() {
        let wanted = config.providers_digest.take();
        config.providers = stored
            .filter(|list| Some(providers_digest(list)) == wanted)
            .cloned();
    }
}

/// The digest of a list of providers: their order, identity, health, and configs in any key
/// order (the API server and the server may list a config's keys in different orders).
pub(in crate::controller) fn providers_digest(providers: &[ProviderInfo]) -> ProvidersDigest {
    let mut digest = FieldDigest::new();
    digest.count(providers.len());
    for provider in providers {
        digest.str(&provider.api);
        digest.str(&provider.provider_id);
        digest.str(&provider.provider_type);
        match &provider.config {
            Some(config) => feed_map(config, &mut digest),
            None => digest.tag(b'-'),
        }
        match &provider.health {
            Some(health) => {
                digest.tag(b'h');
                digest.str(&health.status);
                digest.opt_str(health.message.as_deref());
            }
            None => digest.tag(b'-'),
        }
    }
    ProvidersDigest {
        count: u32::try_from(providers.len()).unwrap_or(u32::MAX),
        digest: digest.finish(),
    }
}

/// A JSON object with its keys in order, so that key order does not change the digest.
fn feed_map(map: &Map<String, Value>, digest: &mut FieldDigest) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    digest.tag(b'{');
    digest.count(keys.len());
    for key in keys {
        digest.str(key);
        if let Some(value) = map.get(key) {
            feed(value, digest);
        }
    }
}

fn feed(value: &Value, digest: &mut FieldDigest) {
    match value {
        Value::Object(map) => feed_map(map, digest),
        Value::Array(items) => {
            digest.tag(b'[');
            digest.count(items.len());
            for item in items {
                feed(item, digest);
            }
        }
        Value::String(s) => {
            digest.tag(b's');
            digest.str(s);
        }
        other => {
            digest.tag(b'v');
            digest.str(&other.to_string());
        }
    }
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

    fn digest_of(status: &LlamaStackDistributionStatus) -> Option<ProvidersDigest> {
        status.distribution_config.as_ref()?.providers_digest
    }

    #[test]
    fn the_cache_keeps_no_managed_fields_kubectls_copy_nor_providers_and_everything_else() {
        let full = status(&[json!({"url": "http://v:8000/v1", "max_tokens": 4096})]);
        let mut stack: LlamaStackDistribution = serde_json::from_value(json!({
            "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s", "namespace": "n",
                "annotations": {LAST_APPLIED: "{\"spec\": {}}", "llamastack.io/repin": "1"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"distribution": {"name": "starter"}},
            "status": serde_json::to_value(&full).unwrap()
        }))
        .unwrap();
        let mut expected = stack.clone();
        slim(&mut stack);
        expected.metadata.managed_fields = None;
        expected.metadata.annotations =
            Some([("llamastack.io/repin".to_owned(), "1".to_owned())].into());
        let cached = stack.status.as_ref().unwrap();
        assert!(has_digests(cached), "{cached:?}");
        let providers = full
            .distribution_config
            .as_ref()
            .unwrap()
            .providers
            .as_ref();
        assert_eq!(
            digest_of(cached),
            Some(providers_digest(providers.unwrap()))
        );
        assert_eq!(digest_of(cached).unwrap().count, 1);
        let status = expected.status.as_mut().unwrap();
        status.distribution_config.as_mut().unwrap().providers = None;
        assert_eq!(
            serde_json::to_value(&stack).unwrap(),
            serde_json::to_value(&expected).unwrap(),
            "nothing else changes"
        );
    }

    #[test]
    fn slimmed_statuses_compare_equal_exactly_when_their_providers_do() {
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
        let slimmed = |mut status: LlamaStackDistributionStatus| {
            slim_status(&mut status);
            status
        };
        // The same config with its keys in another order: the same digest.
        let reordered = status(&[
            json!({"tls": {"verify": true}, "url": "http://v"}),
            json!({}),
        ]);
        assert_eq!(slimmed(reordered), cached);
        // Another value, one provider fewer, a string for a number: another digest.
        for other in [
            status(&[
                json!({"url": "http://w", "tls": {"verify": true}}),
                json!({}),
            ]),
            status(&[json!({"url": "http://v", "tls": {"verify": true}})]),
        ] {
            assert_ne!(slimmed(other), cached);
        }
        assert_ne!(
            slimmed(status(&[json!({"n": "1"})])),
            slimmed(status(&[json!({"n": 1})]))
        );
        // Another health: its status or its message.
        let with_health = |status: &str, message: Option<&str>| {
            let mut full = full.clone();
            let providers = full
                .distribution_config
                .as_mut()
                .unwrap()
                .providers
                .as_mut();
            providers.unwrap()[0].health = Some(crate::api::common::ProviderHealth {
                status: status.into(),
                message: message.map(str::to_owned),
            });
            slimmed(full)
        };
        let ok = with_health("OK", None);
        assert_ne!(ok, cached);
        assert_ne!(with_health("Error", None), ok);
        assert_ne!(with_health("OK", Some("slow")), ok);
    }

    #[test]
    fn the_stored_list_is_put_back_never_left_out_unless_it_changed() {
        let stored = status(&[json!({"url": "http://v"}), json!({"key": "${env.KEY}"})]);
        let mut built = stored.clone();
        slim_status(&mut built);
        assert!(has_digests(&built));
        restore_providers(&mut built, &stored);
        assert_eq!(built, stored);
        assert!(!has_digests(&built));
        // The stored object changed since the cache saw it: the list is left out (the next read
        // of the server writes it), never a stale one written.
        let mut built = stored.clone();
        slim_status(&mut built);
        let moved = status(&[
            json!({"url": "http://elsewhere"}),
            json!({"key": "${env.KEY}"}),
        ]);
        restore_providers(&mut built, &moved);
        assert_eq!(built.distribution_config.as_ref().unwrap().providers, None);
        assert!(!has_digests(&built));
        // A status that carries its list keeps it.
        let mut listed = stored.clone();
        restore_providers(&mut listed, &moved);
        assert_eq!(listed, stored);
    }
}
