#!/usr/bin/env bash
# Runs every test: unit tests, and the integration tests against a real kube-apiserver + etcd.
# Builds (or reuses) the control plane first; a failure to build it fails the run, never skips.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in cargo go python3; do
  command -v "$tool" >/dev/null || { echo "error: $tool is required (see README, 'Requirements')" >&2; exit 1; }
done

LLSO_CONTROL_PLANE_BIN="$(scripts/build-control-plane.sh)"
export LLSO_CONTROL_PLANE_BIN

cargo test --workspace --all-targets "$@"
