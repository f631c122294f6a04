#!/usr/bin/env bash
# Builds Prometheus (the server only, without its web UI's assets: the HTTP API is all the
# dashboard bench uses) from Go modules and caches the binary outside the clone, keyed by version.
# Without its service discovery plugins (build tag `remove_all_sd`, Prometheus 3.9 and later):
# the bench scrapes one static target, and the plugins bring the Kubernetes, AWS, Azure and GCE
# clients, most of the modules to download and compile on a fresh machine. Prints the binary's
# path.
#
# Usage: scripts/build-prometheus.sh
# Env:   PROMETHEUS_VERSION (default below), LLSO_GO_TOOLS_CACHE_DIR or LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator)
set -euo pipefail

# Go module versions of Prometheus are v0.<minor>.<patch> for release v3.<minor>.<patch>.
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
# LLSO_GO_TOOLS_CACHE_DIR: where CI keeps hermetic Go builds (pinned versions) while the rest of
# the cache is fresh.
CACHE_ROOT="${LLSO_GO_TOOLS_CACHE_DIR:-${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}}"
BUILD_TAGS=remove_all_sd
OUT="$CACHE_ROOT/prometheus/$PROMETHEUS_VERSION-$BUILD_TAGS"

source "$(dirname "${BASH_SOURCE[0]}")/lib/cache-lock.sh"

log() { echo "[prometheus] $*" >&2; }
found() { [[ -x "$OUT/prometheus" ]] && { log "cached: $OUT/prometheus"; echo "$OUT/prometheus"; }; }

found && exit 0
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build Prometheus"; exit 1; }
# One build per entry; a second caller waits and reuses it (scripts/lib/cache-lock.sh).
lock_cache_entry "$OUT" prometheus
found && exit 0

log "building github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION -tags $BUILD_TAGS (a few minutes on 2 cores)"
STAGE=$(staging_dir "$OUT")
GOBIN="$STAGE" GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local \
  go install -tags "$BUILD_TAGS" -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" >&2
publish_dir "$STAGE" "$OUT"
echo "$OUT/prometheus"
