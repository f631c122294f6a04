# Sourced by the build scripts: one lock per cache entry, so that two callers building the same
# thing at once (two tests, two suites, a test and the demo) build it once. The second caller
# waits for the first, then finds its finished result.
#
#   lock_cache_entry <entry> <label>
#       Creates <entry>'s parent, takes an exclusive flock on <entry>.lock and holds it until the
#       calling shell exits (or the subshell, when called inside one). Callers check for a
#       finished entry again once they hold the lock, build into a staging directory and publish
#       with one rename (or, for a tree that cannot move, such as a venv, by writing its
#       completion marker last).
#
#   staging_dir <entry>
#       A new, empty directory next to <entry> (same file system, so a rename publishes it),
#       after removing any a crashed build left. Call it only while holding the entry's lock.
#
#   publish_dir <staging> <entry>
#       Replaces <entry> (an unfinished leftover, if any) with <staging> by rename.

lock_cache_entry() {
  local entry=$1 label=$2 fd
  mkdir -p "$(dirname "$entry")"
  exec {fd}>>"$entry.lock"
  if ! flock -n "$fd"; then
    echo "[$label] waiting for another build of $entry to finish" >&2
    flock "$fd"
  fi
}

staging_dir() {
  local entry=$1
  mkdir -p "$(dirname "$entry")"
  rm -rf "$entry".staging.*
  mktemp -d "$entry.staging.XXXXXX"
}

publish_dir() {
  local staging=$1 entry=$2
  rm -rf "$entry"
  mv -T "$staging" "$entry"
}
