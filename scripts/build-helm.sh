#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v3's own command) from Go modules with go-install.sh, cached by
# version; prints its path. The chart tests install, upgrade and uninstall
# charts/llama-stack-operator with it, and check it with `helm lint`.
#
# Usage: scripts/build-helm.sh
# Env:   HELM_VERSION (default below: the newest v3 release the module proxy here serves); the
#        cache as in go-install.sh
set -euo pipefail
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
exec "$(dirname "${BASH_SOURCE[0]}")/go-install.sh" helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" \
  "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
