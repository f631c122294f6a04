#!/usr/bin/env bash
# Builds a command-line tool from its Go module (`go install PACKAGE@VERSION`) and caches the
# binary outside the clone, keyed by its version. Prints the binary's path. The thin scripts
# build-helm.sh and build-cosign.sh name what to build. Safe to run several times at once: one
# build per cache entry (scripts/lib/cache-lock.sh), the others wait and reuse it.
#
# Usage: scripts/go-install.sh NAME PACKAGE VERSION [LDFLAGS]
#   NAME     the binary, and its directory in the cache
#   PACKAGE  the command's package path (module path and /cmd/...)
#   LDFLAGS  extra -ldflags (e.g. -X of the version the tool reports)
# Env:   LLSO_GO_TOOLS_CACHE_DIR or LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator)
set -euo pipefail
[[ $# -ge 3 && $# -le 4 ]] || { echo "usage: $0 NAME PACKAGE VERSION [LDFLAGS]" >&2; exit 2; }
NAME="$1" PACKAGE="$2" VERSION="$3" LDFLAGS="${4:-}"
CACHE_ROOT="${LLSO_GO_TOOLS_CACHE_DIR:-${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}}"
OUT="$CACHE_ROOT/$NAME/$VERSION"
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache-lock.sh"

log() { echo "[$NAME] $*" >&2; }
found() { [[ -x "$OUT/$NAME" ]] && { log "cached: $OUT/$NAME"; echo "$OUT/$NAME"; }; }

found && exit 0
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build $NAME"; exit 1; }
lock_cache_entry "$OUT" "$NAME"
found && exit 0
STAGE=$(staging_dir "$OUT")
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$STAGE"
log "building $PACKAGE@$VERSION (a few minutes, once)"
go install -ldflags "-s -w $LDFLAGS" "$PACKAGE@$VERSION" >&2
[[ -x "$STAGE/$NAME" ]] || { log "ERROR: go install left no $NAME in $STAGE"; exit 1; }
publish_dir "$STAGE" "$OUT"
echo "$OUT/$NAME"
