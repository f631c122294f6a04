//! `scripts/lib/lowest-priority.sh`, which `.ci/run` starts its image for both platforms with
//! beside the tests: the command runs in a session of its own, niced, and, where the kernel groups
//! sessions for scheduling (autogroups), in a group niced too; `nice` alone left such a build an
//! equal share of the CPU beside everything else.

use std::process::Command;

use crate::workspace_root;

fn lowest_priority(script: &str) -> std::process::Output {
    Command::new(workspace_root().join("scripts/lib/lowest-priority.sh"))
        .args(["sh", "-c", script])
        .output()
        .unwrap()
}

fn session_of(pid: &str) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's name in parentheses: state, ppid, pgrp, session.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[3].to_owned()
}

#[test]
fn the_command_runs_in_a_session_of_its_own_at_the_lowest_priority() {
    let out = lowest_priority(
        "echo $$ $(cut -d' ' -f6 /proc/$$/stat); nice; cat /proc/self/autogroup 2>/dev/null || echo none",
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    // The command leads a session of its own: its session's id is its own pid, not ours.
    let (pid, session) = lines[0].split_once(' ').unwrap();
    assert_eq!(pid, session, "the command does not lead its session");
    assert_ne!(
        session,
        session_of("self"),
        "the command ran in the caller's session"
    );
    assert_eq!(lines[1], "19", "the command's niceness");
    let autogroups = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .map(|v| v.trim() == "1")
        .unwrap_or(false);
    if autogroups {
        assert!(
            lines[2].ends_with(" nice 19"),
            "the session's scheduling group is not niced: {}",
            lines[2]
        );
    } else {
        eprintln!(
            "autogroups are off here: the group's niceness is not checked ({})",
            lines[2]
        );
    }
}

#[test]
fn the_commands_exit_status_is_returned() {
    let out = lowest_priority("exit 3");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let out = Command::new(workspace_root().join("scripts/lib/lowest-priority.sh"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "no command: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("usage:"),
        "{out:?}"
    );
}
