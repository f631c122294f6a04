//! A watch that keeps going: its own retry delays (short, jittered, reset by any event), its
//! errors recorded in the watch health and dropped, so that a consumer never sees them.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};

use crate::metrics::{WatchHealth, WatchId};

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

/// A watch's events with its own backoff; its errors are recorded in `health` under `watch`
/// and dropped, so that the controller never sees them (and never pauses its other watches).
pub(crate) fn resilient<K>(
    events: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    watch: WatchId,
    health: Arc<WatchHealth>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static
where
    K: Send + 'static,
{
    events
        .backoff(WatchBackoff::new())
        .filter_map(move |event| std::future::ready(recorded(&health, &watch, event)))
}

/// Records what `event` says of `watch` in `health`; the event if it is not an error.
fn recorded<K>(
    health: &WatchHealth,
    watch: &WatchId,
    event: Result<Event<K>, watcher::Error>,
) -> Option<Result<Event<K>, watcher::Error>> {
    match event {
        Ok(event) => {
            if let Some(Answered { relisted }) = answered(&event) {
                health.succeeded(watch, relisted);
            }
            Some(Ok(event))
        }
        Err(error) => {
            health.failed(watch, &error);
            None
        }
    }
}

/// What an event says of its watch: that the API server answered it.
#[derive(Debug, PartialEq, Eq)]
struct Answered {
    /// It finished a list.
    relisted: bool,
}

/// Whether `event` shows that the watch works. `Init` does not: the watcher sends it before it
/// asks for a list, so a watch whose every list is refused (a missing RoleBinding) sends one
/// before each of its errors.
fn answered<K>(event: &Event<K>) -> Option<Answered> {
    match event {
        Event::Init => None,
        Event::InitDone => Some(Answered { relisted: true }),
        Event::InitApply(_) | Event::Apply(_) | Event::Delete(_) => {
            Some(Answered { relisted: false })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    /// A watch whose list is refused every time (`Init`, then the error, again and again) never
    /// counts as working: it is stuck once it has failed for longer than the bound.
    #[test]
    fn a_watch_refused_at_every_list_is_stuck() {
        let metrics = Metrics::new(Arc::default());
        let health = metrics.watches();
        health.set_stuck_after(Duration::ZERO);
        let forbidden = || {
            watcher::Error::InitialListFailed(kube::Error::Api(Box::new(
                kube::core::Status::failure("secrets is forbidden", "Forbidden").with_code(403),
            )))
        };
        let events: Vec<Result<Event<()>, watcher::Error>> = vec![
            Ok(Event::Init),
            Err(forbidden()),
            Ok(Event::Init),
            Err(forbidden()),
            Ok(Event::Init),
        ];
        let watch = WatchId::of("Secret").within(Some("team-b"));
        let passed: Vec<_> = events
            .into_iter()
            .filter_map(|event| recorded(&health, &watch, event))
            .collect();
        assert_eq!(passed.len(), 3, "the errors are dropped");
        let stuck = health.stuck();
        assert_eq!(stuck.len(), 1, "{stuck:?}");
        assert!(
            stuck[0].starts_with("Secret in namespace team-b: ") && stuck[0].contains("forbidden"),
            "{stuck:?}"
        );
    }

    #[test]
    fn a_list_or_an_event_answers_and_a_list_begun_does_not() {
        assert_eq!(answered::<()>(&Event::Init), None);
        assert_eq!(
            answered::<()>(&Event::InitDone),
            Some(Answered { relisted: true })
        );
        for event in [Event::InitApply(()), Event::Apply(()), Event::Delete(())] {
            assert_eq!(answered(&event), Some(Answered { relisted: false }));
        }
    }
}
