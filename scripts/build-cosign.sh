#!/usr/bin/env bash
# Builds cosign (sigstore's own command) from Go modules and caches the binary outside the clone,
# keyed by its version. Prints the binary's path. The release test signs with it and checks the
# signature and the SBOM attestation with `cosign verify` and `cosign verify-attestation`.
#
# Usage: scripts/build-cosign.sh [VERSION]   (default below: the newest v2 the module proxy here
#        serves; a v3.x version builds github.com/sigstore/cosign/v3)
# Env:   LLSO_GO_TOOLS_CACHE_DIR or LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator)
set -euo pipefail
VERSION="${1:-v2.6.5}"
case "$VERSION" in
  v2.*) MODULE=github.com/sigstore/cosign/v2 ;;
  v3.*) MODULE=github.com/sigstore/cosign/v3 ;;
  *) echo "[cosign] ERROR: version $VERSION is neither v2.x nor v3.x" >&2; exit 2 ;;
esac
CACHE_ROOT="${LLSO_GO_TOOLS_CACHE_DIR:-${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}}"
OUT="$CACHE_ROOT/cosign/$VERSION"

log() { echo "[cosign] $*" >&2; }

if [[ -x "$OUT/cosign" ]]; then
  log "cached: $OUT/cosign"
  echo "$OUT/cosign"
  exit 0
fi
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build cosign"; exit 1; }
mkdir -p "$OUT"
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$OUT/bin.tmp"
log "building $MODULE/cmd/cosign@$VERSION (a few minutes, once)"
go install -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$VERSION" \
  "$MODULE/cmd/cosign@$VERSION" >&2
mv "$OUT/bin.tmp/cosign" "$OUT/cosign"
rmdir "$OUT/bin.tmp"
echo "$OUT/cosign"
