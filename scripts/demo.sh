#!/usr/bin/env bash
# The operator's main job on the embedded defaults: a local cluster (kube-apiserver, etcd,
# kube-controller-manager, kube-scheduler, kwok), the operator installed from deploy/ and running
# as its own ServiceAccount, the v1alpha2 samples applied, and what it made. Pass --keep to leave
# it running.
set -euo pipefail
cd "$(dirname "$0")/.."
LLSO_CONTROL_PLANE_BIN="$(scripts/build-control-plane.sh)"
export LLSO_CONTROL_PLANE_BIN
cargo build --quiet --bin llama-stack-operator --example demo
exec cargo run --quiet --example demo -- "$@"
