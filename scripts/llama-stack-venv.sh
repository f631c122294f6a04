#!/usr/bin/env bash
# Creates (or reuses) a Python >= 3.12 venv with the pinned llama-stack, cached outside the clone.
# Prints the venv directory. Extra packages to install can be given as arguments (cached too).
# Env: LLAMA_STACK_VERSION (default below), LLSO_CACHE_DIR, LLSO_PYTHON (a python3.12+ to use).
set -euo pipefail
VERSION="${LLAMA_STACK_VERSION:-0.7.3}"
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
VENV="$CACHE_ROOT/venv/llama-stack-$VERSION"
log() { echo "[llama-stack-venv] $*" >&2; }

find_python() {
  for candidate in "${LLSO_PYTHON:-}" python3.13 python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3" python3; do
    [[ -n "$candidate" ]] || continue
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}

if [[ ! -f "$VENV/.complete" ]]; then
  PY=$(find_python) || { log "ERROR: llama-stack $VERSION needs Python >= 3.12; none found (set LLSO_PYTHON)"; exit 1; }
  log "creating $VENV with $PY"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  # mcp 2.x breaks llama-stack 0.7.3 ("cannot import name 'McpError' from 'mcp'").
  "$VENV/bin/pip" install --quiet "llama-stack==$VERSION" "mcp<2" >&2
  touch "$VENV/.complete"
fi
if (($#)); then
  stamp="$VENV/.extra-$(printf '%s\n' "$@" | sort | sha256sum | cut -c1-16)"
  if [[ ! -f "$stamp" ]]; then
    log "installing extra packages: $*"
    "$VENV/bin/pip" install --quiet "$@" "mcp<2" >&2
    touch "$stamp"
  fi
fi
echo "$VENV"
