#!/usr/bin/env bash
# Installs what the integration suites need besides Rust and Go: Debian's docker-registry,
# skopeo and htpasswd (registry tests), Python's `cryptography` (the test token server), and for
# the real node: containerd (with ctr), runc, the CNI plugins, iptables, iproute2 and conntrack,
# and mmdebstrap, umoci and buildah to build its images; PostgreSQL (named storage backends run
# against a real one); openssl (the OGX operator's e2e suite makes its test CA with it).
# Idempotent; does nothing when everything is present.
set -euo pipefail
source "$(dirname "$0")/lib/apt-install.sh"

need_apt=()
command -v docker-registry >/dev/null || need_apt+=(docker-registry)
command -v skopeo >/dev/null || need_apt+=(skopeo)
command -v htpasswd >/dev/null || need_apt+=(apache2-utils)
command -v containerd >/dev/null || need_apt+=(containerd)
command -v runc >/dev/null || need_apt+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need_apt+=(containernetworking-plugins)
command -v iptables >/dev/null || need_apt+=(iptables)
command -v ip >/dev/null || need_apt+=(iproute2)
command -v conntrack >/dev/null || need_apt+=(conntrack)
command -v mmdebstrap >/dev/null || need_apt+=(mmdebstrap)
command -v umoci >/dev/null || need_apt+=(umoci)
command -v buildah >/dev/null || need_apt+=(buildah)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need_apt+=(postgresql)
command -v openssl >/dev/null || need_apt+=(openssl)
if ((${#need_apt[@]})); then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  # The docker-registry package starts a system service on :5000 where an init system runs;
  # the tests start their own instances, so keep the package's service from starting.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt_install "${need_apt[@]}"
fi
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install --quiet cryptography
