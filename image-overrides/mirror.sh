#!/usr/bin/env bash
# Mirrors every image of the operator's distribution catalog into a registry (all platforms,
# digests preserved) and prints the operator ConfigMap that pins each distribution name to its
# mirrored digest, with the cosign signatures of each image. See image-overrides/README.md.
#
# Usage: image-overrides/mirror.sh --to REGISTRY/PREFIX [options] > llama-stack-operator-config.yaml
#   --to REGISTRY/PREFIX     where the images go: REGISTRY/PREFIX/<image name>:<tag>
#   --from FROM=TO           read the catalog's images from elsewhere (e.g. a transfer registry):
#                            an image starting with FROM is read from TO instead (repeatable:
#                            the catalog names images on docker.io and on quay.io)
#   --catalog FILE           the catalog (default: the repository's distributions.json)
#   --namespace NS           the operator's namespace (default: llama-stack-operator-system)
#   --src-creds U:P, --dest-creds U:P, --src-cert-dir DIR, --dest-cert-dir DIR,
#   --src-tls-verify=false, --dest-tls-verify=false, --src-authfile F, --dest-authfile F
#                            passed to `skopeo copy` as they are
# Needs skopeo and python3.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
to="" catalog="$here/../distributions.json" namespace="llama-stack-operator-system"
skopeo_args=() froms=()
die() { echo "mirror.sh: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --to) to="${2:?--to needs a value}"; shift 2 ;;
    --from) froms+=("${2:?--from needs FROM=TO}"); shift 2 ;;
    --catalog) catalog="${2:?--catalog needs a file}"; shift 2 ;;
    --namespace) namespace="${2:?--namespace needs a value}"; shift 2 ;;
    --src-creds|--dest-creds|--src-cert-dir|--dest-cert-dir|--src-authfile|--dest-authfile)
      skopeo_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --src-tls-verify=*|--dest-tls-verify=*) skopeo_args+=("$1"); shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ -n "$to" ]] || die "--to REGISTRY/PREFIX is required"
# skopeo inspect takes the source's options without their --src- prefix.
inspect_args=()
for ((i = 0; i < ${#skopeo_args[@]}; i++)); do
  case "${skopeo_args[i]}" in
    --src-creds|--src-cert-dir|--src-authfile)
      inspect_args+=("--${skopeo_args[i]#--src-}" "${skopeo_args[i+1]}"); ((i++)) || true ;;
    --src-tls-verify=*) inspect_args+=("--tls-verify=${skopeo_args[i]#*=}") ;;
    --dest-creds|--dest-cert-dir|--dest-authfile) ((i++)) || true ;;
  esac
done
for from in "${froms[@]}"; do [[ "$from" == *=* ]] || die "--from must be FROM=TO, got $from"; done
command -v skopeo >/dev/null || die "skopeo is required"
[[ -f "$catalog" ]] || die "catalog $catalog not found"

# name<TAB>image, one per line, from the catalog (a JSON map of name to image).
entries=$(python3 -c 'import json,sys
for name, image in sorted(json.load(open(sys.argv[1])).items()):
    print(f"{name}\t{image}")' "$catalog") || die "$catalog is not a JSON map of name to image"

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
overrides=""
while IFS=$'\t' read -r name image; do
  source="$image"
  for from in "${froms[@]}"; do
    if [[ "$image" == "${from%%=*}"* ]]; then
      source="${from#*=}${image#"${from%%=*}"}"
      break
    fi
  done
  last="${image##*/}"                       # distribution-starter:0.7.3
  repository="$to/${last%%[:@]*}"
  tag="${last#"${last%%[:@]*}"}"; tag="${tag%%@*}"   # :0.7.3, or empty
  target="$repository${tag:-:mirrored}"
  echo "mirror.sh: $name: $source -> $target" >&2
  skopeo copy --all --preserve-digests --digestfile "$work/digest" "${skopeo_args[@]}" \
    "docker://$source" "docker://$target" >&2 || die "copying $source to $target failed"
  digest=$(cat "$work/digest")
  # cosign's signatures of that digest go along, so that the operator's image-signatures policy
  # can verify the mirror: the simple-signing tag sha256-<hex>.sig, and the sigstore bundles
  # cosign 3 attaches as referrers, read here through the referrers fallback tag sha256-<hex>.
  # (A source registry that serves the referrers API keeps no such tag: copy those bundles with
  # `cosign copy` or `oras cp -r` instead; docs/signatures.md.)
  for signature_tag in "${digest/:/-}.sig" "${digest/:/-}"; do
    source_repository="${source%%@*}"      # no digest; then no tag (a port stays)
    if [[ "${source_repository##*/}" == *:* ]]; then source_repository="${source_repository%:*}"; fi
    if skopeo inspect --raw "${inspect_args[@]}" "docker://$source_repository:$signature_tag" >/dev/null 2>&1; then
      echo "mirror.sh: $name: signatures $source_repository:$signature_tag" >&2
      # The referrers index is read by its tag, never by digest: skopeo may re-encode it.
      preserve=(--preserve-digests); [[ "$signature_tag" == *.sig ]] || preserve=()
      skopeo copy --all "${preserve[@]}" "${skopeo_args[@]}" \
        "docker://$source_repository:$signature_tag" "docker://$repository:$signature_tag" >&2 \
        || die "copying the signatures $source_repository:$signature_tag failed"
    fi
  done
  overrides+="    $name: $repository@$digest"$'\n'
done <<<"$entries"

cat <<YAML
# Generated by image-overrides/mirror.sh: every catalog distribution pinned to its mirrored digest.
apiVersion: v1
kind: ConfigMap
metadata:
  name: llama-stack-operator-config
  namespace: $namespace
data:
  image-overrides: |
${overrides%$'\n'}
YAML
