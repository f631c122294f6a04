# Sourced by the scripts that install Debian packages: one apt-get at a time on this machine.
# .ci/run builds the operator's image beside scripts/test.sh, and both may need packages on a
# fresh machine; dpkg refuses a second apt-get while one runs ("Could not get lock"), so two
# installs at once failed one of the builds. Callers check what they need before calling.
#
#   apt_install <package...>
#       Installs the packages (no recommends), after `apt-get update`, holding an exclusive flock
#       on the machine-wide lock file below for the whole update and install; apt-get also waits
#       up to ten minutes for dpkg's own lock if something outside this project holds it.

apt_install() {
  local sudo="" fd lock="${TMPDIR:-/tmp}/llama-stack-operator-apt.lock"
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  exec {fd}>>"$lock"
  if ! flock -n "$fd"; then
    echo "[apt] waiting for another install on this machine to finish" >&2
    flock "$fd"
  fi
  local wait=(-o DPkg::Lock::Timeout=600)
  $sudo apt-get "${wait[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${wait[@]}" install -y -qq --no-install-recommends "$@" >/dev/null
  flock -u "$fd"
  exec {fd}>&-
}
