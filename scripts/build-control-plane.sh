#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, and kwok, which plays the kubelet for Pods on fake nodes) and the real test node's Go
# parts (kubelet, kube-proxy, and the Pod sandbox `pause` from tests/node/pause) from Go modules,
# and caches the binaries outside the clone, keyed by version. Rebuilds only when a version (or
# this recipe) changes. Safe to run several times at once (scripts/lib/cache-lock.sh).
#
# Usage: scripts/build-control-plane.sh            # prints the bin directory on stdout
# Env:   KUBE_VERSION (default below), LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

KUBE_VERSION="${KUBE_VERSION:-v1.35.4}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
RECIPE_REV=4   # bump when the build recipe changes in a way that must invalidate the cache
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
KEY="kube-${KUBE_VERSION}-kwok-${KWOK_VERSION}-r${RECIPE_REV}"
OUT="$CACHE_ROOT/control-plane/$KEY"
BIN="$OUT/bin"

source "$REPO/scripts/lib/cache-lock.sh"

log() { echo "[control-plane] $*" >&2; }
found() { [[ -f "$OUT/.complete" ]] && { log "cached: $BIN"; echo "$BIN"; }; }

found && exit 0
command -v go >/dev/null || { log "ERROR: go is not installed; it is needed to build the test control plane"; exit 1; }
# One build per entry; a second caller waits and reuses it (scripts/lib/cache-lock.sh). The
# binaries are built in a staging directory and published with one rename.
lock_cache_entry "$OUT" control-plane
found && exit 0
STAGE=$(staging_dir "$OUT")
FINAL_BIN="$BIN"
BIN="$STAGE/bin"

# staging module version: v1.35.4 -> v0.35.4
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
WORK="$STAGE/build"
mkdir -p "$WORK/kube" "$WORK/etcd" "$BIN"
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local

log "downloading k8s.io/kubernetes@$KUBE_VERSION metadata"
KK_GOMOD=$(cd "$WORK/kube" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')

# Replace directives of a dependency are ignored by Go, so every staging module k/k replaces with
# ./staging/src/k8s.io/X is pinned here to its published module k8s.io/X at the matching version.
REPLACES=$(sed -nE 's#^[[:space:]]*(replace[[:space:]]+)?(k8s\.io/[A-Za-z0-9._-]+)[[:space:]]+=>[[:space:]]+\./staging/src/k8s\.io/[A-Za-z0-9._-]+[[:space:]]*$#\2#p' "$KK_GOMOD" | sort -u)
[[ -n "$REPLACES" ]] || { log "ERROR: found no staging replace lines in $KK_GOMOD"; exit 1; }
log "pinning $(echo "$REPLACES" | wc -l) staging modules to $STAGING_VERSION"

ETCD_VERSION=$(sed -nE 's#^[[:space:]]*go\.etcd\.io/etcd/client/v3[[:space:]]+(v[0-9.]+).*#\1#p' "$KK_GOMOD" | head -1)
[[ -n "$ETCD_VERSION" ]] || { log "ERROR: could not find the etcd client version k8s.io/kubernetes@$KUBE_VERSION pins"; exit 1; }
GO_DIRECTIVE=$(sed -nE 's#^go[[:space:]]+([0-9.]+).*#\1#p' "$KK_GOMOD" | head -1)

{
  echo "module llso.local/controlplane"
  echo
  echo "go $GO_DIRECTIVE"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  while read -r m; do echo "	$m => $m $STAGING_VERSION"; done <<<"$REPLACES"
  echo ")"
} > "$WORK/kube/go.mod"

LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"

cd "$WORK/kube"
log "resolving dependencies"
KUBE_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
go get $(printf "k8s.io/kubernetes/cmd/%s@$KUBE_VERSION " "${KUBE_CMDS[@]}") >&2
for cmd in "${KUBE_CMDS[@]}"; do
  log "building $cmd"
  go build -ldflags "$LDFLAGS" -o "$BIN/$cmd" "k8s.io/kubernetes/cmd/$cmd" >&2
done

log "building pause"
PAUSE_SRC="$REPO/tests/node/pause"
mkdir -p "$WORK/pause" && cp "$PAUSE_SRC/main.go" "$WORK/pause/"
(cd "$WORK/pause" && printf 'module llso.local/pause\n\ngo %s\n' "$GO_DIRECTIVE" > go.mod && go build -ldflags "-s -w" -o "$BIN/pause" . >&2)

log "building etcd $ETCD_VERSION"
cd "$WORK/etcd"
printf 'module llso.local/etcd\n\ngo %s\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$GO_DIRECTIVE" "$ETCD_VERSION" > go.mod
go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
go build -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3 >&2

log "building kwok $KWOK_VERSION"
GOBIN="$BIN" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2
# kwok needs stages (how nodes and Pods evolve); its module ships them: nodes initialise and renew
# their leases, Pods become Ready, finish, and go away when deleted.
STAGES="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
         pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  [[ -f "$STAGES/$f" ]] || { log "ERROR: kwok stage $f is missing from $STAGES"; exit 1; }
  cat "$STAGES/$f"; echo "---"
done > "$BIN/kwok-stages.yaml"

"$BIN/kube-apiserver" --version >&2
"$BIN/etcd" --version >&2
printf 'kube=%s\netcd=%s\nkwok=%s\n' "$KUBE_VERSION" "$ETCD_VERSION" "$KWOK_VERSION" > "$STAGE/versions"
cd "$STAGE" && rm -rf "$WORK"
touch "$STAGE/.complete"
publish_dir "$STAGE" "$OUT"
log "built: $FINAL_BIN"
echo "$FINAL_BIN"
