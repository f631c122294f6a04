# Sourced by every script that runs cargo. A script started by a test inherits what cargo sets
# for that test (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...). Dependencies' build scripts that read one
# of these ask cargo to rerun when it changes (ring's reads CARGO_MANIFEST_DIR), so cargo saw a
# change and rebuilt ring and everything above it: a 10-minute LTO rebuild of a binary that a
# build started from a shell had just made. Without them the build is the same whoever starts it.
while read -r name; do
  case "$name" in
    CARGO_MANIFEST_DIR | CARGO_MANIFEST_PATH | CARGO_PKG_* | CARGO_CRATE_NAME | CARGO_BIN_NAME | \
      CARGO_BIN_EXE_* | CARGO_PRIMARY_PACKAGE | CARGO_TARGET_TMPDIR | CARGO_RUSTC_CURRENT_DIR)
      unset "$name" ;;
  esac
done < <(compgen -e)
