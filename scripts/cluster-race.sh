#!/usr/bin/env bash
# `make cluster-race`: the race through real kube-apiservers (policy-host race --apiserver).
# Brings up two API servers on one etcd with two webhook backends (replicas sharing one
# address), the race policy (e2e-tests/cluster/race-policy.yaml) and its CRD; runs every
# scenario, write style and mode through the first API server, then admission mode with the
# writers split between both; takes the cluster down again.
#
# usage: scripts/cluster-race.sh OUTPUT   (CLUSTER_RACE_FLAGS: writers, objects, duration...;
#        REQUIRE_RACE=1: fail when a scenario's client checks find no race)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
export CLUSTER_DIR="${CLUSTER_DIR:-$root/target/cluster-race}"
host="${POLICY_HOST:-$root/target/host/policy-host}"
# shellcheck disable=SC2206
flags=(${CLUSTER_RACE_FLAGS:---writers 8 --objects 12 --writes 2000 --duration 20 --think-ms 5})
trap '"$root/scripts/cluster.sh" down' EXIT
"$root/scripts/cluster.sh" up --apiservers 2 --backends 2 --apply "$root/e2e-tests/cluster/race-crd.yaml" \
  --probe "$root/e2e-tests/cluster/race-probe.yaml" "$root/e2e-tests/cluster/race-policy.yaml"
# shellcheck disable=SC1091
source "$CLUSTER_DIR/env"
common=(--ca-file "$APISERVER_CA" --etcd-url "$ETCD_URL" --require "${flags[@]}")
# policy-host serve logs each admission call (policy-server's log is its own).
[ -n "${POLICY_SERVER:-}" ] || common+=(--webhook-log "$BACKEND_LOG")
# The full run also requires each scenario's client checks to lose the race somewhere.
race=()
[ -z "${REQUIRE_RACE:-}" ] || race=(--require-race)
{
  echo "One kube-apiserver:"
  echo
  "$host" race --apiserver "${APISERVER_URLS%%,*}" "${common[@]}" "${race[@]}"
  echo
  echo "Two kube-apiservers on the same etcd, the writers split between them, admission mode:"
  echo
  "$host" race --apiserver "$APISERVER_URLS" --mode admission "${common[@]}"
} | tee "$out"
