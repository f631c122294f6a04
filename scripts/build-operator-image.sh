#!/usr/bin/env bash
# Builds the operator's image from the repository's Dockerfile, offline: the static binary is
# compiled on the host (scripts/build-static.sh, per architecture), and buildah runs the
# Dockerfile's final stage over it (BINARY=prebuilt), never pulling a base image. Written as an
# OCI layout (tag `latest`) cached outside the clone by its inputs; prints the layout directory.
# With one architecture (default: this machine's) `latest` is that image; with several it is an
# image index holding one image per platform, as a multi-platform `docker buildx build` makes.
# Push it with skopeo:
#   skopeo copy --all oci:<layout>:latest docker://<registry>/llama-stack-operator:<tag>
#
# Usage: scripts/build-operator-image.sh [amd64|arm64 ...]
# Env: LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator).
# Needs buildah (scripts/install-test-deps.sh installs it) and the ca-certificates package.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
source scripts/lib/cache-lock.sh
log() { echo "[operator-image] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v buildah >/dev/null || die "buildah is required (scripts/install-test-deps.sh installs it)"
case "$(uname -m)" in x86_64) host=amd64 ;; aarch64) host=arm64 ;; *) host=$(uname -m) ;; esac
arches=("$@"); ((${#arches[@]})) || arches=("$host")
# Mozilla's roots as Debian ships them, not this machine's bundle (which may hold a local CA).
shopt -s nullglob
roots=(/usr/share/ca-certificates/mozilla/*.crt)
((${#roots[@]})) || die "no CA certificates in /usr/share/ca-certificates/mozilla (install ca-certificates)"

work=$(mktemp -d "${TMPDIR:-/tmp}/llso-operator-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/context"
cp Dockerfile "$work/context/"
keys=()
for arch in "${arches[@]}"; do
  binary=$(scripts/build-static.sh "$arch")
  mkdir -p "$work/context/dist/$arch"
  install -m 0755 "$binary" "$work/context/dist/$arch/llama-stack-operator"
  cat "${roots[@]}" >"$work/context/dist/$arch/ca-certificates.crt"
  keys+=("$arch $(sha256sum <"$binary")")
done
key=$( (cat "$0" Dockerfile "${roots[@]}"; printf '%s\n' "${keys[@]}") | sha256sum | cut -c1-16)
out="$CACHE_ROOT/images/operator-$key"
# One build per entry; a second caller waits and finds it complete (scripts/lib/cache-lock.sh).
[[ -f "$out/.complete" ]] || lock_cache_entry "$out" operator-image
if [[ ! -f "$out/.complete" ]]; then
  rm -rf "$out"; mkdir -p "$out"
  # A private store, so nothing is left in (or read from) the machine's container storage.
  store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
  for arch in "${arches[@]}"; do
    log "building the Dockerfile's image for linux/$arch"
    buildah "${store[@]}" build --pull-never --layers=false --timestamp 0 \
      --build-arg BINARY=prebuilt --platform "linux/$arch" -t "llama-stack-operator:$arch" \
      "$work/context" >&2
  done
  if ((${#arches[@]} == 1)); then
    buildah "${store[@]}" push --quiet "llama-stack-operator:${arches[0]}" "oci:$out/layout:latest" >&2
  else
    buildah "${store[@]}" manifest create llama-stack-operator:index >&2
    for arch in "${arches[@]}"; do
      buildah "${store[@]}" manifest add --arch "$arch" --os linux llama-stack-operator:index \
        "containers-storage:localhost/llama-stack-operator:$arch" >&2
    done
    buildah "${store[@]}" manifest push --all --quiet llama-stack-operator:index "oci:$out/layout:latest" >&2
    # The index names one image per platform, each with the binary of its architecture.
    python3 - "$out/layout" "${arches[@]}" <<'PY' || die "the image index does not hold every platform"
import json, sys
layout, want = sys.argv[1], sorted(sys.argv[2:])
blob = lambda d: json.load(open(f"{layout}/blobs/{d.replace(':', '/')}"))
top = json.load(open(f"{layout}/index.json"))["manifests"][0]
index = blob(top["digest"])
got = sorted(m["platform"]["architecture"] for m in index["manifests"])
for m in index["manifests"]:
    config = blob(blob(m["digest"])["config"]["digest"])
    assert config["architecture"] == m["platform"]["architecture"], (config["architecture"], m["platform"])
    assert config["config"]["User"] == "65532:65532", config["config"]
print(f"index {top['digest']}: {', '.join(got)}", file=sys.stderr)
sys.exit(0 if got == want else 1)
PY
  fi
  touch "$out/.complete"
fi
echo "$out/layout"
