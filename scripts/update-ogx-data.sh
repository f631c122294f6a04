#!/usr/bin/env bash
# Rebuilds the embedded OGX data, configs-ogx/{starter,postgres-demo}/config.yaml and
# providers-ogx.json, from the pinned OGX release (the cached venv of scripts/ogx-venv.sh).
# To move to another release: OGX_VERSION=x.y.z scripts/update-ogx-data.sh, and pin the same
# version wherever the ogx image tags are listed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(scripts/ogx-venv.sh)
"$VENV/bin/python" scripts/llama_stack_data.py export-ogx .
echo "updated configs-ogx/ and providers-ogx.json from ogx $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("ogx"))')" >&2
