#!/usr/bin/env bash
# Writes the CycloneDX SBOM of the operator binary the image ships, one per architecture
# (cargo-cyclonedx: the crates resolved for that target, without build-only ones), and checks
# each: the right component, the crates the binary is known to link, none of the test-only
# crates. It over-reports a little: crates that only a dev-dependency's features switch on (e.g.
# rcgen's x509-parser, which tests use) are listed though the release build does not link them. Prints the directory holding llama-stack-operator-<arch>.cdx.json.
#
# Usage: scripts/build-sbom.sh [amd64|arm64 ...]   (default: amd64 arm64)
# Env: LLSO_CACHE_DIR (default ~/.cache/llama-stack-operator). Installs cargo-cyclonedx if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cargo-env.sh   # the same build whoever starts it
CACHE_ROOT="${LLSO_CACHE_DIR:-$HOME/.cache/llama-stack-operator}"
log() { echo "[sbom] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
arches=("$@"); ((${#arches[@]})) || arches=(amd64 arm64)
out="$CACHE_ROOT/sbom"
# cargo cyclonedx writes next to Cargo.toml, so two runs at once would take each other's file:
# one at a time (scripts/lib/cache-lock.sh).
source scripts/lib/cache-lock.sh
lock_cache_entry "$out" sbom
# A debug build (`--debug`): the tool runs for a second, and its optimised LTO build cost about
# 7 minutes of a cold run on two cores (2026-11-27).
command -v cargo-cyclonedx >/dev/null || cargo install --debug --locked cargo-cyclonedx@0.5.9 >&2
mkdir -p "$out"
for arch in "${arches[@]}"; do
  case "$arch" in
    amd64) target=x86_64-unknown-linux-musl ;;
    arm64) target=aarch64-unknown-linux-musl ;;
    *) die "no target for $arch" ;;
  esac
  # Written next to Cargo.toml; moved out at once so the clone stays clean.
  SOURCE_DATE_EPOCH=0 cargo cyclonedx --format json --describe binaries --target "$target" \
    --no-build-deps --spec-version 1.5 -q >&2
  produced=llama-stack-operator_bin.cdx.json
  [[ -f "$produced" ]] || die "cargo cyclonedx wrote no SBOM for $arch"
  mv "$produced" "$out/llama-stack-operator-$arch.cdx.json"
  python3 - "$out/llama-stack-operator-$arch.cdx.json" <<'PY' || die "the $arch SBOM does not describe the binary"
import json, sys
bom = json.load(open(sys.argv[1]))
listed = {f"{c['name']}@{c['version']}" for c in bom["components"]}
listed.add(f"{bom['metadata']['component']['name']}@{bom['metadata']['component']['version']}")
assert bom["bomFormat"] == "CycloneDX" and bom["specVersion"] == "1.5", bom["specVersion"]
assert bom["metadata"]["component"]["name"] == "llama-stack-operator", bom["metadata"]["component"]
for crate in ("llama-stack-resolver", "kube-client", "rustls", "ring", "serde-saphyr", "axum", "reqwest"):
    assert any(l.startswith(crate + "@") for l in listed), f"{crate} is linked but not listed"
test_only = {"tempfile", "proptest", "libtest-mimic"} & {c["name"] for c in bom["components"]}
assert not test_only, f"test-only crates listed: {test_only}"
print(f"{sys.argv[1]}: {len(bom['components'])} components", file=sys.stderr)
PY
done
echo "$out"
