#!/usr/bin/env bash
# Rebuilds the embedded OGX data: configs-ogx/{starter,postgres-demo}/config.yaml from the pinned
# OGX release (scripts/ogx-venv.sh), and providers-ogx/, one provider table per run of releases in
# OGX_RELEASES whose tables are the same, each exported from that release's own package
# (scripts/ogx-release-venv.sh). A release PyPI adds goes at the end of OGX_RELEASES.
# To move the pin: OGX_VERSION=x.y.z in scripts/ogx-venv.sh, and the same version wherever the ogx
# image tags are listed.
set -euo pipefail
cd "$(dirname "$0")/.."
OGX_RELEASES=(
  1.0.0 1.0.1 1.0.2 1.0.3 1.0.4
  1.1.0 1.1.1 1.1.2 1.1.3
  1.2.0 1.2.1 1.2.2 1.2.3 1.2.4 1.2.5
  1.3.0 1.3.1
  1.4.0 1.4.1
  1.5.0
)
VENV=$(scripts/ogx-venv.sh)
"$VENV/bin/python" scripts/llama_stack_data.py export-ogx .
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tables=()
for release in "${OGX_RELEASES[@]}"; do
  venv=$(scripts/ogx-release-venv.sh "$release")
  "$venv/bin/python" scripts/llama_stack_data.py table-ogx "$scratch/$release.json"
  tables+=("$scratch/$release.json")
done
"$VENV/bin/python" scripts/llama_stack_data.py group-ogx-tables providers-ogx "${tables[@]}"
echo "updated configs-ogx/ from ogx $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("ogx"))') and providers-ogx/ from ogx ${OGX_RELEASES[*]}" >&2
