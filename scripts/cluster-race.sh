#!/usr/bin/env bash
# `make cluster-race`: the race through real kube-apiservers. Brings up two API servers on one
# etcd (storing JSON, so that the checker reads every kind's history) with two webhook
# backends (replicas sharing one address), the race policies (e2e-tests/cluster/race-policy.yaml
# with its CRD, and race-helm-policy.yaml); runs every scenario, write style and mode of
# `policy-host race --apiserver` through the first API server, then admission mode with the
# writers split between both, then real Helm's race (scripts/helm-race.py) through the first;
# ends with one summary of all the runs, and takes the cluster down again.
#
# usage: scripts/cluster-race.sh OUTPUT   (CLUSTER_RACE_FLAGS: writers, objects, duration...;
#        HELM_RACE_FLAGS: rounds, releases...; REQUIRE_RACE=1: fail when a scenario's client
#        checks find no race)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
export CLUSTER_DIR="${CLUSTER_DIR:-$root/target/cluster-race}"
host="${POLICY_HOST:-$root/target/host/policy-host}"
# shellcheck disable=SC2206
flags=(${CLUSTER_RACE_FLAGS:---writers 8 --objects 12 --writes 2000 --duration 20 --think-ms 5})
trap '"$root/control-plane/cluster.sh" down' EXIT
# shellcheck disable=SC2206
helm_flags=(${HELM_RACE_FLAGS:---rounds 20 --releases 2})
"$root/scripts/setup.sh" helm
"$root/control-plane/cluster.sh" up --apiservers 2 --backends 2 --storage-json \
  --apply "$root/e2e-tests/cluster/race-crd.yaml" --probe "$root/e2e-tests/cluster/race-probe.yaml" \
  "$root/e2e-tests/cluster/race-policy.yaml" "$root/e2e-tests/cluster/race-helm-policy.yaml"
# shellcheck disable=SC1091
source "$CLUSTER_DIR/env"
common=(--ca-file "$APISERVER_CA" --etcd-url "$ETCD_URL" --require "${flags[@]}")
# policy-host serve logs each admission call (policy-server's log is its own).
[ -n "${POLICY_SERVER:-}" ] || common+=(--webhook-log "$BACKEND_LOG")
# The full run also requires each scenario's client checks to lose the race somewhere.
race=()
[ -z "${REQUIRE_RACE:-}" ] || race=(--require-race)
# Every run's summary line is `race (...): client-check violations N, admission violations M`;
# the last line adds them all up, so that the whole result is the line a reader sees last.
summary() {
  python3 -c '
import re, sys
names = sys.argv[1:]
runs = re.findall(r"^race \(.*\): client-check violations (\d+), admission violations (\d+)$",
                  sys.stdin.read(), re.M)
if len(runs) != len(names):
    sys.exit(f"cluster-race: {len(runs)} summaries for {len(names)} groups of runs")
client = sum(int(c) for c, _ in runs)
admission = sum(int(a) for _, a in runs)
parts = "; ".join(f"{n} {c} and {a}" for n, (c, a) in zip(names, runs))
print(f"cluster-race, all runs: client-check violations {client}, admission violations {admission} ({parts})")' \
    "one API server" "two API servers, admission mode only," "real Helm"
}
{
  echo "One kube-apiserver:"
  echo
  "$host" race --apiserver "${APISERVER_URLS%%,*}" "${common[@]}" "${race[@]}"
  echo
  echo "Two kube-apiservers on the same etcd, the writers split between them, admission mode:"
  echo
  "$host" race --apiserver "$APISERVER_URLS" --mode admission "${common[@]}"
  echo
  echo "Real Helm (the Helm v4 SDK, releases of e2e-tests/charts/ sharing a CRD and a ClusterRole), one kube-apiserver:"
  echo
  KUBECONFIG="$CLUSTER_DIR/kubeconfig-1" "$root/target/tools/helm/bin/python" "$root/scripts/helm-race.py" \
    --require "${race[@]}" "${helm_flags[@]}"
} | tee "$out"
echo
summary <"$out" | tee -a "$out"
