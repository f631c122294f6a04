#!/usr/bin/env bash
# The operator's main job as far as it is built: a local API server with the LlamaStackDistribution
# CRD, the samples applied and validated. Pass --keep to leave the control plane running.
set -euo pipefail
cd "$(dirname "$0")/.."
LLSO_CONTROL_PLANE_BIN="$(scripts/build-control-plane.sh)"
export LLSO_CONTROL_PLANE_BIN
exec cargo run --quiet --example demo -- "$@"
