//! Keeps every packet of a test on the machine.
//!
//! Each test binary calls [`seal_network!`](crate::seal_network) once at its root: it moves
//! itself, before `main` and before any thread
//! exists, into a network namespace of its own with only loopback up. Everything it starts
//! (etcd, kube-apiserver, kwok, registries, the operator, llama-stack servers) inherits that
//! namespace: loopback works as before, while a connection to a fake kwok Pod or Service address
//! (10.x), a DNS query or any attempt to reach the internet fails at once with "network
//! unreachable" instead of leaving the machine.
//!
//! Only steps that fetch from a package registry (building the control plane, the llama-stack
//! venv, downloading wheels) go back to the network the binary started in, through
//! [`with_host_network`].
//!
//! Creating a network namespace needs `CAP_SYS_ADMIN` (root, as in CI); without it the binary
//! stops at once with an error saying so, rather than running unsealed.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::OnceLock;

/// The network namespace the binary started in, kept open to run registry fetches there.
static HOST_NETWORK: OnceLock<OwnedFd> = OnceLock::new();

/// Seals the test binary it is called in: expands to a function in the binary's
/// `.init_array`, which runs before `main`, while the process has a single thread, so that the
/// new namespace applies to the whole process and to every thread and child it makes later.
///
/// A macro, not a static of this crate: the linker keeps a library's object only when the
/// binary uses one of its symbols, and a static nothing names would be dropped with it.
#[macro_export]
macro_rules! seal_network {
    () => {
        #[used]
        #[unsafe(link_section = ".init_array")]
        static SEAL_BEFORE_MAIN: extern "C" fn() = $crate::sealed::seal_before_main;
    };
}

/// Whether this process runs in the namespace [`seal_network!`](crate::seal_network) made.
pub fn is_sealed() -> bool {
    HOST_NETWORK.get().is_some()
}

/// Stops a test that would start a server or a client in a binary that was never sealed (one
/// that forgot [`seal_network!`](crate::seal_network)): it would reach the machine's network.
pub fn assert_sealed() {
    assert!(
        is_sealed(),
        "this test binary is not sealed off the network: call llama_stack_test_support::seal_network!() at its root"
    );
}

/// What [`seal_network!`](crate::seal_network) runs before `main`; exits when sealing fails.
pub extern "C" fn seal_before_main() {
    if let Err(err) = seal() {
        eprintln!(
            "error: the tests run in a network namespace of their own so that no packet leaves \
             the machine, and creating it failed: {err}. Run them as root (or with CAP_SYS_ADMIN)."
        );
        std::process::exit(2);
    }
}

fn seal() -> io::Result<()> {
    let host = File::open("/proc/self/ns/net")?;
    // SAFETY: plain system call; no memory is shared with the kernel.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::other(format!(
            "unshare(CLONE_NEWNET): {}",
            io::Error::last_os_error()
        )));
    }
    bring_loopback_up()?;
    let _ = HOST_NETWORK.set(host.into());
    Ok(())
}

/// `ip link set lo up`, without needing iproute2.
fn bring_loopback_up() -> io::Result<()> {
    // SAFETY: the socket is closed by OwnedFd; `request` is a zeroed C struct whose name is
    // NUL-terminated, and both ioctls read and write only that struct.
    unsafe {
        let raw = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        let socket = <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw);
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) != 0 {
            return Err(io::Error::last_os_error());
        }
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) != 0 {
            return Err(io::Error::other(format!(
                "cannot bring loopback up: {}",
                io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

/// Runs `cmd` in the network namespace the test binary started in: only for steps that fetch
/// from a package registry (pip, Go modules), never for anything that talks to a test cluster.
pub fn with_host_network(cmd: &mut Command) -> &mut Command {
    if let Some(host) = HOST_NETWORK.get() {
        let fd = host.as_raw_fd();
        // SAFETY: setns is async-signal-safe, and `fd` stays open for the life of the process
        // (the static is never dropped), so it is valid in the child between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNET) == 0 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }
    cmd
}
