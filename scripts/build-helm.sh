#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v3's own command) from Go modules and caches the binary outside the
# clone, keyed by its version. Prints the binary's path. The chart tests install, upgrade and
# uninstall charts/llama-stack-operator with it, and check it with `helm lint`.
#
# Usage: scripts/build-helm.sh
# Env:   HELM_VERSION (default below: the newest v3 release the module proxy here serves);
#        LLSO_GO_TOOLS_CACHE_DIR or LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator)
set -euo pipefail
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
CACHE_ROOT="${LLSO_GO_TOOLS_CACHE_DIR:-${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}}"
OUT="$CACHE_ROOT/helm/$HELM_VERSION"

log() { echo "[helm] $*" >&2; }

if [[ -x "$OUT/helm" ]]; then
  log "cached: $OUT/helm"
  echo "$OUT/helm"
  exit 0
fi
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build helm"; exit 1; }
mkdir -p "$OUT"
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$OUT/bin.tmp"
log "building helm.sh/helm/v3/cmd/helm@$HELM_VERSION (a few minutes, once)"
go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
mv "$OUT/bin.tmp/helm" "$OUT/helm"
rmdir "$OUT/bin.tmp"
echo "$OUT/helm"
