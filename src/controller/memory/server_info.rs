//! What the running servers said about themselves, for the status (the reads are the look
//! step's: `controller::read::server`), and when each is due to be read again: when the stack
//! becomes Ready or its config changes, then at most every [`REFRESH`]; a failed read is retried
//! soon a few times. Each stack's Service's cluster IP is kept too, so a read of the server
//! needs no read of its Service.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::core::observed::{Providers, ServerInfo};

/// The longest a stack's server info may stay unread while the stack is Ready.
pub const REFRESH: Duration = Duration::from_secs(60);
/// Entries older than this are dropped (a Ready stack is reconciled, so read, more often).
const FORGET_AFTER: Duration = Duration::from_secs(30 * 60);

/// The form of `providers` kept between reads.
fn remembered(providers: &Providers) -> Providers {
    match providers {
        Providers::Listed(list) => Providers::Remembered(
            crate::controller::memory::slim_cache::providers_digest(list),
        ),
        Providers::Remembered(digest) => Providers::Remembered(*digest),
    }
}

/// Remembers, per stack, when, for which revision and with which luck it
/// last did.
#[derive(Default)]
pub struct ServerProbe {
    last: Mutex<HashMap<String, LastRead>>,
    /// Each stack's Service's cluster IP, as last written or read, and when it was last used:
    /// a read of the server needs no read of its Service while the Service's watch shows the
    /// version the operator checked (a cluster IP never changes; a Service made again is a new
    /// version).
    addresses: Mutex<HashMap<String, (String, Instant)>>,
}

/// The last read of one stack's server.
#[derive(Clone, Debug)]
struct LastRead {
    at: Instant,
    revision: String,
    /// Reads in a row that found no answer (the first read after a rollout often comes before
    /// every node's proxy knows the new Pod).
    failures: u32,
    /// What that read found, repeated into the status by reconciles until the next read: a
    /// reconcile can start from a cached status that does not show it yet. The providers are
    /// kept as a digest, as the cache keeps them (`slim_cache`): the full answer is written by
    /// the reconcile that read it, and a later write puts the stored list back.
    info: ServerInfo,
}

/// Retries after a failed read: 10 s, 20 s, 40 s, then at the normal pace.
const RETRY: Duration = Duration::from_secs(10);
const RETRIES: u32 = 3;

impl ServerProbe {
    /// Whether the server of stack `uid`, at `revision`, should be read now.
    pub fn due(&self, uid: &str, revision: &str, now: Instant) -> bool {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match last.get(uid) {
            Some(read) => {
                read.revision != revision
                    || now.duration_since(read.at) >= wait_after(read.failures)
            }
            None => true,
        }
    }

    /// Notes a read of stack `uid`'s server at `revision` and what it found, and forgets stacks
    /// not read for [`FORGET_AFTER`] (deleted, or no longer Ready: they are read at once when
    /// they are again).
    pub fn record(&self, uid: &str, revision: &str, now: Instant, info: &ServerInfo) {
        let answered = matches!(info, ServerInfo::Answered { .. });
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.retain(|_, read| now.duration_since(read.at) < FORGET_AFTER);
        let failures = match last.get(uid) {
            _ if answered => 0,
            Some(read) if read.revision == revision => read.failures.saturating_add(1),
            _ => 1,
        };
        let revision = revision.to_owned();
        let info = match info {
            ServerInfo::Answered { version, providers } => ServerInfo::Answered {
                version: version.clone(),
                providers: remembered(providers),
            },
            ServerInfo::NotResponding(why) => ServerInfo::NotResponding(why.clone()),
        };
        last.insert(
            uid.to_owned(),
            LastRead {
                at: now,
                revision,
                failures,
                info,
            },
        );
    }

    /// Notes `ip` as the cluster IP of stack `uid`'s Service, and forgets those not used for
    /// [`FORGET_AFTER`] (the stack deleted, or its Service read again by then).
    pub fn note_address(&self, uid: &str, ip: &str, now: Instant) {
        let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        addresses.retain(|_, (_, used)| now.duration_since(*used) < FORGET_AFTER);
        addresses.insert(uid.to_owned(), (ip.to_owned(), now));
    }

    /// The cluster IP noted for stack `uid`'s Service, if any (and notes its use at `now`).
    pub fn address(&self, uid: &str, now: Instant) -> Option<String> {
        let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        let (ip, used) = addresses.get_mut(uid)?;
        *used = now;
        Some(ip.clone())
    }

    /// What the last read of stack `uid`'s server at `revision` found.
    pub fn last_info(&self, uid: &str, revision: &str) -> Option<ServerInfo> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.get(uid)
            .filter(|read| read.revision == revision)
            .map(|read| read.info.clone())
    }

    /// When to reconcile again to retry a failed read (only the first few retries; after them the
    /// normal resync reads it).
    pub fn retry_in(&self, uid: &str) -> Option<Duration> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let failures = last.get(uid)?.failures;
        (1..=RETRIES)
            .contains(&failures)
            .then(|| wait_after(failures))
    }
}

/// How long after a read the next one is due.
fn wait_after(failures: u32) -> Duration {
    match failures {
        n @ 1..=RETRIES => (RETRY * 2u32.pow(n - 1)).min(REFRESH),
        _ => REFRESH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::common::{ProviderInfo, ProvidersDigest};

    fn answered() -> ServerInfo {
        ServerInfo::Answered {
            version: "0.7.3".into(),
            providers: Providers::Remembered(ProvidersDigest::default()),
        }
    }

    fn silent() -> ServerInfo {
        ServerInfo::NotResponding("connection refused".into())
    }

    #[test]
    fn a_server_is_read_again_when_its_revision_changes_or_the_refresh_passes() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        assert!(probe.due("u", "1", t0), "never read");
        probe.record("u", "1", t0, &answered());
        assert!(!probe.due("u", "1", t0 + Duration::from_secs(1)));
        assert!(
            probe.due("u", "2", t0 + Duration::from_secs(1)),
            "a new revision"
        );
        assert!(probe.due("u", "1", t0 + REFRESH));
        assert_eq!(probe.retry_in("u"), None, "it answered");
        probe.record("other", "1", t0 + FORGET_AFTER, &answered());
        assert_eq!(
            probe.last.lock().unwrap().len(),
            1,
            "a stack unread for long is forgotten"
        );
    }

    #[test]
    fn a_failed_read_is_retried_soon_a_few_times_then_at_the_normal_pace() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        let mut waits = Vec::new();
        for n in 0..5 {
            probe.record("u", "1", t0, &silent());
            waits.push(probe.retry_in("u").map(|d| d.as_secs()));
            assert_eq!(
                n < 3,
                probe.due("u", "1", t0 + Duration::from_secs(40)),
                "after {} failures",
                n + 1
            );
        }
        assert_eq!(waits, [Some(10), Some(20), Some(40), None, None]);
        probe.record("u", "1", t0, &answered());
        assert_eq!(probe.retry_in("u"), None);
    }

    #[test]
    fn a_services_address_is_kept_while_used_and_forgotten_after_a_long_silence() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        assert_eq!(probe.address("u", t0), None);
        probe.note_address("u", "10.96.0.7", t0);
        probe.note_address("gone", "10.96.0.8", t0);
        assert_eq!(
            probe.address("u", t0 + FORGET_AFTER / 2).as_deref(),
            Some("10.96.0.7")
        );
        // Used half-way: kept past the first note's age; the unused one is forgotten.
        probe.note_address(
            "new",
            "10.96.0.9",
            t0 + FORGET_AFTER + Duration::from_secs(1),
        );
        assert_eq!(
            probe
                .address("u", t0 + FORGET_AFTER + Duration::from_secs(1))
                .as_deref(),
            Some("10.96.0.7")
        );
        assert_eq!(probe.address("gone", t0 + FORGET_AFTER), None);
        // Noted again (the Service made again): the new address.
        probe.note_address("u", "10.96.0.10", t0 + FORGET_AFTER * 2);
        assert_eq!(
            probe.address("u", t0 + FORGET_AFTER * 2).as_deref(),
            Some("10.96.0.10")
        );
    }

    #[test]
    fn the_last_answer_is_kept_for_the_reconciles_between_reads() {
        let probe = ServerProbe::default();
        let t0 = Instant::now();
        assert_eq!(probe.last_info("u", "1"), None, "never read");
        probe.record("u", "1", t0, &answered());
        assert_eq!(probe.last_info("u", "1"), Some(answered()));
        assert_eq!(
            probe.last_info("u", "2"),
            None,
            "a new revision is read anew"
        );
        probe.record("u", "1", t0, &silent());
        assert_eq!(probe.last_info("u", "1"), Some(silent()));
    }

    #[test]
    fn between_reads_the_providers_are_kept_as_a_digest() {
        let provider = |config: serde_json::Value| ProviderInfo {
            api: "inference".into(),
            provider_id: "vllm".into(),
            provider_type: "remote::vllm".into(),
            config: config.as_object().cloned(),
            health: None,
        };
        let config = serde_json::json!({"base_url": "http://v:8000/v1", "max_tokens": 4096});
        let list = vec![provider(config.clone())];
        let read = ServerInfo::Answered {
            version: "1.3.0".into(),
            providers: Providers::Listed(list.clone()),
        };
        let probe = ServerProbe::default();
        probe.record("u", "1", Instant::now(), &read);
        let Some(ServerInfo::Answered { version, providers }) = probe.last_info("u", "1") else {
            panic!("the answer is kept");
        };
        assert_eq!(version, "1.3.0");
        assert_eq!(
            providers,
            Providers::Remembered(crate::controller::memory::slim_cache::providers_digest(
                &list
            )),
            "the list as the cache keeps it, not the list"
        );
        assert_eq!(providers.count(), 1);
    }
}
