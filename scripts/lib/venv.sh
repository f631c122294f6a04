# Sourced by the server venv scripts (llama-stack-venv.sh, ogx-venv.sh): one cached Python >= 3.12
# venv per server release, shared by every suite.
#
#   ensure_venv <venv> <label> <server> [extra requirement ...]
#       Builds <venv> with the caller's BASE_PACKAGES unless it holds them already, then installs
#       the extra requirements on top (with the caller's EXTRA_PINS, which keep pip from moving
#       the server's own pins to suit an extra). Each set is marked by a stamp named after a hash
#       of its list, so editing a list rebuilds or reinstalls. <server> names the release in the
#       error when no Python >= 3.12 is found (`$LLSO_PYTHON` chooses one).
#
# A venv cannot move once made (its entry points name their own path), so it is built in place
# under the entry's lock (lib/cache-lock.sh), and a stamp is written only once its pip install
# worked: a half-built venv is never taken for a finished one, and a second caller waits.

source "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"

find_python() {
  for candidate in "${LLSO_PYTHON:-}" python3.13 python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3" python3; do
    [[ -n "$candidate" ]] || continue
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}

ensure_venv() {
  local venv=$1 label=$2 server=$3
  shift 3
  local base_stamp extra_stamp="" py
  base_stamp="$(printf '%s\n' "${BASE_PACKAGES[@]}" | sha256sum | cut -c1-16)"
  (($#)) && extra_stamp="$venv/.extra-$(printf '%s\n' "$@" | sort | sha256sum | cut -c1-16)"
  if [[ ! -f "$venv/.complete-$base_stamp" || ( -n "$extra_stamp" && ! -f "$extra_stamp" ) ]]; then
    lock_cache_entry "$venv" "$label"
  fi
  if [[ ! -f "$venv/.complete-$base_stamp" ]]; then
    py=$(find_python) || { echo "[$label] ERROR: $server needs Python >= 3.12; none found (set LLSO_PYTHON)" >&2; return 1; }
    echo "[$label] creating $venv with $py" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip >&2
    "$venv/bin/pip" install --quiet "${BASE_PACKAGES[@]}" >&2
    touch "$venv/.complete-$base_stamp"
  fi
  if [[ -n "$extra_stamp" && ! -f "$extra_stamp" ]]; then
    echo "[$label] installing extra packages: $*" >&2
    "$venv/bin/pip" install --quiet "$@" "${EXTRA_PINS[@]}" >&2
    touch "$extra_stamp"
  fi
}
