#!/usr/bin/env bash
# Prints the directory of a venv that runs OGX release VERSION (its `ogx` CLI and package), for
# the per-release provider tables (scripts/update-ogx-data.sh) and the suites that put each
# release's configs before its own server.
#
#   scripts/ogx-release-venv.sh VERSION [extra requirement ...]
#
# The pinned release is scripts/ogx-venv.sh's venv. Any other release is first tried as a thin
# venv over it: only `ogx` and `ogx-api` of VERSION installed (without dependencies), the pinned
# venv's site-packages read after its own (a .pth file), kept only when `pip check` finds every
# requirement of VERSION met there. 1.0 to 1.4 are met by 1.3.0's dependencies, so a release costs
# two small wheels instead of a whole venv. A release whose requirements are not met (1.5.0 needs
# mcp 2 and openai 3) gets a whole venv of its own from scripts/ogx-venv.sh. Extra requirements go
# into the release's venv (pip installs only what the pinned venv lacks).
#
# Cached under $LLSO_CACHE_DIR/venv/ogx-release-VERSION, built under the entry's lock, published
# by a completion stamp: safe to run twice at once.
set -euo pipefail
VERSION=${1:?usage: ogx-release-venv.sh VERSION [extra requirement ...]}
shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PINNED=$(sed -n 's/^VERSION="${OGX_VERSION:-\(.*\)}"$/\1/p' "$HERE/ogx-venv.sh")
if [[ "$VERSION" == "$PINNED" ]]; then
  exec "$HERE/ogx-venv.sh" "$@"
fi
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
THIN="$CACHE_ROOT/venv/ogx-release-$VERSION"
source "$HERE/lib/cache-lock.sh"

thin_venv() {
  local base=$1 base_site site py complete unmet
  # Named after the pinned venv's own completion stamp: a rebuilt pinned venv (another package
  # list) makes every thin venv over it be built and checked again.
  complete="$THIN/.complete-$(cd "$base" && ls -d .complete-* | sort | sha256sum | cut -c1-16)"
  unmet="${complete/.complete-/.unmet-}"
  if [[ -f "$complete" ]]; then return 0; fi
  if [[ -f "$unmet" ]]; then return 1; fi
  lock_cache_entry "$THIN" "ogx-release-$VERSION"
  if [[ -f "$complete" ]]; then return 0; fi
  if [[ -f "$unmet" ]]; then return 1; fi
  rm -rf "$THIN"
  py=$(readlink -f "$base/bin/python")
  "$py" -m venv --without-pip "$THIN"
  base_site=$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  site=$("$THIN/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "[ogx-release-$VERSION] ogx $VERSION over the dependencies of ogx $PINNED" >&2
  "$base/bin/pip" --python "$THIN/bin/python" install --quiet --no-deps "ogx==$VERSION" "ogx-api==$VERSION" >&2
  echo "$base_site" > "$site/llso-pinned-release.pth"
  if ! "$base/bin/pip" --python "$THIN/bin/python" check >"$THIN/.pip-check" 2>&1; then
    echo "[ogx-release-$VERSION] the dependencies of ogx $PINNED do not meet ogx $VERSION's: $(head -1 "$THIN/.pip-check"); building a whole venv" >&2
    touch "$unmet"
    return 1
  fi
  touch "$complete"
}

BASE=$("$HERE/ogx-venv.sh")
if thin_venv "$BASE"; then
  if (($#)); then
    extra="$THIN/.extra-$(printf '%s\n' "$@" | sort | sha256sum | cut -c1-16)"
    if [[ ! -f "$extra" ]]; then
      lock_cache_entry "$THIN.extra" "ogx-release-$VERSION"
      if [[ ! -f "$extra" ]]; then
        "$BASE/bin/pip" --python "$THIN/bin/python" install --quiet "$@" "ogx==$VERSION" "ogx-api==$VERSION" >&2
        touch "$extra"
      fi
    fi
  fi
  echo "$THIN"
else
  OGX_VERSION="$VERSION" exec "$HERE/ogx-venv.sh" "$@"
fi
