#!/usr/bin/env bash
# Runs a command in a session of its own at the lowest CPU priority: it gets what the rest of the
# machine leaves idle. Usage: scripts/lib/lowest-priority.sh CMD [ARG...]
#
# A session of its own, so that stopping its process group stops everything it started. With the
# kernel's autogroup scheduling (on by default; /proc/sys/kernel/sched_autogroup_enabled) a new
# session is also a new scheduling group, and groups share the CPU as equals: `nice` ranks a
# process only within its group, so a `setsid nice -n 19` build took as much CPU as everything
# else together (.ci/run's image for both platforms, beside the tests' preparation, 2026-11-29).
# The group's own niceness (/proc/self/autogroup) is what lowers it; `nice` still lowers it where
# autogroups are off.
set -euo pipefail
(($#)) || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }
if [[ "${LLSO_LOWEST_PRIORITY_IN_SESSION:-}" != 1 ]]; then
  LLSO_LOWEST_PRIORITY_IN_SESSION=1 exec setsid --wait "$0" "$@"
fi
unset LLSO_LOWEST_PRIORITY_IN_SESSION
# Without CAP_SYS_ADMIN the kernel takes one such write every 100 ms machine-wide and refuses
# the others (EAGAIN): try a few times, and say so if it never took.
if [[ -e /proc/self/autogroup ]]; then
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    echo 19 2>/dev/null >/proc/self/autogroup && break
    sleep 0.2
  done
  grep -q ' nice 19$' /proc/self/autogroup ||
    echo "lowest-priority.sh: could not lower this session's scheduling group ($(cat /proc/self/autogroup)); it keeps an equal share of the CPU" >&2
fi
exec nice -n 19 "$@"
