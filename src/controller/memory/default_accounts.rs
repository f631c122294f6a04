//! The image pull secrets of each namespace's `default` ServiceAccount, as watches of those
//! accounts last listed them. A server Pod that names no ServiceAccount pulls with the `default`
//! one's secrets, so every reconcile needs that list; read from the API server it was a third of
//! the reads a converging stack cost (issue 62). The Secrets themselves are read once per change
//! (`read_once`), not here.
//!
//! Each watch (one per scope and door) answers only once it has listed every account, and not
//! while it lists again; before that, and in a reconcile run without watches (the tests' direct
//! reconciles), [`DefaultAccounts::pull_secrets`] says `None` and the account is read.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::runtime::watcher::Event;

use super::listing::{Listing, WatchScope, answering};

/// The account whose pull secrets a Pod without a ServiceAccount of its own uses.
pub(in crate::controller) const DEFAULT_ACCOUNT: &str = "default";

/// What one watch has listed: per namespace with a `default` account, its pull secrets' names,
/// in order.
type Accounts = Listing<String, Vec<String>>;

/// The accounts' pull secrets, per watch (see the module documentation).
#[derive(Default)]
pub struct DefaultAccounts {
    watches: Mutex<HashMap<WatchScope, Accounts>>,
}

/// The namespace and pull secrets of an account, if it is a namespace's `default` one.
fn pull_secrets_of(account: &ServiceAccount) -> Option<(String, Vec<String>)> {
    if account.metadata.name.as_deref() != Some(DEFAULT_ACCOUNT) {
        return None;
    }
    let namespace = account.metadata.namespace.clone()?;
    let names = account
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|r| r.name.clone())
        .collect();
    Some((namespace, names))
}

/// The namespaces whose pull secrets differ between two lists (an absent account has none).
fn differing(
    old: &HashMap<String, Vec<String>>,
    new: &HashMap<String, Vec<String>>,
) -> Vec<String> {
    let none = Vec::new();
    let mut namespaces: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|ns| old.get(*ns).unwrap_or(&none) != new.get(*ns).unwrap_or(&none))
        .cloned()
        .collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    namespaces
}

impl DefaultAccounts {
    /// Records an event of the watch over `scope` for `door`, and says in which namespaces the
    /// pull secrets changed since that watch first listed (their stacks are to be reconciled).
    pub(in crate::controller) fn observe(
        &self,
        scope: Option<&str>,
        door: &'static str,
        event: &Event<ServiceAccount>,
    ) -> Vec<String> {
        let Ok(mut watches) = self.watches.lock() else {
            return Vec::new();
        };
        let listing = watches.entry((scope.map(str::to_owned), door)).or_default();
        match event {
            Event::Init => {
                listing.begin();
                Vec::new()
            }
            Event::InitApply(account) => {
                if let Some((ns, names)) = pull_secrets_of(account) {
                    listing.listed(ns, names);
                }
                Vec::new()
            }
            // The first list changes nothing: it comes with every stack's first reconcile.
            Event::InitDone => match listing.done() {
                Some(old) => differing(&old, listing.entries()),
                None => Vec::new(),
            },
            Event::Apply(account) => match pull_secrets_of(account) {
                Some((ns, names)) => {
                    let before = listing.entries_mut().insert(ns.clone(), names.clone());
                    if before.unwrap_or_default() == names {
                        Vec::new()
                    } else {
                        vec![ns]
                    }
                }
                None => Vec::new(),
            },
            Event::Delete(account) => match pull_secrets_of(account) {
                Some((ns, _)) => match listing.entries_mut().remove(&ns) {
                    Some(names) if !names.is_empty() => vec![ns],
                    _ => Vec::new(),
                },
                None => Vec::new(),
            },
        }
    }

    /// The pull secrets of `namespace`'s `default` account (empty when it has none, or there is
    /// no such account) as `door`'s watch has them, or `None` when no listed watch of that door
    /// covers the namespace.
    pub(in crate::controller) fn pull_secrets(
        &self,
        namespace: &str,
        door: &str,
    ) -> Option<Vec<String>> {
        // Each door's reconciles read their own watch, whose events start them.
        let watches = self.watches.lock().ok()?;
        answering(&watches, namespace, door).map(|listing| {
            listing
                .entries()
                .get(namespace)
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Forgets everything: the controllers and their watches start again, and a watch that no
    /// longer runs must not answer.
    pub(in crate::controller) fn clear(&self) {
        if let Ok(mut watches) = self.watches.lock() {
            watches.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOOR: &str = "door";

    fn account(ns: &str, name: &str, secrets: &[&str]) -> ServiceAccount {
        let secrets: Vec<_> = secrets.iter().map(|s| json!({"name": s})).collect();
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns},
            "imagePullSecrets": secrets}))
        .unwrap()
    }

    /// A whole list of `accounts`; the namespaces it says changed.
    fn listed(
        index: &DefaultAccounts,
        scope: Option<&str>,
        accounts: &[ServiceAccount],
    ) -> Vec<String> {
        index.observe(scope, DOOR, &Event::Init);
        for a in accounts {
            index.observe(scope, DOOR, &Event::InitApply(a.clone()));
        }
        index.observe(scope, DOOR, &Event::InitDone)
    }

    fn names(list: &[&str]) -> Option<Vec<String>> {
        Some(list.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn nothing_is_answered_before_a_watch_has_listed() {
        let index = DefaultAccounts::default();
        assert_eq!(index.pull_secrets("a", DOOR), None);
        index.observe(None, DOOR, &Event::Init);
        index.observe(
            None,
            DOOR,
            &Event::InitApply(account("a", "default", &["x"])),
        );
        assert_eq!(index.pull_secrets("a", DOOR), None, "still listing");
        let changed = index.observe(None, DOOR, &Event::InitDone);
        assert_eq!(index.pull_secrets("a", DOOR), names(&["x"]));
        assert!(
            changed.is_empty(),
            "the first list changes nothing: {changed:?}"
        );
        assert_eq!(
            index.pull_secrets("a", "other door"),
            None,
            "each door reads its own watch"
        );
    }

    #[test]
    fn a_listed_namespace_without_the_account_has_no_pull_secrets() {
        let index = DefaultAccounts::default();
        listed(&index, None, &[account("a", "default", &["x", "y"])]);
        assert_eq!(index.pull_secrets("b", DOOR), Some(vec![]));
        assert_eq!(
            index.pull_secrets("a", DOOR),
            names(&["x", "y"]),
            "in the account's order"
        );
    }

    #[test]
    fn changes_after_the_list_are_followed_and_told() {
        let index = DefaultAccounts::default();
        listed(&index, None, &[account("a", "default", &[])]);
        let changed = index.observe(None, DOOR, &Event::Apply(account("a", "default", &["new"])));
        assert_eq!(
            (index.pull_secrets("a", DOOR), changed),
            (names(&["new"]), vec!["a".to_owned()])
        );
        let same = index.observe(None, DOOR, &Event::Apply(account("a", "default", &["new"])));
        assert!(
            same.is_empty(),
            "another field of the account changed: no reconcile"
        );
        let other = index.observe(
            None,
            DOOR,
            &Event::Apply(account("a", "builder", &["other"])),
        );
        assert_eq!(
            (index.pull_secrets("a", DOOR), other),
            (names(&["new"]), vec![])
        );
        let deleted = index.observe(
            None,
            DOOR,
            &Event::Delete(account("a", "default", &["new"])),
        );
        assert_eq!(
            (index.pull_secrets("a", DOOR), deleted),
            (Some(vec![]), vec!["a".to_owned()])
        );
    }

    #[test]
    fn a_new_list_tells_what_changed_while_the_watch_was_away() {
        let index = DefaultAccounts::default();
        listed(
            &index,
            None,
            &[
                account("a", "default", &["x"]),
                account("b", "default", &["y"]),
                account("c", "default", &[]),
            ],
        );
        let changed = listed(
            &index,
            None,
            &[
                account("a", "default", &["x"]),
                account("b", "default", &["z"]),
                account("d", "default", &["w"]),
            ],
        );
        assert_eq!(
            changed,
            vec!["b".to_owned(), "d".to_owned()],
            "c had none and has none"
        );
    }

    #[test]
    fn a_watch_answers_only_for_its_namespace_and_not_while_it_lists_again() {
        let index = DefaultAccounts::default();
        listed(&index, Some("a"), &[account("a", "default", &["x"])]);
        assert_eq!(index.pull_secrets("a", DOOR), names(&["x"]));
        assert_eq!(index.pull_secrets("b", DOOR), None, "no watch covers b");
        index.observe(Some("a"), DOOR, &Event::Init);
        assert_eq!(index.pull_secrets("a", DOOR), None, "listing again");
        // An account deleted while the watch was away is gone after the new list.
        let changed = index.observe(Some("a"), DOOR, &Event::InitDone);
        assert_eq!(
            (index.pull_secrets("a", DOOR), changed),
            (Some(vec![]), vec!["a".to_owned()])
        );
        index.clear();
        assert_eq!(index.pull_secrets("a", DOOR), None, "cleared");
    }
}
