#!/usr/bin/env bash
# Writes the OLM bundle (registry+v1) of this version into bundle/ (or the directory given) from
# deploy/base: the ClusterServiceVersion, the CRD, the metrics Service and reader ClusterRole,
# metadata/annotations.yaml and bundle.Dockerfile. A test renders it again and fails on drift.
# Usage: scripts/build-bundle.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cargo-env.sh   # the same build whoever starts it
OUT="${1:-bundle}"
# kubectl: $KUBECTL, else the control plane the tests use ($LLSO_CONTROL_PLANE_BIN), else built.
if [[ -z "${KUBECTL:-}" && -n "${LLSO_CONTROL_PLANE_BIN:-}" ]]; then KUBECTL="$LLSO_CONTROL_PLANE_BIN/kubectl"; fi
KUBECTL="${KUBECTL:-$(dirname "$(scripts/build-control-plane.sh)/kubectl")/kubectl}"
rm -rf "$OUT/manifests" "$OUT/metadata"
"$KUBECTL" kustomize deploy/base | cargo run --quiet --example olm_bundle -- "$OUT"
