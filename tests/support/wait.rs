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
