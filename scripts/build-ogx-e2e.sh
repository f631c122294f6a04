#!/usr/bin/env bash
# Builds the OGX operator's own end-to-end suite (its `tests/e2e`, package `e2e`) as a test binary,
# from its Go module at a pinned release, and caches it outside the clone with the module's source
# beside it (the suite reads its samples from `../../config/samples` and writes next to them).
# Prints the cache entry: `<entry>/e2e.test` and `<entry>/module/`. Safe to run several times at
# once (scripts/lib/cache-lock.sh).
#
# Usage: scripts/build-ogx-e2e.sh
# Env:   OGX_OPERATOR_VERSION (default below), OGX_OPERATOR_SUM (its go.sum `h1:` hash, checked);
#        the cache as in build-go-tool.sh
set -euo pipefail
# v0.14.0 is the newest release the module proxy here serves (it lists no versions; v0.14.1,
# v0.15.0 and v1.0.0 are refused), so the version is named exactly, with the hash it had on
# 2026-11-29.
VERSION="${OGX_OPERATOR_VERSION:-v0.14.0}"
SUM="${OGX_OPERATOR_SUM:-h1:VLq+AiVlr24IwagT6BVLHwtXOOdWxtdRm3wwYv748yc=}"
MODULE=github.com/ogx-ai/ogx-k8s-operator
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_ROOT="${LLSO_GO_TOOLS_CACHE_DIR:-${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}}"
OUT="$CACHE_ROOT/ogx-e2e/$VERSION-$(sha256sum "$0" | cut -c1-12)"

source "$REPO/scripts/lib/cache-lock.sh"

log() { echo "[ogx-e2e] $*" >&2; }
found() { [[ -x "$OUT/e2e.test" && -d "$OUT/module/tests/e2e" ]] && { log "cached: $OUT"; echo "$OUT"; }; }

found && exit 0
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build the OGX operator's e2e suite"; exit 1; }
lock_cache_entry "$OUT" ogx-e2e
found && exit 0

STAGE=$(staging_dir "$OUT")
export GOFLAGS="-trimpath -mod=mod" CGO_ENABLED=0 GOTOOLCHAIN=local
log "downloading $MODULE@$VERSION"
# `go mod download` checks the module against the checksum database; the pinned hash checks it
# against what this script was written for.
# On failure the reason is in the JSON it prints.
info=$(cd "$STAGE" && go mod download -json "$MODULE@$VERSION") || { log "go mod download failed: $info"; exit 1; }
dir=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["Dir"]) if d.get("Sum") == sys.argv[1] else sys.exit("%s@%s has hash %s, not %s" % (sys.argv[2], sys.argv[3], d.get("Sum"), sys.argv[1]))' "$SUM" "$MODULE" "$VERSION" <<<"$info")
cp -r "$dir" "$STAGE/module"
chmod -R u+w "$STAGE/module"
log "building its tests/e2e"
(cd "$STAGE/module" && go test -c -o "$STAGE/e2e.test" ./tests/e2e >&2)
publish_dir "$STAGE" "$OUT"
echo "$OUT"
