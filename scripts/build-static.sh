#!/usr/bin/env bash
# Builds the static (musl) release binary the Dockerfile copies into its distroless image, and
# checks it: statically linked (no ELF interpreter), and it runs. No container engine is needed.
# Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=x86_64-unknown-linux-musl

log() { echo "[static] $*" >&2; }
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET" >&2
if ! command -v musl-gcc >/dev/null; then   # ring's C and assembly parts
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends musl-tools >/dev/null
fi
cargo build --release --locked --target "$TARGET" --bin llama-stack-operator >&2
BIN="${CARGO_TARGET_DIR:-target}/$TARGET/release/llama-stack-operator"
if readelf -l "$BIN" | grep -q 'Requesting program interpreter'; then
  log "ERROR: $BIN is dynamically linked"; exit 1
fi
"$BIN" --version >&2
log "built $BIN ($(du -h "$BIN" | cut -f1), static)"
echo "$BIN"
