//! Child processes for tests: logged to a file and tied to the test binary's lifetime.

use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Boxed error of the test support code.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Ports handed to child processes come from below the kernel's ephemeral range (Linux's
/// default starts at 32768), so no outgoing connection and no `bind(":0")` elsewhere can take
/// one between the moment it is chosen and the moment the child binds it: a port the kernel
/// picked for us and we released is exactly what it hands out next (a kube-apiserver lost its
/// port that way in CI: "bind: address already in use").
const CHILD_PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A TCP port on 127.0.0.1 that is free now and that this process has not handed out before.
pub fn free_port() -> Result<u16, Error> {
    use std::sync::atomic::{AtomicU32, Ordering};
    crate::sealed::assert_sealed();
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = u32::from(CHILD_PORTS.end - CHILD_PORTS.start);
    // Each process starts at a different place, so test binaries run side by side rarely meet.
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7_919) % span,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed) % span;
        let port = CHILD_PORTS.start + offset as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(format!("no free port in {CHILD_PORTS:?} on 127.0.0.1").into())
}

/// Spawns `cmd` with stdout and stderr in `log`; the child gets SIGKILL when the thread that
/// spawned it exits (spawn from the harness's main thread), so a failed test leaves nothing behind.
pub fn spawn_tied(cmd: &mut Command, log: &Path) -> Result<Child, Error> {
    crate::sealed::assert_sealed();
    let log = fs::File::create(log)?;
    cmd.stdout(log.try_clone()?)
        .stderr(log)
        .stdin(Stdio::null());
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| {
        format!(
            "cannot start {:?}: {e} (is it installed? .ci/run installs the test dependencies)",
            cmd.get_program()
        )
        .into()
    })
}

/// Runs a build script with `args` and `env` on the host's network (build scripts fetch from
/// package registries), its stderr shown; returns the path it prints.
pub fn run_script(script: &Path, args: &[String], env: &[(&str, &Path)]) -> Result<PathBuf, Error> {
    let mut command = Command::new(script);
    command.args(args).stderr(Stdio::inherit());
    for (key, value) in env {
        command.env(key, value);
    }
    let out = crate::sealed::with_host_network(&mut command)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        let shown = std::iter::once(script.display().to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        return Err(format!("{shown} failed ({}); see its output above", out.status).into());
    }
    Ok(PathBuf::from(String::from_utf8(out.stdout)?.trim()))
}

/// Stops `child`: `signal`, then SIGKILL if it has not exited within `grace`; reaped either way.
pub fn stop(child: &mut Child, signal: libc::c_int, grace: std::time::Duration) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    let deadline = std::time::Instant::now() + grace;
    while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    /// The kernel's ephemeral range, where it picks ports for `bind(":0")` and outgoing connections.
    fn ephemeral_range() -> std::ops::RangeInclusive<u16> {
        let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .expect("read ip_local_port_range");
        let mut bounds = text
            .split_whitespace()
            .map(|n| n.parse::<u16>().expect("port"));
        let (low, high) = (bounds.next().expect("low"), bounds.next().expect("high"));
        low..=high
    }

    #[test]
    fn ports_for_children_are_outside_the_ephemeral_range_and_never_repeat() {
        let ephemeral = ephemeral_range();
        let ports: Vec<u16> = (0..200)
            .map(|_| crate::process::free_port().expect("free port"))
            .collect();
        let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
        assert_eq!(
            distinct.len(),
            ports.len(),
            "a port was handed out twice: {ports:?}"
        );
        let clashing: Vec<_> = ports.iter().filter(|p| ephemeral.contains(p)).collect();
        assert!(
            clashing.is_empty(),
            "ports in the ephemeral range {ephemeral:?}: {clashing:?}"
        );
    }
}
