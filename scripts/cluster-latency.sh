#!/usr/bin/env bash
# `make cluster-latency`: what the policy adds to a write through a real kube-apiserver
# (policy-host latency), against the null module's webhook in the same backend and against no
# webhook, for deploy/olm-v1.yaml, deploy/all-tools.yaml and deploy/identity/olm-v1-operator.yaml,
# each on a cluster of its own, with the writes that make their rules look something up (the
# objects they look up: e2e-tests/cluster/lookup-*.yaml): with policy-host serve as the backend,
# and again with policy-server when POLICY_SERVER is given.
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

# measure BACKEND PRESET MANIFEST: a cluster with the backend the environment names and the
# preset, the table on stdout.
measure() {
  "$root/scripts/cluster.sh" up --apply "$root/e2e-tests/cluster/lookup-crds.yaml" "$root/$3" \
    "$root/e2e-tests/cluster/null-policy.yaml" >&2
  # shellcheck disable=SC1091
  source "$CLUSTER_DIR/env"
  kubectl apply -f "$root/e2e-tests/cluster/lookup-objects.yaml" >&2
  local installer
  installer="$(kubectl create token latency-installer -n default --duration 2h)"
  "$host" latency --apiserver "${APISERVER_URLS%%,*}" --ca-file "$APISERVER_CA" \
    --backend "$1" --preset "$2" --installer-token "$installer" ${LATENCY_FLAGS:-}
  "$root/scripts/cluster.sh" down >&2
}

# all BACKEND: every preset with one backend.
all() {
  measure "$1" olm-v1 deploy/olm-v1.yaml
  echo
  measure "$1" all-tools deploy/all-tools.yaml
  echo
  measure "$1" olm-v1-operator deploy/identity/olm-v1-operator.yaml
}

{
  POLICY_SERVER="" all "policy-host serve"
  if [ -n "$policy_server" ]; then
    echo
    POLICY_SERVER="$policy_server" all "policy-server $("$policy_server" --version 2>/dev/null | head -1 | awk '{print $NF}')"
  fi
} | tee "$out"
