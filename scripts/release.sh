#!/usr/bin/env bash
# Makes a release: builds the operator's image for each platform (offline, scripts/build-operator-image.sh),
# pushes the index to REGISTRY/llama-stack-operator:VERSION, signs its digest with cosign (a key,
# no transparency log: air-gapped mirrors verify offline), attaches each platform's CycloneDX SBOM
# as a signed attestation, and writes the install manifests and the Helm chart pinned to that
# digest. Prints the pinned image reference.
#
# Usage: scripts/release.sh REGISTRY VERSION [OUT_DIR]   (OUT_DIR default: dist/VERSION)
#   e.g. scripts/release.sh ghcr.io/llamastack 0.1.0
# Env:
#   COSIGN_PRIVATE_KEY   the cosign private key, PEM (cosign generate-key-pair); required
#   COSIGN_PASSWORD      its password
#   LLSO_RELEASE_ARCHES  platforms to build (default "amd64 arm64")
#   REGISTRY_CA_FILE     the registry's CA, when a private one signs its certificate
#   DOCKER_CONFIG        the directory of the config.json with the registry's credentials
#                        (used by skopeo and cosign alike)
# Writes OUT_DIR/release/*.yaml (release/ with the image pinned), OUT_DIR/llama-stack-operator-VERSION.tgz
# (the chart with image.digest set) and OUT_DIR/image (the pinned reference).
# Check a release with:
#   cosign verify --key cosign.pub --insecure-ignore-tlog=true REGISTRY/llama-stack-operator@DIGEST
#   cosign verify-attestation --key cosign.pub --insecure-ignore-tlog=true --type cyclonedx REGISTRY/llama-stack-operator@DIGEST
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "[release] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $# -ge 2 && $# -le 3 ]] || die "usage: $0 REGISTRY VERSION [OUT_DIR]"
REGISTRY="${1%/}" VERSION="${2#v}" OUT="${3:-dist/${2#v}}"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "VERSION must be semantic (1.2.3 or 1.2.3-rc.1), not $2"
[[ -n "${COSIGN_PRIVATE_KEY:-}" ]] || die "COSIGN_PRIVATE_KEY must hold the cosign private key (PEM)"
command -v skopeo >/dev/null || die "skopeo is required (scripts/install-test-deps.sh installs it)"
read -ra arches <<<"${LLSO_RELEASE_ARCHES:-amd64 arm64}"

work=$(mktemp -d "${TMPDIR:-/tmp}/llso-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
skopeo_tls=()
if [[ -n "${REGISTRY_CA_FILE:-}" ]]; then
  mkdir -p "$work/certs" && cp "$REGISTRY_CA_FILE" "$work/certs/ca.crt"
  skopeo_tls=(--dest-cert-dir "$work/certs")
  # cosign (Go) trusts the roots this file names.
  export SSL_CERT_FILE="$REGISTRY_CA_FILE"
fi
skopeo_auth=()
[[ -n "${DOCKER_CONFIG:-}" ]] && skopeo_auth=(--dest-authfile "$DOCKER_CONFIG/config.json")

layout=$(scripts/build-operator-image.sh "${arches[@]}")
sboms=$(scripts/build-sbom.sh "${arches[@]}")
cosign=$(scripts/build-cosign.sh)
helm=$(scripts/build-helm.sh)

repo="$REGISTRY/llama-stack-operator"
log "pushing ${arches[*]} to $repo:$VERSION"
skopeo copy --quiet --all "${skopeo_tls[@]}" "${skopeo_auth[@]}" --digestfile "$work/digest" \
  "oci:$layout:latest" "docker://$repo:$VERSION" >&2
digest=$(cat "$work/digest")
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || die "skopeo reported no digest for the pushed index"
ref="$repo@$digest"

log "signing $ref"
# Simple signing, in the image's repository, with no transparency log: what cosign 2 and 3 both
# verify offline (cosign 3 writes a bundle by default, which cosign 2 cannot read).
offline_legacy=(--new-bundle-format=false --use-signing-config=false --tlog-upload=false)
"$cosign" sign --yes --key env://COSIGN_PRIVATE_KEY "${offline_legacy[@]}" "$ref" >&2
for arch in "${arches[@]}"; do
  log "attaching the $arch SBOM as an attestation"
  "$cosign" attest --yes --key env://COSIGN_PRIVATE_KEY "${offline_legacy[@]}" --type cyclonedx \
    --predicate "$sboms/llama-stack-operator-$arch.cdx.json" "$ref" >&2
done

mkdir -p "$OUT/release"
scripts/build-release.sh "$work/release" >&2
shipped="ghcr.io/llamastack/llama-stack-operator:$(sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/llama-stack-operator/Chart.yaml)"
for file in "$work"/release/*.yaml; do
  name=$(basename "$file")
  count=$(grep -c "image: $shipped\$" "$file" || true)
  [[ "$count" -eq 1 ]] || die "$name names the image $shipped $count times, not once"
  sed "s#image: $shipped\$#image: $ref#" "$file" >"$OUT/release/$name"
done

cp -r charts/llama-stack-operator "$work/chart"
python3 - "$work/chart/values.yaml" "$repo" "$digest" <<'PY'
import re, sys
path, repo, digest = sys.argv[1:]
text = open(path).read()
for key, value in (("repository", repo), ("digest", digest)):
    text, n = re.subn(rf"^  {key}: .*$", f"  {key}: {value}", text, count=1, flags=re.M)
    assert n == 1, f"no image.{key} in values.yaml"
open(path, "w").write(text)
PY
"$helm" package "$work/chart" --version "$VERSION" --app-version "$VERSION" -d "$OUT" >&2
echo "$ref" >"$OUT/image"
log "released $ref into $OUT"
echo "$ref"
