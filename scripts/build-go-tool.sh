#!/usr/bin/env bash
# Builds a small test command (one main.go in the repository) over a Go library, from Go modules,
# and caches the binary outside the clone, keyed by the library version and the source. Prints
# the binary's path. Safe to run several times at once (scripts/lib/cache-lock.sh). The thin scripts build-olm-validator.sh and build-kstatus.sh name what to build.
#
# Usage: scripts/build-go-tool.sh NAME SOURCE MODULE VERSION KEY_PREFIX
#   NAME        the binary, and its directory in the cache
#   SOURCE      the main.go, relative to the repository
#   MODULE      the library's module path, resolved at VERSION
# Env:   LLSO_GO_TOOLS_CACHE_DIR or LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator)
set -euo pipefail
[[ $# -eq 5 ]] || { echo "usage: $0 NAME SOURCE MODULE VERSION KEY_PREFIX" >&2; exit 2; }
NAME="$1" MODULE="$3" VERSION="$4" PREFIX="$5"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$REPO/$2"
# LLSO_GO_TOOLS_CACHE_DIR: where CI keeps hermetic Go builds (pinned versions) while the rest of
# the cache is fresh.
CACHE_ROOT="${LLSO_GO_TOOLS_CACHE_DIR:-${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}}"
KEY="${PREFIX}-${VERSION}-$(sha256sum "$SRC" | cut -c1-12)"
OUT="$CACHE_ROOT/$NAME/$KEY"

source "$REPO/scripts/lib/cache-lock.sh"

log() { echo "[$NAME] $*" >&2; }
found() { [[ -x "$OUT/$NAME" ]] && { log "cached: $OUT/$NAME"; echo "$OUT/$NAME"; }; }

found && exit 0
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build $NAME"; exit 1; }
# One build per entry; a second caller waits and reuses it (scripts/lib/cache-lock.sh).
lock_cache_entry "$OUT" "$NAME"
found && exit 0

STAGE=$(staging_dir "$OUT")
mkdir "$STAGE/src"
cp "$SRC" "$STAGE/src/"
cd "$STAGE/src"
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local
printf 'module llso.local/%s\n\ngo 1.22\n' "$NAME" > go.mod
log "resolving $MODULE@$VERSION"
go get "$MODULE@$VERSION" >&2
go mod tidy >&2
log "building"
go build -ldflags "-s -w" -o "$STAGE/$NAME" . >&2
cd "$STAGE" && rm -rf "$STAGE/src"
publish_dir "$STAGE" "$OUT"
echo "$OUT/$NAME"
