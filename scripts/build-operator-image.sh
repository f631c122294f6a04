#!/usr/bin/env bash
# Builds the operator's image from the repository's Dockerfile, offline: the static binary is
# compiled on the host (scripts/build-static.sh, or the one given), and buildah runs the
# Dockerfile's final stage over it (BINARY=prebuilt), never pulling a base image. The image is
# written as an OCI layout (tag `latest`), cached outside the clone by its inputs; prints the
# layout directory. Push it with skopeo:
#   skopeo copy oci:<layout>:latest docker://<registry>/llama-stack-operator:<tag>
#
# Usage: scripts/build-operator-image.sh [static-binary]
# Env: LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator).
# Needs buildah (scripts/install-test-deps.sh installs it) and the ca-certificates package.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
log() { echo "[operator-image] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v buildah >/dev/null || die "buildah is required (scripts/install-test-deps.sh installs it)"
case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) die "no image platform for $(uname -m)" ;;
esac
binary="${1:-$(scripts/build-static.sh)}"
[[ -x "$binary" ]] || die "static binary $binary not found"
# Mozilla's roots as Debian ships them, not this machine's bundle (which may hold a local CA).
shopt -s nullglob
roots=(/usr/share/ca-certificates/mozilla/*.crt)
((${#roots[@]})) || die "no CA certificates in /usr/share/ca-certificates/mozilla (install ca-certificates)"

key=$( (cat "$0" Dockerfile; sha256sum <"$binary"; cat "${roots[@]}") | sha256sum | cut -c1-16)
out="$CACHE_ROOT/images/operator-$key"
if [[ ! -f "$out/.complete" ]]; then
  rm -rf "$out"; mkdir -p "$out"
  work=$(mktemp -d "${TMPDIR:-/tmp}/llso-operator-image.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/context/dist/$arch"
  cp Dockerfile "$work/context/"
  install -m 0755 "$binary" "$work/context/dist/$arch/llama-stack-operator"
  cat "${roots[@]}" >"$work/context/dist/$arch/ca-certificates.crt"
  # A private store, so nothing is left in (or read from) the machine's container storage.
  store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
  log "building the Dockerfile's image for linux/$arch"
  buildah "${store[@]}" build --pull-never --layers=false --timestamp 0 \
    --build-arg BINARY=prebuilt --platform "linux/$arch" -t llama-stack-operator:build \
    "$work/context" >&2
  buildah "${store[@]}" push --quiet llama-stack-operator:build "oci:$out/layout:latest" >&2
  touch "$out/.complete"
fi
echo "$out/layout"
