#!/usr/bin/env bash
# Writes every generated copy in the repository again, in the order they derive from one another:
# the CRDs and the API reference from the code (crdgen), the chart's copies of the CRDs and the
# monitoring files, then release/ and bundle/ from deploy/ (which takes the CRDs from crds/).
# Every test that finds a copy out of date names this script. Usage: scripts/regenerate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cargo-env.sh   # the same build whoever starts it

# Each file is written whole or not at all: a failing command leaves the old copy.
write() {
  local target="$1"
  shift
  local tmp
  tmp="$(mktemp "$target.XXXXXX")"
  if "$@" >"$tmp"; then mv "$tmp" "$target"; else rm -f "$tmp"; return 1; fi
}

crdgen() { cargo run --quiet --bin llama-stack-operator -- crdgen "$@"; }
write crds/llamastackdistributions.llamastack.io.yaml crdgen
write crds/ogxservers.ogx.io.yaml crdgen --ogx-server
write docs/api-reference.md crdgen --reference

chart=charts/llama-stack-operator/files
for copy in \
  "crds/llamastackdistributions.llamastack.io.yaml" \
  "crds/ogxservers.ogx.io.yaml" \
  "deploy/components/monitoring/llama-stack-operator-dashboard.json" \
  "deploy/components/monitoring/prometheus_rule.yaml"; do
  write "$chart/$(basename "$copy")" cat "$copy"
done

scripts/build-release.sh
scripts/build-bundle.sh
echo "regenerated: crds/, docs/api-reference.md, $chart/, release/, bundle/" >&2
