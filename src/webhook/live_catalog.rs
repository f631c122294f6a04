//! The distribution names admission accepts, kept in step with the operator ConfigMap (and the
//! OGX operator's `ogx-operator-config`, for its `image-overrides`).
//!
//! The controller follows `llama-stack-operator-config` only while it leads, and only in a
//! process that runs it; every replica's webhook answers admission. So each webhook server
//! follows the ConfigMaps itself: a name added to its `image-overrides` is accepted within
//! moments on every replica, leader or standby, and one removed is refused again.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures_util::StreamExt;
use llama_stack_resolver::Catalog;
use tokio::sync::watch;

use crate::metrics::WatchHealth;
use crate::operator_config;
use crate::operator_config::stream::operator_config_data;

/// The watches' names in `/healthz` and the watch metrics (the operator's ConfigMap, the OGX
/// operator's).
const WATCH_KINDS: [&str; 2] = [
    "ConfigMap (operator, admission)",
    "ConfigMap (OGX operator, admission)",
];

/// The catalog admission checks names against: the operator's own (embedded, with
/// `--image-overrides`) under the OGX operator ConfigMap's `image-overrides`, under the operator
/// ConfigMap's.
#[derive(Debug)]
pub struct LiveCatalog {
    own: Catalog,
    current: RwLock<Arc<Catalog>>,
    synced: watch::Sender<bool>,
}

impl LiveCatalog {
    /// A catalog that stays `own` until [`LiveCatalog::apply`] or [`LiveCatalog::follow`]
    /// layers a ConfigMap's data on it.
    pub fn new(own: Catalog) -> Self {
        Self {
            current: RwLock::new(Arc::new(own.clone())),
            own,
            synced: watch::Sender::new(false),
        }
    }

    /// The names admission accepts now.
    pub fn current(&self) -> Arc<Catalog> {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Layers the ConfigMap's `data` (empty when it does not exist) on the operator's own
    /// catalog; returns the entries that were ignored and why.
    pub fn apply(&self, data: &BTreeMap<String, String>) -> Vec<String> {
        let (catalog, problems) = operator_config::catalog(&self.own, data);
        let catalog = Arc::new(catalog);
        match self.current.write() {
            Ok(mut slot) => *slot = catalog,
            Err(poisoned) => *poisoned.into_inner() = catalog,
        }
        problems
    }

    /// Waits until the ConfigMap has been read once (or `within` passes); true when it was.
    pub async fn synced(&self, within: Duration) -> bool {
        let mut synced = self.synced.subscribe();
        tokio::time::timeout(within, synced.wait_for(|s| *s))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Follows the operator ConfigMap in `namespace` for as long as the future runs. A broken
    /// watch keeps the last names it read and is retried with its own backoff; its failures
    /// are recorded in `health`. `report` logs the entries that were ignored (off when the
    /// controller runs in the same process and reports them already).
    pub async fn follow(
        self: Arc<Self>,
        client: kube::Client,
        namespace: String,
        health: Arc<WatchHealth>,
        report: bool,
    ) {
        let changes = operator_config_data(&client, &namespace, WATCH_KINDS, health);
        let mut changes = std::pin::pin!(changes);
        while let Some(data) = changes.next().await {
            let problems = self.apply(&data);
            if report {
                for problem in &problems {
                    tracing::warn!(%problem, "operator ConfigMap");
                }
            }
            tracing::debug!(names = self.current().names().count(), "admission catalog");
            self.synced.send_replace(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(overrides: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("image-overrides".to_owned(), overrides.to_owned())])
    }

    #[test]
    fn names_follow_the_config_map() {
        let live = LiveCatalog::new(Catalog::embedded().unwrap());
        assert!(live.current().image("acme-internal").is_err());
        let problems = live.apply(&data(
            "acme-internal: mirror.example.com/acme/stack@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
        ));
        assert_eq!(problems, Vec::<String>::new());
        assert!(
            live.current()
                .image("acme-internal")
                .unwrap()
                .starts_with("mirror.example.com/acme/stack@")
        );
        assert!(
            live.current().image("starter").is_ok(),
            "catalog names stay"
        );
        live.apply(&BTreeMap::new());
        assert!(
            live.current().image("acme-internal").is_err(),
            "a deleted ConfigMap takes its names away"
        );
    }

    #[test]
    fn a_bad_entry_is_reported_and_the_others_apply() {
        let live = LiveCatalog::new(Catalog::embedded().unwrap());
        let problems = live.apply(&data("good: quay.io/acme/good:1\nbad: 'not an image!'\n"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("\"bad\""), "{problems:?}");
        assert!(live.current().image("good").is_ok());
        assert!(live.current().image("bad").is_err());
    }

    #[test]
    fn an_operator_flag_override_survives_the_config_map() {
        let own = Catalog::embedded()
            .unwrap()
            .with_overrides(&BTreeMap::from([(
                "from-flag".to_owned(),
                "quay.io/acme/flag:1".to_owned(),
            )]));
        let live = LiveCatalog::new(own);
        live.apply(&data("other: quay.io/acme/other:1\n"));
        assert!(live.current().image("from-flag").is_ok());
        assert!(live.current().image("other").is_ok());
    }

    #[tokio::test]
    async fn synced_waits_for_the_first_read() {
        let live = LiveCatalog::new(Catalog::embedded().unwrap());
        assert!(!live.synced(Duration::from_millis(20)).await);
        live.synced.send_replace(true);
        assert!(live.synced(Duration::from_millis(20)).await);
    }
}
