#!/usr/bin/env python3
"""Reads `cargo test` output on stdin and prints one line per suite: passed, failed, seconds.

A suite is the target cargo names on its `Running` (or `Doc-tests`) line; its counts come from
the `test result:` line that follows. Targets without a test harness (the benches, run once in
test mode) print no such line: they passed unless cargo lists them among the failed targets at the
end (`error: N targets failed:`). Exits non-zero when any suite failed.
"""
import re
import sys

RUNNING = re.compile(r"^\s*(Running|Doc-tests)\s+(\S+)")
RESULT = re.compile(
    r"^test result: (\w+)\. (\d+) passed; (\d+) failed;.*?(?:finished in ([\d.]+)s)?$"
)
FAILED_TARGET = re.compile(r"^\s+`(?:-p (\S+) )?--(test|bench|example|bin|lib|doc)(?: (\S+))?`$")

suites = []  # [name, target kind, target name, status, passed, failed, seconds]
failed_targets = set()
listing_failures = False
for line in sys.stdin:
    line = line.rstrip("\n")
    if m := RUNNING.match(line):
        listing_failures = False
        words = line.split()
        if m.group(1) == "Doc-tests":
            suites.append([f"doc-tests {m.group(2)}", "doc", m.group(2), None, 0, 0, ""])
            continue
        source = m.group(2) if m.group(2) != "unittests" else words[2]
        binary = words[-1].strip("()").rsplit("/", 1)[-1].rsplit("-", 1)[0]
        kind = source.split("/", 1)[0]
        if m.group(2) == "unittests" and kind == "src":
            name, kind = f"{binary} {source}", "lib"
        else:
            name = source
        kind = {"tests": "test", "benches": "bench", "examples": "example"}.get(kind, kind)
        suites.append([name, kind, binary, None, 0, 0, ""])
    elif (m := RESULT.match(line)) and suites and suites[-1][3] is None:
        suites[-1][3:] = [m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) or ""]
    elif re.match(r"^error: \d+ targets? failed:", line):
        listing_failures = True
    elif listing_failures and (m := FAILED_TARGET.match(line)):
        failed_targets.add((m.group(2), (m.group(3) or m.group(1) or "").replace("-", "_")))

if not suites:
    print("[test.sh] no suite ran")
    sys.exit(1)
for suite in suites:
    name, kind, binary, status = suite[:4]
    listed = (kind, binary) in failed_targets
    if status is None:
        suite[3] = "FAILED" if listed else "ok"
    elif listed:
        suite[3] = "FAILED"
width = max(len(s[0]) for s in suites)
print("[test.sh] per suite:")
for name, _, _, status, passed, failed, seconds in suites:
    secs = f"{float(seconds):7.1f}s" if seconds else "      -"
    print(f"  {name:<{width}}  {status:<7} {passed:4} passed {failed:3} failed {secs}")
bad = [s for s in suites if s[3] != "ok"]
print(f"[test.sh] {len(suites)} suites, {len(bad)} failed")
sys.exit(1 if bad else 0)
