#!/usr/bin/env bash
# Builds cosign (sigstore's own command) from Go modules with go-install.sh, cached by version;
# prints its path. One build serves every use: the release signs with it, the release test checks
# the signature and the SBOM attestation with `cosign verify` and `cosign verify-attestation`, and
# the signature tests write both forms with it (a sigstore bundle, cosign 3's default; simple
# signing with `--new-bundle-format=false`, cosign 2's default).
#
# Usage: scripts/build-cosign.sh [VERSION]   (default below; a v2.x version builds
#        github.com/sigstore/cosign/v2)
# Env:   the cache as in go-install.sh
set -euo pipefail
VERSION="${1:-v3.1.3}"
case "$VERSION" in
  v2.*) MODULE=github.com/sigstore/cosign/v2 ;;
  v3.*) MODULE=github.com/sigstore/cosign/v3 ;;
  *) echo "[cosign] ERROR: version $VERSION is neither v2.x nor v3.x" >&2; exit 2 ;;
esac
exec "$(dirname "${BASH_SOURCE[0]}")/go-install.sh" cosign "$MODULE/cmd/cosign" "$VERSION" \
  "-X sigs.k8s.io/release-utils/version.gitVersion=$VERSION"
