//! A watch that keeps going: its own retry delays (short, jittered, reset by any event), its
//! errors recorded in the watch health and dropped, so that a consumer never sees them.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};

use crate::metrics::WatchHealth;

/// The first retry of a failed watch.
const WATCH_RETRY_MIN: Duration = Duration::from_millis(500);
/// The longest wait between retries of a failed watch: short, because an API server that comes
/// back should be used at once, and cheap, because a failed watch costs one request per retry.
const WATCH_RETRY_MAX: Duration = Duration::from_secs(5);

/// Retry delays of one watch: half a second, doubling to [`WATCH_RETRY_MAX`], with up to a
/// fifth of jitter so that many replicas' watches do not retry in step; from the start again
/// after any event.
#[derive(Debug)]
struct WatchBackoff {
    next: Duration,
    jitter: std::collections::hash_map::RandomState,
}

impl WatchBackoff {
    fn new() -> Self {
        Self {
            next: WATCH_RETRY_MIN,
            jitter: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        use std::hash::BuildHasher;
        let delay = self.next;
        self.next = (self.next * 2).min(WATCH_RETRY_MAX);
        // A random fraction from a freshly keyed hash: no random-number crate needed.
        let fraction = (self.jitter.hash_one(delay) % 1000) as f64 / 1000.0;
        Some(delay.mul_f64(1.0 - fraction / 5.0))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = WATCH_RETRY_MIN;
    }
}

/// A watch's events with its own backoff; its errors are recorded in `health` and dropped, so
/// that the controller never sees them (and never pauses its other watches).
pub(crate) fn resilient<K>(
    events: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    kind: &'static str,
    health: Arc<WatchHealth>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static
where
    K: Send + 'static,
{
    events
        .backoff(WatchBackoff::new())
        .filter_map(move |event| {
            let kept = match event {
                Ok(event) => {
                    health.succeeded(kind, matches!(event, Event::Init));
                    Some(Ok(event))
                }
                Err(error) => {
                    health.failed(kind, &error);
                    None
                }
            };
            std::future::ready(kept)
        })
}
