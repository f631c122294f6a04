#!/usr/bin/env bash
# The operator's main job on the embedded defaults: a local cluster (kube-apiserver, etcd,
# kube-controller-manager, kube-scheduler, kwok), the operator installed from deploy/ and running
# as its own ServiceAccount, the v1alpha2 samples applied, and what it made; then, where the
# machine can run containers (root), a second cluster with a real node serving a real llama-stack.
# Pass --keep to leave it running, --kwok-only to skip the real node.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cargo-env.sh   # the same build whoever starts it
# What the real node needs (containerd, runc, CNI plugins, image tools), as the test command
# installs it: a newcomer's first run shows the real server, not only kwok.
if [[ $(id -u) -eq 0 && " $* " != *" --kwok-only "* ]]; then
  scripts/install-test-deps.sh
fi
LLSO_CONTROL_PLANE_BIN="$(scripts/build-control-plane.sh)"
export LLSO_CONTROL_PLANE_BIN
cargo build --quiet --bin llama-stack-operator --example demo
exec cargo run --quiet --example demo -- "$@"
