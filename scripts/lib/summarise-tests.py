#!/usr/bin/env python3
"""Reads `cargo test` output on stdin and prints one line per suite: passed, failed, seconds.

A suite is the binary cargo names on its `Running` (or `Doc-tests`) line; its counts come from
the `test result:` line that follows. A suite that printed no result (it crashed, or a
libtest-mimic harness died before its summary) is listed as such.
"""
import re
import sys

RUNNING = re.compile(r"^\s*(Running|Doc-tests)\s+(\S+)")
RESULT = re.compile(
    r"^test result: (\w+)\. (\d+) passed; (\d+) failed;.*?(?:finished in ([\d.]+)s)?$"
)

suites = []  # [name, status, passed, failed, seconds]
for line in sys.stdin:
    line = line.rstrip("\n")
    if m := RUNNING.match(line):
        name = m.group(2)
        if m.group(1) == "Running" and name == "unittests":
            # "Running unittests src/lib.rs (target/debug/deps/llama_stack_resolver-<hash>)":
            # the crate (from the binary's name) and its source file.
            words = line.split()
            binary = words[-1].strip("()").rsplit("/", 1)[-1].rsplit("-", 1)[0]
            name = f"{binary} {words[2]}"
        suites.append([name, "no result", 0, 0, ""])
    elif (m := RESULT.match(line)) and suites and suites[-1][1] == "no result":
        suites[-1][1:] = [m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) or ""]

if not suites:
    print("[test.sh] no suite ran")
    sys.exit(1)
width = max(len(s[0]) for s in suites)
print("[test.sh] per suite:")
for name, status, passed, failed, seconds in suites:
    secs = f"{float(seconds):7.1f}s" if seconds else "      -"
    print(f"  {name:<{width}}  {status:<9} {passed:4} passed {failed:3} failed {secs}")
bad = [s for s in suites if s[1] != "ok"]
print(f"[test.sh] {len(suites)} suites, {len(bad)} not ok")
sys.exit(1 if bad else 0)
