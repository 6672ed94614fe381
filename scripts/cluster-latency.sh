#!/usr/bin/env bash
# `make cluster-latency`: what the policy adds to a small UPDATE through a real kube-apiserver
# (policy-host latency), against the null module's webhook in the same backend and against no
# webhook. The backend is policy-server when POLICY_SERVER is given, else policy-host serve.
#
# usage: scripts/cluster-latency.sh OUTPUT
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
export CLUSTER_DIR="${CLUSTER_DIR:-$root/target/cluster-latency}"
export MODULE_FOR="single-owner-null=$root/target/wasm32-wasip1/release/null_module.wasm"
host="${POLICY_HOST:-$root/target/host/policy-host}"
trap '"$root/scripts/cluster.sh" down' EXIT
"$root/scripts/cluster.sh" up "$root/deploy/olm-v1.yaml" "$root/e2e-tests/cluster/null-policy.yaml"
# shellcheck disable=SC1091
source "$CLUSTER_DIR/env"
backend="policy-host serve"
[ -z "${POLICY_SERVER:-}" ] || backend="policy-server ($("$POLICY_SERVER" --version 2>/dev/null | head -1))"
"$host" latency --apiserver "${APISERVER_URLS%%,*}" --ca-file "$APISERVER_CA" \
  --backend "$backend" ${LATENCY_FLAGS:-} | tee "$out"
