#!/usr/bin/env bash
# Runs every test: unit tests, and the integration tests against a real kube-apiserver + etcd
# and real OCI registries, and on a real node running the operator's image.
#
# 1. Prepares everything the suites use, once and up front, so no test builds in its critical
#    path and a failed build is reported once, as such: the apt packages, the Go tools (control
#    plane, helm, cosign, kstatus, the OLM validator, Prometheus, the OGX operator's e2e suite),
#    the llama-stack and OGX venvs, the operator's image, cargo-cyclonedx, the compiled suites,
#    the real node's images. The Go
#    builds and the venv run beside the Rust builds. Every build script is safe to run twice at
#    once (scripts/lib/cache-lock.sh), so a suite asking again just finds the result.
# 2. Runs every suite, even after one fails, two at a time (scripts/lib/run-suites.py), and ends
#    with one line per suite. The suites that need only the control plane and the compiled suites
#    start as soon as those are ready, beside the rest of the preparation.
# Arguments go to `cargo test` (e.g. `--test node`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cargo-env.sh   # the same build whoever starts it
source scripts/lib/steps.sh       # each preparation step's start, end and CPU seconds
start=$(date +%s)

for tool in cargo go python3 flock; do
  command -v "$tool" >/dev/null || { echo "error: $tool is required (see docs/testing.md, 'What the scripts install')" >&2; exit 1; }
done
log() { echo "[test.sh] $*" >&2; }
logs=$(mktemp -d "${TMPDIR:-/tmp}/llso-test-prepare.XXXXXX")
# A failed step stops the builds still running beside it.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT
prepare_start=$(date +%s)
steps_init "$logs/steps"

step apt-packages scripts/install-test-deps.sh

# A control plane given by the caller (CI builds it once, outside the fresh Python cache) is used as is.
control_plane() { [[ -n "${LLSO_CONTROL_PLANE_BIN:-}" ]] || step control-plane scripts/build-control-plane.sh; }
go_tools() {
  step helm scripts/build-helm.sh
  step cosign scripts/build-cosign.sh
  step kstatus scripts/build-kstatus.sh
  step olm-validator scripts/build-olm-validator.sh
  step prometheus scripts/build-prometheus.sh
  step ogx-e2e scripts/build-ogx-e2e.sh
}
control_plane_then_tools() { control_plane; touch "$logs/control-plane.done"; go_tools; }
# Runs "$@" in the background, its output in $logs/<name>.log; `finish <name>` waits for it.
declare -A jobs
begin() { local name=$1; shift; "$@" >"$logs/$name.out" 2>"$logs/$name.log" & jobs[$name]=$!; }
finish() {
  local name=$1
  if ! wait "${jobs[$name]}"; then
    log "FAILED to prepare: $name; its output:"
    tail -n 60 "$logs/$name.log" >&2
    exit 1
  fi
  log "prepared: $name"
}
# The control plane first: the real node's images need its `pause`; the other Go tools follow it
# (one Go build at a time beside the Rust builds).
begin go control_plane_then_tools
# Each server's venv with what its starter config needs (`stack list-deps`), which covers what the
# suites' generated configs ask for, so their own calls find it installed instead of spending
# minutes of pip in a suite's critical path. Less the local embedding provider: it pulls torch
# (its own line names an index this machine cannot reach), and the suites replace it.
# <starter config> is a file, or else a path inside the server's package.
with_starter_deps() { # <cli> <starter config> <venv command ...>
  local cli=$1 starter=$2 venv deps=(); shift 2
  venv=$("$@") || return 1
  [[ -f "$starter" ]] || starter=$("$venv/bin/python3" -c "import $cli, pathlib; print(pathlib.Path($cli.__file__).parent / '$starter')")
  # The first line only, read to the end (`head` would close the pipe early and the CLI print
  # a BrokenPipeError traceback into the log, which reads like a failure).
  mapfile -t deps < <("$venv/bin/$cli" stack list-deps "$starter" | sed -n 1p | tr ' ' '\n' \
    | grep -v -e '^$' -e '^sentence-transformers' -e '^torch')
  ((${#deps[@]})) || { echo "$cli stack list-deps $starter named nothing" >&2; return 1; }
  "$@" "${deps[@]}"
}
# The other OGX releases the real-server suite starts (tests/llama_stack_server/ogx-releases.txt),
# each with what its own starter config needs: most are thin venvs over the pinned one.
ogx_release_venvs() {
  local version
  while read -r version; do
    [[ -n "$version" ]] || continue
    with_starter_deps ogx distributions/starter/config.yaml scripts/ogx-release-venv.sh "$version" >/dev/null || return 1
  done <tests/llama_stack_server/ogx-releases.txt
}
begin venv step llama-stack-venv with_starter_deps llama configs/starter/config.yaml scripts/llama-stack-venv.sh
begin ogxvenv step ogx-venv with_starter_deps ogx configs-ogx/starter/config.yaml scripts/ogx-venv.sh

# The operator's image from the Dockerfile, which the real node runs (the static binary, in a
# target directory of its own, so it builds beside the suites' build), with the `test-image`
# profile: optimised, without the shipped build's whole-program LTO, minutes on one core that
# every run paid at the end of its preparation. The release test finds the same image. The
# shipped (dist) build is checked by .ci/run. Then cargo-cyclonedx for the release test's SBOM,
# and the suites themselves.
host_profile="LLSO_STATIC_PROFILE_$(case "$(uname -m)" in x86_64) echo AMD64 ;; aarch64) echo ARM64 ;; *) uname -m ;; esac)"
export "$host_profile=${!host_profile:-test-image}"
[[ -n "${LLSO_OPERATOR_IMAGE_LAYOUT:-}" ]] || begin image step operator-image scripts/build-operator-image.sh
# A debug build: it runs for a second, and its optimised LTO build held up a cold run by about 7
# minutes on two cores (2026-11-27).
command -v cargo-cyclonedx >/dev/null || step cargo-cyclonedx cargo install --debug --quiet --locked cargo-cyclonedx@0.5.9
# Every target unless the arguments choose some (`--test node` runs that suite alone).
targets=(--all-targets)
for arg in "$@"; do
  case "$arg" in
    --lib | --bins | --bin | --bin=* | --tests | --test | --test=* | --benches | --bench | --bench=* | \
      --examples | --example | --example=* | --doc) targets=() ;;
  esac
done
step compile-suites cargo test --workspace "${targets[@]}" --no-run "$@"
# `cargo test --all-targets` builds examples as test harnesses; this one runs as a program.
step compile-image-builder cargo build --example prepare_test_images

# The real node's images need the venv, the control plane's pause and the compiled crate; they
# are built (mostly downloads) while the remaining Go tools compile.
until [[ -e "$logs/control-plane.done" ]] || ! kill -0 "${jobs[go]}" 2>/dev/null; do sleep 2; done
[[ -e "$logs/control-plane.done" ]] || finish go
LLSO_CONTROL_PLANE_BIN="${LLSO_CONTROL_PLANE_BIN:-$(scripts/build-control-plane.sh 2>/dev/null)}"
export LLSO_CONTROL_PLANE_BIN

# The suites start now, two at once (LLSO_TEST_LANES): those that need nothing more than what is
# ready (run-suites.py's EARLY: the unit, API-server, CLI and webhook suites, the faults) at
# once, beside the rest of the preparation; the scale bench and the external providers once the
# two server venvs are (the stage "venvs"); the real-server suite once every OGX release's is
# too ("servers"); the others once the ready file says the images are prepared ("images", which
# gives them what it found).
ready="$logs/prepared" venvs_ready="$logs/venvs-prepared" servers_ready="$logs/servers-prepared"
# Publishes a stage's ready file in one rename, so the runner never reads half of it:
# <file> <line...> (`KEY=VALUE` lines reach the stage's suites' environment).
publish_ready() { local file=$1; shift; printf '%s\n' "$@" >"$file.partial" && mv "$file.partial" "$file"; }
scripts/lib/run-suites.py --ready images="$ready" --ready venvs="$venvs_ready" --ready servers="$servers_ready" \
  --log-dir "$logs/suites" --workspace "${targets[@]}" "$@" &
suites=$!
finish venv
finish ogxvenv
publish_ready "$venvs_ready" "# the llama-stack and OGX venvs are prepared"
# The other OGX releases (most of them thin venvs over the one just prepared; 1.5.0 a whole one)
# only the real-server suite uses: prepared beside the real node's images and the first suites,
# not awaited before them (about 500 s of pip on a fresh Python cache, 2026-11-29). Once they
# are, the real-server suite may start (it need not wait for the images).
release_venvs_then_ready() {
  step ogx-release-venvs ogx_release_venvs || return 1
  publish_ready "$servers_ready" "# every server venv is prepared"
}
begin releases release_venvs_then_ready
step node-images "${CARGO_TARGET_DIR:-target}/debug/examples/prepare_test_images" >&2 \
  || { log "FAILED to prepare: the real node's images (output above)"; exit 1; }
log "prepared: the real node's images"
if [[ -z "${LLSO_OPERATOR_IMAGE_LAYOUT:-}" ]]; then
  finish image
  LLSO_OPERATOR_IMAGE_LAYOUT=$(tail -n 1 "$logs/image.out")
fi
export LLSO_OPERATOR_IMAGE_LAYOUT
# The other suites start now, while the remaining Go tools (helm, cosign, kstatus, the OLM
# validator, Prometheus, the OGX operator's e2e suite) may still be building: a suite that needs one asks its build script,
# which waits for the build under way (scripts/lib/cache-lock.sh). On a fresh machine this
# starts the real node's suites about five minutes sooner; a warm machine has the tools cached.
publish_ready "$ready" "LLSO_OPERATOR_IMAGE_LAYOUT=$LLSO_OPERATOR_IMAGE_LAYOUT"
log "prepared what the suites wait for in $(( $(date +%s) - prepare_start ))s"
finish releases
finish go
log "prepared everything in $(( $(date +%s) - prepare_start ))s"
step_table

# Every suite runs, even after one fails.
status=0
wait "$suites" || status=$?
step_table
log "total $(( $(date +%s) - start ))s"
exit "$status"
