#!/usr/bin/env bash
# `make cluster-latency`: what the policy adds to a small UPDATE through a real kube-apiserver
# (policy-host latency), against the null module's webhook in the same backend and against no
# webhook: with policy-host serve as the backend, and again with policy-server when
# POLICY_SERVER is given.
#
# usage: scripts/cluster-latency.sh OUTPUT
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
export CLUSTER_DIR="${CLUSTER_DIR:-$root/target/cluster-latency}"
host="${POLICY_HOST:-$root/target/host/policy-host}"
# policy-server runs only annotated modules (it needs the protocol version in the metadata).
"$host" annotate -m "$root/metadata.yml" -o "$root/target/null-annotated.wasm" \
  "$root/target/wasm32-wasip1/release/null_module.wasm"
export MODULE_FOR="single-owner-null=file://$root/target/null-annotated.wasm"
policy_server="${POLICY_SERVER:-}"
trap '"$root/scripts/cluster.sh" down' EXIT

# measure NAME: a cluster with the backend the environment names, the table on stdout.
measure() {
  "$root/scripts/cluster.sh" up "$root/deploy/olm-v1.yaml" "$root/e2e-tests/cluster/null-policy.yaml" >&2
  # shellcheck disable=SC1091
  source "$CLUSTER_DIR/env"
  "$host" latency --apiserver "${APISERVER_URLS%%,*}" --ca-file "$APISERVER_CA" \
    --backend "$1" ${LATENCY_FLAGS:-}
  "$root/scripts/cluster.sh" down >&2
}

{
  POLICY_SERVER="" measure "policy-host serve"
  if [ -n "$policy_server" ]; then
    echo
    POLICY_SERVER="$policy_server" measure "policy-server $("$policy_server" --version 2>/dev/null | head -1 | awk '{print $NF}')"
  fi
} | tee "$out"
