#!/usr/bin/env bash
# Builds the static (musl) release binary the Dockerfile's image ships, for this machine's
# architecture or the one given, and checks it: statically linked (no ELF interpreter), built
# for that architecture, and it runs (an arm64 binary on an amd64 host through qemu-user).
# Prints the binary's path.
#
# Usage: scripts/build-static.sh [amd64|arm64]
# Env: LLSO_STATIC_PROFILE_<ARCH> (e.g. LLSO_STATIC_PROFILE_ARM64=release) builds that
# architecture with another cargo profile than the shipped one (dist: whole-program LTO, which
# takes about 10 minutes per architecture here). CI's cross-build check of arm64 uses it, and
# scripts/test.sh builds the real node's image with `test-image` (no LTO).
# arm64 on an amd64 host cross-compiles with Debian's gcc-aarch64-linux-gnu (as the linker and
# for ring's C parts) and runs the result with qemu-aarch64-static; both are installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cargo-env.sh   # the same build whoever starts it
log() { echo "[static] $*" >&2; }
host_arch() { case "$(uname -m)" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac; }
arch="${1:-$(host_arch)}"
case "$arch" in
  amd64) TARGET=x86_64-unknown-linux-musl machine="X86-64" ;;
  arm64) TARGET=aarch64-unknown-linux-musl machine="AArch64" ;;
  *) log "ERROR: no build for architecture $arch (amd64 or arm64)"; exit 1 ;;
esac

source scripts/lib/apt-install.sh  # one apt-get at a time (.ci/run builds beside the tests)
# Two builds at once (.ci/run's image and the tests' own) may both add the target: rustup is
# not safe to run twice at once on one toolchain, so the adds take turns.
if ! rustup target list --installed | grep -qx "$TARGET"; then
  (flock 9 && { rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET" >&2; }) \
    9>>"${TMPDIR:-/tmp}/llama-stack-operator-rustup.lock"
fi
run=()
if [[ "$arch" == "$(host_arch)" ]]; then
  command -v musl-gcc >/dev/null || apt_install musl-tools   # ring's C and assembly parts
elif [[ "$arch" == arm64 ]]; then
  command -v aarch64-linux-gnu-gcc >/dev/null || apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  command -v qemu-aarch64-static >/dev/null || apt_install qemu-user-static
  # Rust's musl targets bring their own C library and start files; gcc only drives the link.
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc
  export CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_musl=aarch64-linux-gnu-ar
  run=(qemu-aarch64-static)
else
  log "ERROR: cross-building $arch on $(host_arch) is not set up here"; exit 1
fi
profile_override="LLSO_STATIC_PROFILE_${arch^^}"
PROFILE="${!profile_override:-dist}"
case "$PROFILE" in
  dist | release) static_dir=static ;;
  # Its own directory: the tests' image builds while .ci/run's dist build may hold `static`.
  test-image) static_dir=static-test ;;
  *) log "ERROR: $profile_override=$PROFILE: the profile must be dist, release or test-image"; exit 1 ;;
esac
# A target directory of its own: cargo locks a target directory for a whole build, so this one
# (whole-program LTO, mostly one core for minutes) can run beside the suites' debug build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/$static_dir"
cargo build --profile "$PROFILE" --locked --target "$TARGET" --bin llama-stack-operator >&2
BIN="$CARGO_TARGET_DIR/$TARGET/$PROFILE/llama-stack-operator"
if readelf -l "$BIN" | grep -q 'Requesting program interpreter'; then
  log "ERROR: $BIN is dynamically linked"; exit 1
fi
readelf -h "$BIN" | grep -q "Machine:.*$machine" || { log "ERROR: $BIN is not a $machine binary"; exit 1; }
"${run[@]}" "$BIN" --version >&2
log "built $BIN ($(du -h "$BIN" | cut -f1), static, $arch, profile $PROFILE)"
echo "$BIN"
