//! What the operator's caches of LlamaStackDistributions and OGXServers keep: everything a
//! reconcile reads, and nothing else (an OGXServer's status holds the same parts as a stack's,
//! and is slimmed the same way). Dropped before the cache: `managedFields` (the operator's writes are
//! server-side applies; owned objects' field managers are read fresh) and kubectl's
//! last-applied copy of the manifest. The list of providers in the status (what the server
//! reported: the largest part of a stack's object, about 17 KiB of heap a stack as decoded) is
//! kept as a [`ProvidersDigest`] only: no decision reads it, and the status step needs to know
//! only whether what it would write differs from what is stored. The server probe remembers its
//! last answer the same way ([`ServerProbe`](crate::controller::memory::server_info::ServerProbe)).
//! The map of available distributions (every name the catalog resolves, with its image: the
//! same in every stack, and made anew by every reconcile that plans) is kept as a digest too.
//! Last, the object is copied once: the decoder grows its lists by doubling (nine conditions
//! take room for sixteen), a copy takes what they hold.
//!
//! A status built from a cached one may therefore carry a digest where a list was
//! ([`has_digests`]: one that did not plan, blocked or refused); before it is written,
//! [`restore`] puts the stored lists back (from a fresh read), so a status is never written
//! without what it had.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::field_digest::FieldDigest;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PartialObjectMeta;

use crate::api::common::{DistributionConfig, ProviderInfo, ProvidersDigest};
use crate::api::compact_conditions::CompactConditions;
use crate::api::ogx::{self, OGXServer};
use crate::api::v1alpha2::{LlamaStackDistribution, LlamaStackDistributionStatus};
use crate::core::adoption;

/// What kubectl keeps on an object of the last `kubectl apply`: the whole spec again.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// An object as a cache of the operator keeps it: each of its watches' caches slims what it
/// stores (`watches::cached`).
pub trait Slimmed {
    /// Drops what no reader of the cache reads.
    fn slim(&mut self);
}

impl Slimmed for LlamaStackDistribution {
    fn slim(&mut self) {
        slim(self);
    }
}

impl Slimmed for OGXServer {
    fn slim(&mut self) {
        slim_server(self);
    }
}

impl Slimmed for PartialObjectMeta<OGXServer> {
    fn slim(&mut self) {
        slim_server_meta(self);
    }
}

/// Slims `stack` for the cache (see the module documentation).
pub fn slim(stack: &mut LlamaStackDistribution) {
    slim_metadata(&mut stack.metadata);
    if let Some(status) = stack.status.as_mut() {
        slim_status(status);
    }
    *stack = stack.clone();
}

/// Slims `server` for the OGXServers' cache as [`slim`] does a stack: both statuses hold the
/// same conditions and the same [`DistributionConfig`], and an OGXServer's is read into the
/// model with the digests and the conditions it keeps here (`ogx_server::status::into_model`).
pub fn slim_server(server: &mut OGXServer) {
    slim_metadata(&mut server.metadata);
    if let Some(status) = server.status.as_mut() {
        if let Some(conditions) = status.conditions.take() {
            status.compact_conditions = Some(CompactConditions::new(&conditions));
        }
        if let Some(config) = status.distribution_config.as_mut() {
            slim_server_config(config);
        }
    }
    *server = server.clone();
}

/// What the stacks' controller keeps of an OGXServer (its metadata store, which decides whether a
/// stack stands down): where it is, and the annotations that ask to take a stack's objects.
/// Everything else of its metadata, its field managers above all (a status written by the
/// operator is a large `managedFields` tree), is read by no one there.
pub fn slim_server_meta(server: &mut PartialObjectMeta<OGXServer>) {
    let metadata = std::mem::take(&mut server.metadata);
    let annotations: BTreeMap<String, String> = metadata
        .annotations
        .into_iter()
        .flatten()
        .filter(|(key, _)| adoption::REQUESTS.contains(&key.as_str()))
        .collect();
    server.metadata = ObjectMeta {
        name: metadata.name,
        namespace: metadata.namespace,
        uid: metadata.uid,
        resource_version: metadata.resource_version,
        annotations: Some(annotations).filter(|a| !a.is_empty()),
        ..ObjectMeta::default()
    };
}

/// [`slim_config`] for an OGXServer's: its providers are digested as the model reads them, so
/// that the digest is the one the status step computes for the same list.
fn slim_server_config(config: &mut ogx::DistributionConfig) {
    if let Some(providers) = config.providers.take() {
        match crate::ogx_server::status::providers_into_model(&providers) {
            Ok(model) => config.providers_digest = Some(providers_digest(&model)),
            // A defect (both hold the same fields): the list is kept whole.
            Err(_) => config.providers = Some(providers),
        }
    }
    if let Some(available) = config.available_distributions.take() {
        config.available_digest = Some(available_digest(&available));
    }
}

/// What no reconcile reads of an object's metadata: its field managers and kubectl's copy.
fn slim_metadata(metadata: &mut ObjectMeta) {
    metadata.managed_fields = None;
    if let Some(annotations) = metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

/// Replaces the list of providers and the map of available distributions in `status` with
/// their digests. Idempotent, so a slimmed and a full status compare equal exactly when their
/// lists do.
pub(in crate::controller) fn slim_status(status: &mut LlamaStackDistributionStatus) {
    if let Some(conditions) = status.conditions.take() {
        status.compact_conditions = Some(CompactConditions::new(&conditions));
    }
    if let Some(config) = status.distribution_config.as_mut() {
        slim_config(config);
    }
}

/// The lists of `config` as their digests.
fn slim_config(config: &mut DistributionConfig) {
    if let Some(providers) = config.providers.take() {
        config.providers_digest = Some(providers_digest(&providers));
    }
    if let Some(available) = config.available_distributions.take() {
        config.available_digest = Some(available_digest(&available));
    }
}

/// `stack` as a reconcile reads it: the cache's copy with its conditions as they are stored
/// (the lists kept as digests stay so: [`restore`] puts them back before a write).
pub fn expanded(stack: &LlamaStackDistribution) -> LlamaStackDistribution {
    let mut stack = stack.clone();
    if let Some(status) = stack.status.as_mut()
        && let Some(compact) = status.compact_conditions.take()
    {
        status.conditions = Some(compact.expand());
    }
    stack
}

/// What the status step remembers of a status it wrote (`recent_writes`): a slimmed status as
/// JSON with what its digests stand for, so that two statuses differing only in their
/// conditions, providers or available distributions are remembered apart.
pub(in crate::controller) fn remembered(status: &LlamaStackDistributionStatus) -> Value {
    let mut whole = status.clone();
    if let Some(compact) = whole.compact_conditions.take() {
        whole.conditions = Some(compact.expand());
    }
    let config = whole.distribution_config.as_ref();
    let hex = |bytes: Option<&[u8]>| {
        bytes.map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>())
    };
    serde_json::json!({
        "status": serde_json::to_value(&whole).unwrap_or_default(),
        "providers": hex(config.and_then(|c| c.providers_digest.as_ref()).map(|d| &d.digest[..])),
        "available": hex(config.and_then(|c| c.available_digest.as_ref()).map(|d| &d[..])),
    })
}

/// Whether `status` carries a digest where the list of providers or the map of available
/// distributions belongs.
pub(in crate::controller) fn has_digests(status: &LlamaStackDistributionStatus) -> bool {
    status.distribution_config.as_ref().is_some_and(|c| {
        (c.providers.is_none() && c.providers_digest.is_some())
            || (c.available_distributions.is_none() && c.available_digest.is_some())
    })
}

/// Puts back what `status` carries as digests, from `stored` (the status as the API server has
/// it) where its list has that digest. One that no longer does (the object changed since the
/// cache saw it) is left out: the next read of the server writes the providers again, the next
/// reconcile that plans the available distributions.
pub(in crate::controller) fn restore(
    status: &mut LlamaStackDistributionStatus,
    stored: &LlamaStackDistributionStatus,
) {
    let stored = stored.distribution_config.as_ref();
    let Some(config) = status.distribution_config.as_mut() else {
        return;
    };
    if config.providers.is_none()
        && let Some(wanted) = config.providers_digest.take()
    {
        config.providers = stored
            .and_then(|c| c.providers.as_ref())
            .filter(|list| providers_digest(list) == wanted)
            .cloned();
    }
    if config.available_distributions.is_none()
        && let Some(wanted) = config.available_digest.take()
    {
        config.available_distributions = stored
            .and_then(|c| c.available_distributions.as_ref())
            .filter(|map| available_digest(map) == wanted)
            .cloned();
    }
}

/// The digest of the available distributions: each name and its image, in the map's order.
fn available_digest(available: &BTreeMap<String, String>) -> [u8; 16] {
    let mut digest = FieldDigest::new();
    digest.count(available.len());
    for (name, image) in available {
        digest.str(name);
        digest.str(image);
    }
    digest.finish()
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
        restore(&mut built, &stored);
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
        restore(&mut built, &moved);
        assert_eq!(built.distribution_config.as_ref().unwrap().providers, None);
        assert!(!has_digests(&built));
        // A status that carries its list keeps it.
        let mut listed = stored.clone();
        restore(&mut listed, &moved);
        assert_eq!(listed, stored);
    }

    #[test]
    fn the_available_distributions_are_a_digest_in_the_cache_and_put_back_as_stored() {
        let with = |images: &[(&str, &str)]| -> LlamaStackDistributionStatus {
            let mut status = status(&[]);
            status
                .distribution_config
                .as_mut()
                .unwrap()
                .available_distributions = Some(
                images
                    .iter()
                    .map(|(n, i)| ((*n).to_owned(), (*i).to_owned()))
                    .collect(),
            );
            status
        };
        let stored = with(&[
            ("rh", "quay.io/opendatahub/odh-ogx-core:latest"),
            ("starter", "s:1"),
        ]);
        let mut cached = stored.clone();
        slim_status(&mut cached);
        assert_eq!(
            cached
                .distribution_config
                .as_ref()
                .unwrap()
                .available_distributions,
            None
        );
        assert!(has_digests(&cached));
        // A reconcile that plans sets the map again: the same one compares equal to the cache's.
        let mut planned = stored.clone();
        slim_status(&mut planned);
        assert_eq!(planned, cached);
        let mut other = with(&[
            ("rh", "mirror.example/odh-ogx-core:latest"),
            ("starter", "s:1"),
        ]);
        slim_status(&mut other);
        assert_ne!(other, cached, "an image changed");
        let mut renamed = with(&[
            ("rh-dev", "quay.io/opendatahub/odh-ogx-core:latest"),
            ("starter", "s:1"),
        ]);
        slim_status(&mut renamed);
        assert_ne!(renamed, cached, "a name changed");
        // One that did not plan (a blocked or refused reconcile) writes the stored map again.
        let mut built = cached.clone();
        restore(&mut built, &stored);
        assert_eq!(built, stored);
        // Not a map that changed since the cache saw it.
        let mut built = cached.clone();
        restore(&mut built, &with(&[("starter", "s:2")]));
        assert_eq!(
            built
                .distribution_config
                .as_ref()
                .unwrap()
                .available_distributions,
            None
        );
        assert!(!has_digests(&built));
    }

    /// The status step remembers its writes of the last seconds by this: two statuses that
    /// differ only in what the cache keeps as digests (the providers, the available
    /// distributions) or compact (the conditions) are remembered apart.
    #[test]
    fn statuses_differing_only_in_what_digests_stand_for_are_remembered_apart() {
        let remembered_of = |mut status: LlamaStackDistributionStatus| {
            slim_status(&mut status);
            remembered(&status)
        };
        let base = status(&[json!({"url": "http://v"})]);
        let mut other_providers = base.clone();
        other_providers
            .distribution_config
            .as_mut()
            .unwrap()
            .providers = status(&[json!({"url": "http://w"})])
            .distribution_config
            .unwrap()
            .providers;
        let mut other_available = base.clone();
        other_available
            .distribution_config
            .as_mut()
            .unwrap()
            .available_distributions = Some([("starter".to_owned(), "s:1".to_owned())].into());
        let mut other_condition: LlamaStackDistributionStatus = serde_json::from_value(json!({
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "m",
                "lastTransitionTime": "2026-12-02T17:12:44Z"}]
        }))
        .unwrap();
        other_condition.distribution_config = base.distribution_config.clone();
        let all = [
            base.clone(),
            other_providers,
            other_available,
            other_condition,
        ];
        let remembered: Vec<Value> = all.into_iter().map(remembered_of).collect();
        for (i, a) in remembered.iter().enumerate() {
            for b in &remembered[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(
            remembered_of(base.clone()),
            remembered_of(base),
            "the same status"
        );
    }

    /// What the cache holds for one Ready stack as the API server served it (the scale bench's,
    /// `tests/fixtures/scale/`): the decoded, slimmed object inline and on the heap, the way the
    /// watch decodes it. Issue 62 asks for half the memory; the LLSD cache was 7.1 KiB a stack
    /// of live heap at 1000 stacks (docs/performance.md), so its share is half that.
    #[test]
    fn a_ready_stack_costs_the_cache_at_most_its_share() {
        let text = include_str!("../../../tests/fixtures/scale/ready-stack.json");
        // As in the cache of many stacks: the messages they share are held already.
        let mut other: LlamaStackDistribution = serde_json::from_str(text).unwrap();
        slim(&mut other);
        let (stack, heap) = crate::heap_count::held_by(|| {
            let mut stack: LlamaStackDistribution = serde_json::from_str(text).unwrap();
            slim(&mut stack);
            stack
        });
        let inline = std::mem::size_of::<LlamaStackDistribution>();
        let held = |part: &dyn Fn() -> Box<dyn std::any::Any>| crate::heap_count::held_by(part).1;
        let status = stack.status.clone().unwrap();
        let parts = [
            ("metadata", held(&|| Box::new(stack.metadata.clone()))),
            ("spec", held(&|| Box::new(stack.spec.clone()))),
            (
                "conditions",
                held(&|| Box::new(status.compact_conditions.clone())),
            ),
            (
                "distributionConfig",
                held(&|| Box::new(status.distribution_config.clone())),
            ),
            (
                "resolvedDistribution",
                held(&|| Box::new(status.resolved_distribution.clone())),
            ),
            ("rollback", held(&|| Box::new(status.rollback.clone()))),
            (
                "rest of the status",
                held(&|| {
                    let mut rest = status.clone();
                    rest.compact_conditions = None;
                    rest.distribution_config = None;
                    rest.resolved_distribution = None;
                    rest.rollback = None;
                    Box::new(rest)
                }),
            ),
        ];
        let total = inline + heap;
        println!(
            "a cached Ready stack: {total} bytes ({inline} inline, {heap} on the heap): {parts:?}"
        );
        assert!(
            total <= 7 * 1024 / 2,
            "a cached Ready stack holds {total} bytes ({inline} inline, {heap} on the heap; \
             cloned exactly: {parts:?})"
        );
    }

    /// The scale bench's Ready stack (`tests/fixtures/scale/`) as an `OGXServer`: its metadata,
    /// the distribution of the OGX operator's sample (`tests/fixtures/ogx-operator/`), and its
    /// status as this operator writes it for an OGXServer (`ogx_server::status::from_model`).
    fn ready_server_text() -> String {
        let stack: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/scale/ready-stack.json"
        ))
        .unwrap();
        let status: LlamaStackDistributionStatus =
            serde_json::from_value(stack["status"].clone()).unwrap();
        let status = crate::ogx_server::status::from_model(&status).unwrap();
        json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer", "metadata": stack["metadata"],
            "spec": {"distribution": {"name": "starter"}}, "status": status})
        .to_string()
    }

    /// Issue 62 asks for the OGXServers' cache to keep only what a step reads too: a Ready
    /// OGXServer costs it no more than a stack's share.
    #[test]
    fn a_ready_ogx_server_costs_the_cache_no_more_than_a_stack_does() {
        let text = ready_server_text();
        let mut other: OGXServer = serde_json::from_str(&text).unwrap();
        slim_server(&mut other);
        let held = |slimmed: bool| {
            let (_, heap) = crate::heap_count::held_by(|| {
                let mut server: OGXServer = serde_json::from_str(&text).unwrap();
                if slimmed {
                    slim_server(&mut server);
                }
                server
            });
            heap + std::mem::size_of::<OGXServer>()
        };
        let (decoded, cached) = (held(false), held(true));
        println!("a Ready OGXServer: {decoded} bytes as decoded, {cached} in the cache");
        assert!(
            cached <= 7 * 1024 / 2,
            "a cached Ready OGXServer holds {cached} bytes ({decoded} as decoded)"
        );
    }

    /// The stacks' controller keeps every OGXServer's metadata, to know which stacks stand down:
    /// the Ready server's (with the field managers of its status, as served) costs it no more than
    /// a few hundred bytes, and what `taken_over` reads of it, its name and the annotations that
    /// ask to take a stack's objects, is kept as served.
    #[test]
    fn the_stacks_controller_keeps_of_an_ogx_server_only_where_it_is_and_what_it_asks_to_take() {
        let mut server: Value = serde_json::from_str(&ready_server_text()).unwrap();
        let last_applied = server.to_string();
        server["metadata"]["annotations"] = [
            (adoption::ADOPT_STORAGE, "old-stack"),
            (adoption::ADOPT_NETWORKING, "old-stack"),
            (LAST_APPLIED, last_applied.as_str()),
            ("team", "platform"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), json!(value)))
        .collect::<Map<String, Value>>()
        .into();
        let text = server.to_string();
        let held = |text: &str, slimmed: bool| {
            crate::heap_count::held_by(|| {
                let mut meta: PartialObjectMeta<OGXServer> = serde_json::from_str(text).unwrap();
                if slimmed {
                    slim_server_meta(&mut meta);
                }
                meta
            })
        };
        let ((served, decoded), (kept, cached)) = (held(&text, false), held(&text, true));
        println!(
            "an OGXServer's metadata asking to take: {decoded} bytes as decoded, {cached} kept"
        );
        assert!(served.metadata.managed_fields.is_some() && decoded > 8 * cached);
        assert!(cached <= 1024, "{cached} bytes kept: {kept:?}");
        let plain = ready_server_text();
        let (plain_decoded, plain_cached) = (held(&plain, false).1, held(&plain, true).1);
        println!("an OGXServer's metadata: {plain_decoded} bytes as decoded, {plain_cached} kept");
        assert!(plain_cached <= 256, "{plain_cached} bytes kept");

        assert_eq!(kept.metadata.name, served.metadata.name);
        assert_eq!(kept.metadata.namespace, served.metadata.namespace);
        let asked = |meta: &PartialObjectMeta<OGXServer>| {
            adoption::requests("server", meta.metadata.annotations.as_ref()).unwrap()
        };
        assert_eq!(asked(&kept), asked(&served));
        assert_eq!(asked(&kept).storage.as_deref(), Some("old-stack"));
        assert_eq!(
            kept.metadata.annotations.as_ref().map(BTreeMap::len),
            Some(2),
            "{kept:?}"
        );
    }

    /// What the reconcile of an OGXServer reads from the cache is what it would read from the
    /// object served: the conditions whole and in their order, the lists as digests that compare
    /// as the status step compares, and put back from the stored status, the stored one.
    #[test]
    fn an_ogx_servers_cached_status_reads_into_the_model_as_the_served_one() {
        let served: OGXServer = serde_json::from_str(&ready_server_text()).unwrap();
        let mut cached = served.clone();
        slim_server(&mut cached);
        let kept = cached.status.as_ref().unwrap();
        assert!(kept.conditions.is_none(), "kept compact");
        let config = kept.distribution_config.as_ref().unwrap();
        assert!(config.providers.is_none() && config.available_distributions.is_none());
        assert!(cached.metadata.managed_fields.is_none());

        let into_model = |server: &OGXServer| {
            crate::ogx_server::status::into_model(server.status.as_ref().unwrap()).unwrap()
        };
        let (whole, from_cache) = (into_model(&served), into_model(&cached));
        assert!(whole.conditions.as_ref().is_some_and(|c| c.len() > 3));
        assert_eq!(from_cache.conditions, whole.conditions);
        assert!(has_digests(&from_cache), "{from_cache:?}");
        let slimmed = |mut status: LlamaStackDistributionStatus| {
            slim_status(&mut status);
            status
        };
        assert_eq!(slimmed(from_cache.clone()), slimmed(whole.clone()));
        let mut restored = from_cache;
        restore(&mut restored, &whole);
        assert_eq!(restored, whole);
    }
}
