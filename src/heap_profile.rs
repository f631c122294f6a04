//! The operator's heap profile for the scale bench (built only with the `heap-profile` feature,
//! never shipped): every allocation is tracked by DHAT from startup, and on SIGUSR2 the
//! allocations still live are written as DHAT JSON to `$LLSO_HEAP_PROFILE` (default
//! `dhat-heap.json`), attributed to the call stacks that made them. Tracking then stops and the
//! operator runs on, so the bench can profile a settled operator instead of one shutting down.

use std::sync::mpsc;

use tokio::signal::unix::{SignalKind, signal};

/// Starts tracking; returns once the profiler is in place, so startup allocations count.
pub fn start() {
    let (started, ready) = mpsc::channel();
    std::thread::spawn(move || {
        let path = std::env::var_os("LLSO_HEAP_PROFILE").unwrap_or_else(|| "dhat-heap.json".into());
        let profiler = dhat::Profiler::builder().file_name(path).build();
        let _ = started.send(());
        let waited = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .and_then(|runtime| {
                runtime.block_on(async {
                    signal(SignalKind::user_defined2())?.recv().await;
                    Ok::<_, std::io::Error>(())
                })
            });
        match waited {
            // Dropping the profiler writes the live allocations at this moment.
            Ok(()) => drop(profiler),
            Err(error) => {
                eprintln!("heap profile: cannot wait for SIGUSR2: {error}");
                std::mem::forget(profiler);
            }
        }
    });
    let _ = ready.recv();
}
