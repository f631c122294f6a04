#!/usr/bin/env bash
# Runs every test: unit tests, and the integration tests against a real kube-apiserver + etcd
# and real OCI registries, and on a real node running the operator's image.
# Builds (or reuses) the control plane first; a failure to build it fails the run, never skips.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in cargo go python3; do
  command -v "$tool" >/dev/null || { echo "error: $tool is required (see README, 'Requirements')" >&2; exit 1; }
done

scripts/install-test-deps.sh
# A control plane given by the caller (CI builds it once, outside the fresh Python cache) is used as is.
LLSO_CONTROL_PLANE_BIN="${LLSO_CONTROL_PLANE_BIN:-$(scripts/build-control-plane.sh)}"
export LLSO_CONTROL_PLANE_BIN
# The operator's image from the Dockerfile, which the real node runs (a release build of the
# static binary; built here, before the suites, so no suite waits on a nested cargo build).
LLSO_OPERATOR_IMAGE_LAYOUT="${LLSO_OPERATOR_IMAGE_LAYOUT:-$(scripts/build-operator-image.sh)}"
export LLSO_OPERATOR_IMAGE_LAYOUT

cargo test --workspace --all-targets "$@"
