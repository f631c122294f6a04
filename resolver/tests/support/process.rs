//! Child processes for tests: logged to a file and tied to the test binary's lifetime.

use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Boxed error of the test support code.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
pub fn free_port() -> Result<u16, Error> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Spawns `cmd` with stdout and stderr in `log`; the child gets SIGKILL when the thread that
/// spawned it exits (spawn from the harness's main thread), so a failed test leaves nothing behind.
pub fn spawn_tied(cmd: &mut Command, log: &Path) -> Result<Child, Error> {
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
