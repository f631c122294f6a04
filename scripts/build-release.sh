#!/usr/bin/env bash
# Writes the single-file install manifests of release/ from deploy/'s overlays (kubectl's
# kustomize from the control plane build). A test renders them again and fails on any drift:
# edit deploy/, then run this. Usage: scripts/build-release.sh [OUT_DIR]   (default release/)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-release}"
# kubectl: $KUBECTL, else the control plane the tests use ($LLSO_CONTROL_PLANE_BIN), else built.
if [[ -z "${KUBECTL:-}" && -n "${LLSO_CONTROL_PLANE_BIN:-}" ]]; then KUBECTL="$LLSO_CONTROL_PLANE_BIN/kubectl"; fi
KUBECTL="${KUBECTL:-$(dirname "$(scripts/build-control-plane.sh)/kubectl")/kubectl}"
[[ -x "$KUBECTL" ]] || { echo "error: kubectl not found at $KUBECTL" >&2; exit 1; }
mkdir -p "$OUT"
# file <- overlay: what each file installs.
for entry in \
  "operator.yaml:self-managed:the operator; it makes and rotates its own webhook certificates (no dependency)" \
  "operator-cert-manager.yaml:cert-manager:the operator; cert-manager issues the webhook certificates" \
  "operator-openshift.yaml:openshift:the operator on OpenShift; the service CA issues the webhook certificates" \
  "operator-monitoring.yaml:monitoring:operator.yaml plus a ServiceMonitor, alert rules and the Grafana dashboard (prometheus-operator)"; do
  IFS=: read -r file overlay what <<<"$entry"
  {
    echo "# llama-stack-operator: $what."
    echo "# Generated from deploy/overlays/$overlay by scripts/build-release.sh; do not edit."
    echo "# Install: kubectl apply --server-side -f $file"
    "$KUBECTL" kustomize "deploy/overlays/$overlay"
  } >"$OUT/$file"
done
