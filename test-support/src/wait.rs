//! Waiting for a cluster to converge.

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `probe` every 250 ms until it yields a value; after `timeout`, an error naming `what`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut probe: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        // A probe that hangs (an API server that accepts and never answers) ends at the deadline.
        let left = timeout.saturating_sub(start.elapsed()) + Duration::from_millis(1);
        if let Ok(Some(value)) = tokio::time::timeout(left, probe()).await {
            return Ok(value);
        }
        if start.elapsed() > timeout {
            return Err(format!("not reached within {timeout:?}: {what}"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Calls `check` every `interval` until it passes; after `timeout`, an error naming `what` and
/// the last error `check` gave. For suites that drive the cluster through blocking calls
/// (`kubectl`, HTTP on the node).
pub fn poll_until<E: std::fmt::Debug>(
    timeout: Duration,
    interval: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<bool, E>,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    while Instant::now() < deadline {
        match check() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = format!("{e:?}"),
        }
        std::thread::sleep(interval);
    }
    Err(format!(
        "{what} not seen within {timeout:?} (last error: {last})"
    ))
}
