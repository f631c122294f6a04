#!/usr/bin/env bash
# The operator's main job on the embedded defaults: a local API server with the LlamaStackDistribution
# CRD, the samples applied and validated, and the controller generating their configs, ConfigMaps,
# Deployments and Services. Pass --keep to leave the control plane running.
set -euo pipefail
cd "$(dirname "$0")/.."
LLSO_CONTROL_PLANE_BIN="$(scripts/build-control-plane.sh)"
export LLSO_CONTROL_PLANE_BIN
exec cargo run --quiet --example demo -- "$@"
