#!/usr/bin/env python3
"""Runs the test suites `cargo test ARGS` would run, several at once, and summarises them.

Usage: run-suites.py [--lanes N] [--log-dir DIR] [--ready STAGE=FILE ...] [CARGO TEST ARGS...] [-- HARNESS ARGS...]

`cargo test` runs one test binary after another. Most of our suites spend their time waiting
(an API server starting, a rollout, a real server answering), so two of them at once take not
much longer than one. This script asks cargo which test binaries ARGS select (they must be built
already, as `scripts/test.sh` does), then runs each as `cargo test --workspace --KIND NAME` in one of
N lanes, longest first. Suites of one group (those that start real servers; those that restart
their control plane and time the recovery) run one at a time.

With --ready STAGE=FILE (once per stage), it starts while the preparation still runs: the suites
that need nothing beyond the control plane and the compiled suites (EARLY) start at once, each
other suite once the FILE of the stage it needs (NEEDS; "images" unless named there) exists; that
file's `KEY=VALUE` lines are added to its environment (what the preparation found out, such as the
operator image's layout).

Each suite's output is printed whole when it ends, so outputs never interleave, and kept in
DIR/<suite>.log. The run ends with one line per suite (passed, failed, seconds) and exits non-zero
when any suite failed. Every suite runs, whatever the others do. SIGTERM stops the suites running.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

# Suites of one group never run beside each other. The real servers: each real node's readiness
# budget was sized for one node on two cores, and the real servers' startups (Python imports) and
# pip's writes into the shared venvs would contend. The restarts: they stop, freeze and restart
# their own kube-apiserver and etcd and time the recovery, or hold a timed window with a restart
# in it. They ran alone until 2026-11-29; what they time is mostly outages they wait out (a
# recovery took at most 8.7 s of its 30 s budget), so they now run beside the others, but not
# beside each other.
GROUPS = {
    "node": "real servers",
    "newcomer": "real servers",
    "ogx_operator_e2e": "real servers",
    "external_providers": "real servers",
    "llama_stack_server": "real servers",
    "scale": "real servers",
    "faults": "restarts",
    "dashboard": "restarts",
}
# The long suites, started first so the lanes end together (seconds measured 2026-11-29 in a
# `.ci/run` of a clean clone of c71bab5, ogx_operator_e2e in a local run of the same day; the others
# take under a minute each).
EXPECTED_SECONDS = {
    "node": 468,
    "ogx_operator_e2e": 420,
    "faults": 260,
    "llama_stack_server": 177,
    "controller": 176,
    "controller_registry": 110,
    "dashboard": 106,
    "deploy": 103,
    "cli_render": 89,
    "real_world": 55,
    "newcomer": 55,
    "cluster": 48,
    "scale": 47,
    "webhooks": 42,
    "operator_process": 35,
    "external_providers": 24,
}
# Suites that need no more than the control plane, Debian's packages and the compiled suites
# (none of the Go tools, venvs or images): they may run while the rest is prepared. "" is the
# unit tests of every package.
EARLY = {"", "apiserver", "cli_convert", "cli_merge_config", "cli_render", "cli_validate",
         "webhooks", "webhook_certs", "operator_process", "real_world", "hostile_registry",
         "faults"}
# The stage of the preparation a later suite waits for, when it is not "images" (the real
# node's images and the operator's: scripts/test.sh's last stage). "venvs": the llama-stack and
# OGX venvs (the scale bench's shared server, the external providers' stand-in images);
# "servers": those and every other OGX release's, which the real-server suite starts.
NEEDS = {"scale": "venvs", "external_providers": "venvs", "llama_stack_server": "servers"}
# How often a suite waiting for the preparation looks for its ready file.
READY_POLL_SECONDS = 2
# `cargo test` options that choose targets: each suite is chosen by its own package and target.
SELECTORS_WITH_VALUE = {"-p", "--package", "--bin", "--test", "--bench", "--example", "--exclude"}
SELECTORS = {"--workspace", "--all", "--lib", "--bins", "--tests", "--benches", "--examples",
             "--all-targets", "--doc"}
RESULT = re.compile(r"^test result: (\w+)\. (\d+) passed; (\d+) failed;.*?(?:finished in ([\d.]+)s)?$")


def log(message):
    print(f"[test.sh] {message}", file=sys.stderr, flush=True)


def split_args(args):
    """The cargo options without target selectors, and the harness's arguments after `--`."""
    cargo, harness = list(args), []
    if "--" in cargo:
        at = cargo.index("--")
        cargo, harness = cargo[:at], cargo[at:]
    kept, skip = [], False
    for arg in cargo:
        if skip:
            skip = False
        elif arg in SELECTORS_WITH_VALUE:
            skip = True
        elif arg in SELECTORS or any(arg.startswith(f"{s}=") for s in SELECTORS_WITH_VALUE):
            pass
        else:
            kept.append(arg)
    return kept, harness


def package_names():
    out = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"],
                         check=True, capture_output=True, text=True).stdout
    return {p["id"]: p["name"] for p in json.loads(out)["packages"]}


def suites_selected(cargo_args):
    """(package, kind, target name) of every test binary `cargo test cargo_args` runs."""
    names = package_names()
    listing = subprocess.run(
        ["cargo", "test", "--no-run", "--message-format=json", *cargo_args],
        check=True, capture_output=True, text=True).stdout
    suites = []
    for line in listing.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"] and "bench" not in message["target"]["kind"] \
                and "test" not in message["target"]["kind"]:
            continue
        kind = message["target"]["kind"][0]
        if kind in {"lib", "rlib", "proc-macro"}:
            # Every package's unit tests run in one `cargo test --workspace --lib` (see `command`).
            suite = ("every package", "lib", "")
        else:
            suite = (names[message["package_id"]], kind, message["target"]["name"])
        if suite not in suites:
            suites.append(suite)
    return suites


def label(suite):
    """The suite as a reader finds it: `tests/node`, `resolver tests/registries`, …"""
    package, kind, name = suite
    if kind == "lib":
        return "unit tests (every package)"
    prefix = "" if package == "llama-stack-operator" else f"{package} "
    folder = {"test": "tests", "bench": "benches", "example": "examples"}.get(kind)
    return f"{prefix}{folder}/{name}" if folder else f"{prefix}{kind} {name}"


def command(suite, cargo_args, harness):
    """The suite's own `cargo test`. Always `--workspace`: choosing one package (`-p`) would
    resolve its dependencies' features for that package alone and rebuild them, where the build
    before the suites resolved them for the whole workspace. So a target is chosen by name (the
    names are unique in the workspace), and every package's unit tests are one suite."""
    _, kind, name = suite
    target = ["--lib"] if kind == "lib" else [f"--{kind}", name]
    return ["cargo", "test", "--no-fail-fast", "--workspace", *target, *cargo_args, *harness]


def stage(suite):
    """The preparation stage `suite` waits for: None (EARLY), or a name in NEEDS or "images"."""
    return None if suite[2] in EARLY else NEEDS.get(suite[2], "images")


class Runner:
    def __init__(self, suites, lanes, log_dir, cargo_args, harness, ready_files=None):
        # Longest first, among those whose stage is prepared.
        self.waiting = sorted(suites, key=lambda s: -EXPECTED_SECONDS.get(s[2], 0))
        # Stage -> its ready file; stage -> its `KEY=VALUE` lines, once it exists. Without ready
        # files everything is prepared.
        self.ready_files = dict(ready_files or {})
        unnamed = {stage(s) for s in suites} - {None} - set(self.ready_files)
        if self.ready_files and unnamed:
            sys.exit(f"run-suites.py: no --ready names the stage {', '.join(sorted(unnamed))}, "
                     "which selected suites wait for")
        self.ready_env = {}
        self.processes = set()
        self.lanes = lanes
        self.log_dir = log_dir
        self.cargo_args, self.harness = cargo_args, harness
        self.lock = threading.Condition()
        self.running = set()
        self.results = {}

    def stage_env(self, suite):
        """What the stage `suite` waits for found (reading its ready file once it exists), or None
        while it is still being prepared."""
        needed = stage(suite)
        if needed is None or not self.ready_files:
            return {}
        if needed not in self.ready_env:
            path = self.ready_files[needed]
            if not os.path.exists(path):
                return None
            with open(path) as ready:
                lines = [line.rstrip("\n") for line in ready if "=" in line]
            self.ready_env[needed] = dict(line.split("=", 1) for line in lines)
            waiting = sum(1 for s in self.waiting if stage(s) == needed)
            log(f"prepared: {needed}; {waiting} suites were waiting for it")
        return self.ready_env[needed]

    def may_start(self, suite):
        """Whether `suite` may start beside the suites running now."""
        if self.stage_env(suite) is None:
            return False
        group = GROUPS.get(suite[2])
        return group is None or all(GROUPS.get(s[2]) != group for s in self.running)

    def all_prepared(self):
        return all(stage in self.ready_env for stage in self.ready_files)

    def next_suite(self):
        """The next suite this lane may start (the longest first), waiting while none may;
        `None` once every suite has started."""
        with self.lock:
            while self.waiting:
                for suite in self.waiting:
                    if self.may_start(suite):
                        self.waiting.remove(suite)
                        self.running.add(suite)
                        return suite
                # A suite ending notifies; a ready file does not, so look again now and then.
                self.lock.wait(timeout=None if self.all_prepared() else READY_POLL_SECONDS)
            return None

    def lane(self):
        while (suite := self.next_suite()) is not None:
            path = os.path.join(self.log_dir, re.sub(r"[^\w.-]+", "_", label(suite)) + ".log")
            started = time.monotonic()
            with open(path, "w") as out:
                with self.lock:
                    found = self.stage_env(suite) or {}
                env = {**os.environ, **found}
                # A session of its own, so that stopping it stops what it started.
                process = subprocess.Popen(command(suite, self.cargo_args, self.harness),
                                           stdout=out, stderr=subprocess.STDOUT, env=env,
                                           start_new_session=True)
                with self.lock:
                    self.processes.add(process)
                code = process.wait()
                with self.lock:
                    self.processes.discard(process)
            seconds = time.monotonic() - started
            with self.lock:
                with open(path) as done:
                    sys.stdout.write(f"\n===== {label(suite)} (exit {code}, {seconds:.0f} s) =====\n")
                    sys.stdout.write(done.read())
                    sys.stdout.flush()
                self.results[suite] = (code, seconds, path)
                self.running.discard(suite)
                self.lock.notify_all()

    def stop(self, *_):
        """Stops every running suite (their process groups: the servers they started too)."""
        for process in list(self.processes):
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        sys.exit(143)

    def run(self):
        threads = [threading.Thread(target=self.lane, daemon=True) for _ in range(self.lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def counts(path):
    """Passed and failed tests over the `test result:` lines of a suite's log."""
    passed = failed = 0
    with open(path) as out:
        for line in out:
            if m := RESULT.match(line.strip()):
                passed += int(m.group(2))
                failed += int(m.group(3))
    return passed, failed


def summarise(suites, results):
    width = max(len(label(s)) for s in suites)
    print("[test.sh] per suite (wall seconds, with the others running beside it):")
    bad = 0
    for suite in suites:
        code, seconds, path = results[suite]
        passed, failed = counts(path)
        status = "ok" if code == 0 else "FAILED"
        bad += code != 0
        print(f"  {label(suite):<{width}}  {status:<7} {passed:4} passed {failed:3} failed {seconds:7.1f}s")
    print(f"[test.sh] {len(suites)} suites, {bad} failed")
    return bad


def main():
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--lanes", type=int, default=int(os.environ.get("LLSO_TEST_LANES", "2")))
    parser.add_argument("--log-dir", default=None)
    parser.add_argument("--ready", action="append", default=[], metavar="STAGE=FILE")
    ours, args = parser.parse_known_args()
    if ours.lanes < 1:
        sys.exit("run-suites.py: --lanes must be at least 1")
    log_dir = ours.log_dir or os.path.join(os.environ.get("TMPDIR", "/tmp"), "llso-suites")
    os.makedirs(log_dir, exist_ok=True)
    cargo_args, harness = split_args(args)
    suites = suites_selected(args[: args.index("--")] if "--" in args else args)
    if not suites:
        log("no suite selected")
        sys.exit(1)
    log(f"{len(suites)} suites in {ours.lanes} lanes; logs in {log_dir}")
    ready_files = {}
    for given in ours.ready:
        name, sep, path = given.partition("=")
        if not sep or not name or not path:
            sys.exit(f"run-suites.py: --ready {given}: expected STAGE=FILE")
        ready_files[name] = path
    runner = Runner(suites, ours.lanes, log_dir, cargo_args, harness, ready_files)
    signal.signal(signal.SIGTERM, runner.stop)
    runner.run()
    sys.exit(1 if summarise(suites, runner.results) else 0)


if __name__ == "__main__":
    main()
