#!/usr/bin/env bash
# Builds kstatus-compute (tests/kstatus), a small command over kstatus (sigs.k8s.io/cli-utils, the
# status library of Flux, Argo CD's health checks and kpt), with build-go-tool.sh. Prints its path.
#
# Usage: scripts/build-kstatus.sh
# Env:   CLI_UTILS_VERSION (default below: the newest release the module proxy here serves); the
#        cache as in build-go-tool.sh
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/build-go-tool.sh" kstatus-compute tests/kstatus/main.go \
  sigs.k8s.io/cli-utils "${CLI_UTILS_VERSION:-v0.37.2}" cli-utils
