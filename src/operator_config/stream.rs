//! The operator ConfigMap's data as a stream of changes, for the controller (which rebuilds its
//! resolver) and the webhooks (which follow its image-overrides).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::watcher::{self, Event, watcher};

use crate::metrics::WatchHealth;
use crate::watch_backoff::resilient;

/// The operator ConfigMap's data in `namespace` (empty while it does not exist): once when the
/// first list is complete, then each time it changes. A relist is taken whole, so a ConfigMap
/// deleted while the watch was broken is seen as deleted. `kind` names the watch in `/healthz`
/// and the watch metrics; its failures are recorded in `health` and retried.
pub(crate) fn operator_config_data(
    client: &kube::Client,
    namespace: &str,
    kind: &'static str,
    health: Arc<WatchHealth>,
) -> impl Stream<Item = BTreeMap<String, String>> + Send + 'static {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let config =
        watcher::Config::default().fields(&format!("metadata.name={}", super::OPERATOR_CONFIG_MAP));
    let mut changes = ConfigMapChanges::default();
    resilient(watcher(api, config), kind, health)
        .filter_map(move |event| std::future::ready(event.ok().and_then(|e| changes.on(e))))
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
