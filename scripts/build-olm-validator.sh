#!/usr/bin/env bash
# Builds olm-validate (tests/olm/validate), a small command over operator-framework's bundle
# validation library (github.com/operator-framework/api), from Go modules, and caches the binary
# outside the clone, keyed by the library version and the source. Prints the binary's path.
#
# Usage: scripts/build-olm-validator.sh
# Env:   OLM_API_VERSION (default below), LLSO_GO_TOOLS_CACHE_DIR or LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$REPO/tests/olm/validate/main.go"

# v0.27.0 is the newest release the module proxy here serves; it lists no versions, so the
# version is named exactly.
OLM_API_VERSION="${OLM_API_VERSION:-v0.27.0}"
# LLSO_GO_TOOLS_CACHE_DIR: where CI keeps hermetic Go builds (pinned versions) while the rest of
# the cache is fresh.
CACHE_ROOT="${LLSO_GO_TOOLS_CACHE_DIR:-${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}}"
KEY="api-${OLM_API_VERSION}-$(sha256sum "$SRC" | cut -c1-12)"
OUT="$CACHE_ROOT/olm-validator/$KEY"

log() { echo "[olm-validator] $*" >&2; }

if [[ -x "$OUT/olm-validate" ]]; then
  log "cached: $OUT/olm-validate"
  echo "$OUT/olm-validate"
  exit 0
fi
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build olm-validate"; exit 1; }

WORK="$OUT/build"
rm -rf "$WORK" && mkdir -p "$WORK"
cp "$SRC" "$WORK/"
cd "$WORK"
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local
printf 'module llso.local/olmvalidate\n\ngo 1.22\n' > go.mod
log "resolving github.com/operator-framework/api@$OLM_API_VERSION"
go get "github.com/operator-framework/api@$OLM_API_VERSION" >&2
go mod tidy >&2
log "building"
go build -ldflags "-s -w" -o "$OUT/olm-validate.tmp" . >&2
mv "$OUT/olm-validate.tmp" "$OUT/olm-validate"
rm -rf "$WORK"
echo "$OUT/olm-validate"
