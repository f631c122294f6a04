//! Counters of what the resolver did, for metrics: registry requests (count, errors, latency
//! histogram) and cache lookups and misses. Lock-free; shared by every resolver built from the
//! same options, so a settings change does not reset them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (seconds) of the registry latency histogram buckets.
pub const LATENCY_BUCKETS: [f64; 9] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

/// Live counters.
#[derive(Debug, Default)]
pub struct Stats {
    requests: AtomicU64,
    errors: AtomicU64,
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_micros: AtomicU64,
    manifest_lookups: AtomicU64,
    manifest_misses: AtomicU64,
    config_lookups: AtomicU64,
    config_misses: AtomicU64,
    signatures_verified: AtomicU64,
    signatures_unsigned: AtomicU64,
    signatures_failed: AtomicU64,
}

/// Which cache a lookup went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheKind {
    /// Reference -> digest and manifest.
    Manifest,
    /// Image config digest -> base config.
    Config,
}

/// A point-in-time copy of [`Stats`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatsSnapshot {
    /// HTTP requests sent to registries.
    pub registry_requests: u64,
    /// Requests that failed (transport errors and error statuses other than an auth challenge).
    pub registry_errors: u64,
    /// Histogram buckets: (upper bound in seconds, requests slower than the previous bound and
    /// at most this one); requests slower than the last bound are only in the total.
    pub latency_buckets: Vec<(f64, u64)>,
    /// Sum of request latencies in seconds.
    pub latency_seconds: f64,
    /// Manifest cache (lookups, misses).
    pub manifest_cache: (u64, u64),
    /// Config cache (lookups, misses).
    pub config_cache: (u64, u64),
    /// Signature checks made (cache hits not counted): (verified, unsigned, failed).
    pub signatures: (u64, u64, u64),
}

impl Stats {
    /// Records one registry request.
    pub fn request(&self, latency: Duration, ok: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let seconds = latency.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// Records a cache lookup; `miss` when the value had to be fetched.
    pub fn lookup(&self, cache: CacheKind, miss: bool) {
        let (lookups, misses) = match cache {
            CacheKind::Manifest => (&self.manifest_lookups, &self.manifest_misses),
            CacheKind::Config => (&self.config_lookups, &self.config_misses),
        };
        lookups.fetch_add(1, Ordering::Relaxed);
        if miss {
            misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records a signature check: `verified`, `unsigned` or anything else (failed).
    pub fn signature(&self, outcome: &str) {
        let counter = match outcome {
            "verified" => &self.signatures_verified,
            "unsigned" => &self.signatures_unsigned,
            _ => &self.signatures_failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// A copy of every counter.
    pub fn snapshot(&self) -> StatsSnapshot {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let latency_buckets = LATENCY_BUCKETS
            .iter()
            .zip(&self.buckets)
            .map(|(bound, count)| (*bound, load(count)))
            .collect();
        StatsSnapshot {
            registry_requests: load(&self.requests),
            registry_errors: load(&self.errors),
            latency_buckets,
            latency_seconds: load(&self.latency_micros) as f64 / 1e6,
            manifest_cache: (load(&self.manifest_lookups), load(&self.manifest_misses)),
            config_cache: (load(&self.config_lookups), load(&self.config_misses)),
            signatures: (
                load(&self.signatures_verified),
                load(&self.signatures_unsigned),
                load(&self.signatures_failed),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_land_in_their_bucket_and_errors_are_counted() {
        let stats = Stats::default();
        stats.request(Duration::from_millis(3), true);
        stats.request(Duration::from_millis(40), false);
        stats.request(Duration::from_secs(9), true);
        stats.lookup(CacheKind::Config, true);
        stats.lookup(CacheKind::Config, false);
        let s = stats.snapshot();
        assert_eq!((s.registry_requests, s.registry_errors), (3, 1));
        assert_eq!(s.latency_buckets[0], (0.005, 1));
        assert_eq!(s.latency_buckets[3], (0.05, 1));
        let counted: u64 = s.latency_buckets.iter().map(|(_, n)| n).sum();
        assert_eq!(counted, 2, "slower than the last bound: only in the total");
        assert!((s.latency_seconds - 9.043).abs() < 1e-6);
        assert_eq!(s.config_cache, (2, 1));
    }
}
