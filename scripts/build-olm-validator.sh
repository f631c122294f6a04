#!/usr/bin/env bash
# Builds olm-validate (tests/olm/validate), a small command over operator-framework's bundle
# validation library (github.com/operator-framework/api), with build-go-tool.sh. Prints its path.
#
# Usage: scripts/build-olm-validator.sh
# Env:   OLM_API_VERSION (default below); the cache as in build-go-tool.sh
set -euo pipefail
# v0.27.0 is the newest release the module proxy here serves; it lists no versions, so the
# version is named exactly.
exec "$(dirname "${BASH_SOURCE[0]}")/build-go-tool.sh" olm-validate tests/olm/validate/main.go \
  github.com/operator-framework/api "${OLM_API_VERSION:-v0.27.0}" api
