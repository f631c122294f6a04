//! The resolver's front cache: finished resolutions by request key, so that a warm hit is one
//! hash lookup under a read lock instead of a walk through the four caches behind it (each of
//! which records its reads and runs its housekeeping on the caller's time).
//!
//! Bounded by entries and by the bytes of the configs it holds (a config shared by several
//! entries is counted once per entry, so the bound errs on the safe side); when an insert would
//! cross a bound the memo starts over. It only ever speeds up what the caches behind it would
//! answer: an entry for a tag expires when the tag's pin does.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Instant;

use crate::resolution::Resolution;

struct Entry {
    resolution: Resolution,
    /// `None` for a digest reference (immutable).
    expires: Option<Instant>,
    bytes: usize,
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<String, Entry>,
    bytes: usize,
}

/// Finished resolutions by request key.
pub(crate) struct Memo {
    entries: RwLock<Entries>,
    max_entries: usize,
    max_bytes: usize,
}

impl Memo {
    /// An empty memo holding at most `max_entries` resolutions and `max_bytes` of them.
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: RwLock::new(Entries::default()),
            max_entries,
            max_bytes,
        }
    }

    /// The resolution remembered for `key`, unless it has expired.
    pub(crate) fn get(&self, key: &str) -> Option<Resolution> {
        let entries = self.entries.read().ok()?;
        let entry = entries.by_key.get(key)?;
        if entry.expires.is_some_and(|at| at <= Instant::now()) {
            return None;
        }
        Some(entry.resolution.clone())
    }

    /// Remembers a fresh (never a stale) resolution until `expires`.
    pub(crate) fn put(&self, key: String, resolution: &Resolution, expires: Option<Instant>) {
        if resolution.stale.is_some() {
            return;
        }
        let bytes = key.len() + resolution.image.len() + resolution.config.heap_bytes();
        if bytes > self.max_bytes {
            return;
        }
        let Ok(mut entries) = self.entries.write() else {
            return;
        };
        if let Some(old) = entries.by_key.remove(&key) {
            entries.bytes -= old.bytes;
        }
        if entries.by_key.len() >= self.max_entries || entries.bytes + bytes > self.max_bytes {
            *entries = Entries::default();
        }
        entries.bytes += bytes;
        entries.by_key.insert(
            key,
            Entry {
                resolution: resolution.clone(),
                expires,
                bytes,
            },
        );
    }

    /// Resolutions held now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.read().map(|e| e.by_key.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::embedded::embedded_base_config;

    fn resolution(image: &str) -> Resolution {
        Resolution {
            image: image.to_owned(),
            pinned: true,
            config: embedded_base_config("starter").unwrap().unwrap(),
            stale: None,
            signature: None,
        }
    }

    #[test]
    fn remembers_until_the_pin_expires() {
        let memo = Memo::new(10, 1 << 20);
        let now = Instant::now();
        memo.put(
            "tag".into(),
            &resolution("a"),
            Some(now + Duration::from_secs(60)),
        );
        memo.put("gone".into(), &resolution("b"), Some(now));
        memo.put("digest".into(), &resolution("c"), None);
        assert_eq!(memo.get("tag").unwrap().image, "a");
        assert!(memo.get("gone").is_none(), "an expired pin is not served");
        assert_eq!(memo.get("digest").unwrap().image, "c");
        assert!(memo.get("never").is_none());
    }

    #[test]
    fn never_remembers_a_stale_result() {
        let memo = Memo::new(10, 1 << 20);
        let mut stale = resolution("a");
        stale.stale = Some(Arc::new(crate::ResolveError::BaseConfigRequired {
            image: "a".into(),
        }));
        memo.put("k".into(), &stale, None);
        assert!(memo.get("k").is_none());
    }

    #[test]
    fn starts_over_at_either_bound() {
        let one = resolution("a").config.heap_bytes() + 10;
        let by_entries = Memo::new(2, 1 << 30);
        for key in ["k1", "k2", "k3"] {
            by_entries.put(key.into(), &resolution("a"), None);
        }
        assert_eq!(by_entries.len(), 1, "the third entry started a new memo");
        assert_eq!(by_entries.get("k3").unwrap().image, "a");

        let by_bytes = Memo::new(100, 2 * one);
        for key in ["k1", "k2", "k3"] {
            by_bytes.put(key.into(), &resolution("a"), None);
        }
        assert_eq!(by_bytes.len(), 1);
        let tiny = Memo::new(100, 10);
        tiny.put("k".into(), &resolution("a"), None);
        assert_eq!(tiny.len(), 0, "an entry larger than the bound is not kept");
    }

    #[test]
    fn replacing_an_entry_does_not_count_it_twice() {
        let one = resolution("a").config.heap_bytes() + 10;
        let memo = Memo::new(100, 2 * one);
        for _ in 0..5 {
            memo.put("k1".into(), &resolution("a"), None);
        }
        memo.put("k2".into(), &resolution("b"), None);
        assert_eq!(memo.len(), 2);
    }
}
