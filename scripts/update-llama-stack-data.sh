#!/usr/bin/env bash
# Regenerates the embedded llama-stack data (configs/<distribution>/config.yaml, providers.json)
# from the pinned llama-stack release. A version bump is: LLAMA_STACK_VERSION=x.y.z scripts/update-llama-stack-data.sh
# (then update distributions.json's tags and the embedded-config list in resolver/src/embedded.rs if names changed).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(scripts/llama-stack-venv.sh)
"$VENV/bin/python" scripts/llama_stack_data.py export .
echo "updated configs/ and providers.json from $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("llama-stack"))')" >&2
