#!/usr/bin/env bash
# Builds cosign (sigstore's own command) from Go modules with go-install.sh, cached by version;
# prints its path. The release test signs with it and checks the signature and the SBOM
# attestation with `cosign verify` and `cosign verify-attestation`.
#
# Usage: scripts/build-cosign.sh [VERSION]   (default below: the newest v2 the module proxy here
#        serves; a v3.x version builds github.com/sigstore/cosign/v3)
# Env:   the cache as in go-install.sh
set -euo pipefail
VERSION="${1:-v2.6.5}"
case "$VERSION" in
  v2.*) MODULE=github.com/sigstore/cosign/v2 ;;
  v3.*) MODULE=github.com/sigstore/cosign/v3 ;;
  *) echo "[cosign] ERROR: version $VERSION is neither v2.x nor v3.x" >&2; exit 2 ;;
esac
exec "$(dirname "${BASH_SOURCE[0]}")/go-install.sh" cosign "$MODULE/cmd/cosign" "$VERSION" \
  "-X sigs.k8s.io/release-utils/version.gitVersion=$VERSION"
