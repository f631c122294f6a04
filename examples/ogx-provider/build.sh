#!/usr/bin/env bash
# Builds the example OGX provider's image layout: <out>/lls-provider/lls-provider-spec.yaml and
# <out>/lls-provider/packages/*.whl. Then `podman build -f Containerfile .` (or docker) makes the
# image. Usage: ./build.sh [OUT_DIR] [PYTHON]
set -euo pipefail
cd "$(dirname "$0")"
OUT="${1:-out}"
PYTHON="${2:-python3}"
rm -rf "$OUT/lls-provider"
mkdir -p "$OUT/lls-provider/packages"
"$PYTHON" -m pip wheel --quiet --no-deps -w "$OUT/lls-provider/packages" ./acme-echo
cp lls-provider-spec.yaml "$OUT/lls-provider/"
ls "$OUT/lls-provider/packages"
