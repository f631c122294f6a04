# Times the steps of a preparation: when each started and ended (seconds after `steps_init`), and
# the CPU seconds it and everything it ran used (user + system, from bash's `times`), so each
# choice about what to build and when is a number. Sourced by scripts/test.sh.
#
#   steps_init DIR          records into DIR, counting from now
#   step NAME CMD...        runs CMD in the foreground as step NAME; returns its status
#   step_table              prints one line per step, in the order they started

steps_init() {
  STEPS_DIR=$1
  STEPS_ZERO=$(date +%s)
  mkdir -p "$STEPS_DIR"
}

# In a subshell, so that `times` counts this step's processes alone.
step() {
  local name=$1; shift
  (
    started=$(($(date +%s) - STEPS_ZERO))
    status=0
    "$@" || status=$?
    ended=$(($(date +%s) - STEPS_ZERO))
    # The second line of `times`: the user and system time of the step's finished children.
    # Written to a file: in a pipe or `$(...)` it would run in a fork, which has no children.
    times >"$STEPS_DIR/$name.times"
    cpu=$(sed -n 2p "$STEPS_DIR/$name.times")
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$started" "$ended" "$cpu" "$status" >"$STEPS_DIR/$name.step"
    exit "$status"
  )
}

step_table() {
  python3 - "$STEPS_DIR" <<'PY'
import pathlib, re, sys
def seconds(text):
    m = re.fullmatch(r"(\d+)m([\d.]+)s", text)
    return int(m[1]) * 60 + float(m[2]) if m else 0.0
rows = []
for f in pathlib.Path(sys.argv[1]).glob("*.step"):
    name, start, end, cpu, status = f.read_text().rstrip("\n").split("\t")
    rows.append((int(start), int(end), name, sum(seconds(t) for t in cpu.split()), status))
print(f"{'preparation step':<34} {'start':>6} {'end':>6} {'wall':>6} {'CPU':>7}", file=sys.stderr)
for start, end, name, cpu, status in sorted(rows):
    failed = "" if status == "0" else f"  FAILED ({status})"
    print(f"{name:<34} {start:>5}s {end:>5}s {end - start:>5}s {cpu:>6.0f}s{failed}", file=sys.stderr)
PY
}
