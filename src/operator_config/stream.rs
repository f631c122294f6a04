//! The operator ConfigMap's data (with the OGX operator ConfigMap's image-overrides) as a stream
//! of changes, for the controller (which rebuilds its resolver) and the webhooks (which follow
//! the image-overrides).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::watcher::{self, Event, watcher};

use super::{OGX_IMAGE_OVERRIDES, OGX_OPERATOR_CONFIG_MAP, OPERATOR_CONFIG_MAP};
use crate::metrics::{WatchHealth, WatchId};
use crate::watch_backoff::resilient;

/// The operator ConfigMap's data in `namespace` (empty while it does not exist), with the OGX
/// operator ConfigMap's `image-overrides` under [`OGX_IMAGE_OVERRIDES`] when it has some: once
/// both first lists are complete, then each time either changes what is given out. A relist is
/// taken whole, so a ConfigMap deleted while the watch was broken is seen as deleted. `kinds`
/// name the two watches (the operator's, the OGX operator's) in `/healthz` and the watch metrics;
/// their failures are recorded in `health` and retried.
pub(crate) fn operator_config_data(
    client: &kube::Client,
    namespace: &str,
    kinds: [&'static str; 2],
    health: Arc<WatchHealth>,
) -> impl Stream<Item = BTreeMap<String, String>> + Send + 'static {
    let [own_kind, ogx_kind] = kinds;
    let own = config_map_data(
        client,
        namespace,
        OPERATOR_CONFIG_MAP,
        own_kind,
        health.clone(),
    )
    .map(Part::Own);
    let ogx = config_map_data(client, namespace, OGX_OPERATOR_CONFIG_MAP, ogx_kind, health)
        .map(Part::Ogx);
    let mut settings = Combined::default();
    futures_util::stream::select(own, ogx)
        .filter_map(move |part| std::future::ready(settings.on(part)))
}

/// The data of the ConfigMap `name` in `namespace`: once when the first list is complete, then
/// each time it changes.
fn config_map_data(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kind: &'static str,
    health: Arc<WatchHealth>,
) -> impl Stream<Item = BTreeMap<String, String>> + Send + 'static {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut changes = ConfigMapChanges::default();
    let watch = WatchId::of(kind).within(Some(namespace));
    resilient(watcher(api, config), watch, health)
        .filter_map(move |event| std::future::ready(event.ok().and_then(|e| changes.on(e))))
}

/// The data of one of the two ConfigMaps.
#[derive(Debug)]
enum Part {
    /// The operator ConfigMap's.
    Own(BTreeMap<String, String>),
    /// The OGX operator ConfigMap's.
    Ogx(BTreeMap<String, String>),
}

/// The settings' data from the two ConfigMaps, given out once both have been read.
#[derive(Debug, Default)]
struct Combined {
    own: Option<BTreeMap<String, String>>,
    /// The OGX operator ConfigMap's `image-overrides` (empty without it).
    ogx: Option<String>,
    /// The data last given out.
    last: Option<BTreeMap<String, String>>,
}

impl Combined {
    /// The settings' data after `part`, when both are read and it differs from the last.
    fn on(&mut self, part: Part) -> Option<BTreeMap<String, String>> {
        match part {
            Part::Own(data) => self.own = Some(data),
            Part::Ogx(mut data) => {
                self.ogx = Some(data.remove("image-overrides").unwrap_or_default());
            }
        }
        let mut data = self.own.clone()?;
        let ogx = self.ogx.as_ref()?;
        if !ogx.trim().is_empty() {
            data.insert(OGX_IMAGE_OVERRIDES.to_owned(), ogx.clone());
        }
        if self.last.as_ref() == Some(&data) {
            return None;
        }
        self.last = Some(data.clone());
        Some(data)
    }
}

/// One ConfigMap's data from its watch events: what changed, with a relist taken whole.
#[derive(Debug, Default)]
struct ConfigMapChanges {
    /// What the relist under way has seen (empty until it sees the ConfigMap).
    listing: Option<BTreeMap<String, String>>,
    /// The data last given out.
    last: Option<BTreeMap<String, String>>,
}

impl ConfigMapChanges {
    /// The data after `event`, when it differs from what was last given out.
    fn on(&mut self, event: Event<ConfigMap>) -> Option<BTreeMap<String, String>> {
        let data = match event {
            Event::Init => {
                self.listing = Some(BTreeMap::new());
                None
            }
            Event::InitApply(cm) => {
                self.listing = Some(cm.data.unwrap_or_default());
                None
            }
            Event::InitDone => Some(self.listing.take().unwrap_or_default()),
            Event::Apply(cm) => Some(cm.data.unwrap_or_default()),
            Event::Delete(_) => Some(BTreeMap::new()),
        };
        let changed = data.filter(|data| self.last.as_ref() != Some(data));
        if let Some(data) = &changed {
            self.last = Some(data.clone());
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(entries: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: Some(
                entries
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    fn data(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        config_map(entries).data.unwrap_or_default()
    }

    #[test]
    fn the_first_list_is_given_out_whole_even_when_empty() {
        let mut changes = ConfigMapChanges::default();
        assert_eq!(changes.on(Event::Init), None);
        assert_eq!(changes.on(Event::InitDone), Some(BTreeMap::new()));
    }

    #[test]
    fn changes_are_given_out_once() {
        let mut changes = ConfigMapChanges::default();
        let cm = config_map(&[("mirrors", "[]")]);
        assert_eq!(
            changes.on(Event::Apply(cm.clone())),
            Some(data(&[("mirrors", "[]")]))
        );
        assert_eq!(changes.on(Event::Apply(cm.clone())), None, "unchanged");
        assert_eq!(changes.on(Event::Delete(cm)), Some(BTreeMap::new()));
    }

    #[test]
    fn a_config_map_deleted_while_the_watch_was_broken_is_seen_deleted() {
        let mut changes = ConfigMapChanges::default();
        let cm = config_map(&[("image-overrides", "acme: quay.io/acme/stack:1")]);
        changes.on(Event::Init);
        changes.on(Event::InitApply(cm));
        assert!(changes.on(Event::InitDone).is_some());
        // The watch broke; the relist finds no ConfigMap (no Delete event is ever sent for it).
        assert_eq!(changes.on(Event::Init), None);
        assert_eq!(changes.on(Event::InitDone), Some(BTreeMap::new()));
    }

    #[test]
    fn both_config_maps_are_read_before_the_first_and_only_changes_follow() {
        let mut settings = Combined::default();
        let ours = data(&[("mirrors", "[]")]);
        assert_eq!(
            settings.on(Part::Own(ours.clone())),
            None,
            "not before the OGX operator's is read"
        );
        assert_eq!(
            settings.on(Part::Ogx(BTreeMap::new())),
            Some(ours.clone()),
            "without it: the operator's alone"
        );
        let theirs = data(&[("image-overrides", "rh: quay.io/odh/ogx:1"), ("other", "x")]);
        let combined = settings.on(Part::Ogx(theirs.clone())).unwrap();
        assert_eq!(
            combined,
            data(&[
                ("mirrors", "[]"),
                (OGX_IMAGE_OVERRIDES, "rh: quay.io/odh/ogx:1")
            ]),
            "their image-overrides only"
        );
        assert_eq!(
            settings.on(Part::Ogx(data(&[(
                "image-overrides",
                "rh: quay.io/odh/ogx:1"
            )]))),
            None,
            "a change of a key this operator does not read"
        );
        assert_eq!(
            settings.on(Part::Own(BTreeMap::new())),
            Some(data(&[(OGX_IMAGE_OVERRIDES, "rh: quay.io/odh/ogx:1")]))
        );
        assert_eq!(
            settings.on(Part::Ogx(BTreeMap::new())),
            Some(BTreeMap::new())
        );
    }

    #[test]
    fn a_relist_that_finds_the_same_data_gives_out_nothing() {
        let mut changes = ConfigMapChanges::default();
        let cm = config_map(&[("mirrors", "[]")]);
        changes.on(Event::Apply(cm.clone()));
        changes.on(Event::Init);
        assert_eq!(
            changes.on(Event::InitApply(cm)),
            None,
            "not before the list ends"
        );
        assert_eq!(changes.on(Event::InitDone), None, "the same data");
    }
}
