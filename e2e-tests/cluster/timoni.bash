# Timoni for real ($TIMONI, the CLI control-plane/build.sh builds from the Go module proxy;
# none: skipped) through the API server of control-plane/cluster.sh, applying the suites'
# own module (timoni-module/: each instance ships <instance>-settings and the ConfigMap its
# `shared` value names). Loaded by timoni.bats, on the one-tool cluster (deploy/timoni.yaml)
# and on the all-tools one (deploy/all-tools.yaml, the same file linked from cluster-tools/).

INSTANCE_NAME=instance.timoni.sh/name
MODULE="$ROOT/e2e-tests/cluster/timoni-module"

# The policy that judges Timoni's objects on this cluster, and its webhook.
if [[ " $MANIFESTS " == *"/all-tools.yaml "* ]]; then
  TIMONI_POLICY=single-owner-all-tools
else
  TIMONI_POLICY=single-owner-timoni
fi
TIMONI_WEBHOOK="$(webhook_of "$TIMONI_POLICY")"

# timoni_identity: Timoni runs as a service account of its own, default/timoni-ops (bound to
# cluster-admin), so that the witness can tell its writes from the suite's kubectl ones.
TIMONI_USER=system:serviceaccount:default:timoni-ops
timoni_identity() {
  ensure serviceaccount timoni-ops -n default
  ensure clusterrolebinding timoni-ops --clusterrole cluster-admin --serviceaccount default:timoni-ops
  kubeconfig_for default timoni-ops >/dev/null
}
timoni_kubeconfig() { echo "$BATS_FILE_TMPDIR/kubeconfig-default-timoni-ops"; }

# timoni_missing: why Timoni cannot run here (nothing when it can): the tests skip with it
# (setup; bats 1.8 cannot skip from setup_file).
timoni_missing() {
  if [ -z "${TIMONI:-}" ]; then
    echo "no timoni: set TIMONI to a timoni binary (control-plane/build.sh timoni)"
  elif ! "$TIMONI" version >/dev/null 2>&1; then
    echo "TIMONI=$TIMONI does not run"
  fi
}

# timoni_apply INSTANCE NAMESPACE [TIMONI FLAGS...]: `timoni apply` of the module; its
# answer in $status, $output and $stderr.
timoni_apply() {
  local instance="$1" ns="$2"
  shift 2
  run --separate-stderr "$TIMONI" apply "$instance" "$MODULE" -n "$ns" --timeout 60s --kubeconfig "$(timoni_kubeconfig)" "$@"
}

# values FILE KEY=VALUE...: a values file for --values (JSON under `values`, as Timoni reads
# YAML and JSON values files; strings, `own` a boolean).
values() {
  local file="$1"
  shift
  printf '%s\n' "$@" | jq -Rn '[inputs | split("=") | {(.[0]): (if .[1] == "true" or .[1] == "false" then (.[1] == "true") else .[1] end)}] | {values: add}' >"$file"
}

instance_of() { kubectl get configmap "$2" -n "$1" -o json | jq -r --arg k "$INSTANCE_NAME" '.metadata.labels[$k] // ""'; }
data_of() { kubectl get configmap "$2" -n "$1" -o json | jq -r --arg k "$3" '.data[$k] // ""'; }

# The probe that shows the API server runs the policy (common.bash: policy_off, policy_on): a
# dry-run write that moves a Timoni object to another instance.
probe_refused() {
  local ns="$1"
  jq -n --arg k "$INSTANCE_NAME" --arg ns "$ns" '{apiVersion: "v1", kind: "ConfigMap",
    metadata: {name: "timoni-probe", labels: {($k): "one", "instance.timoni.sh/namespace": $ns}}}' |
    kubectl apply -n "$ns" -f - >/dev/null
  ! kubectl label configmap timoni-probe -n "$ns" "$INSTANCE_NAME=two" --overwrite --dry-run=server >/dev/null 2>&1
}

# race_round NAMESPACE ROUND: instances a and b, applied at once, both ship ConfigMap
# race-ROUND. Prints how many of the two applies succeeded, and the instance that holds it.
race_round() {
  local ns="$1" round="$2" dir="$BATS_TEST_TMPDIR/race-$2" who
  mkdir -p "$dir"
  values "$dir/values.json" "shared=race-$round" own=false
  for who in a b; do
    ("$TIMONI" apply "race-$who" "$MODULE" -n "$ns" --kubeconfig "$(timoni_kubeconfig)" --values "$dir/values.json" --timeout 60s >"$dir/$who.out" 2>&1 &&
      echo ok >"$dir/$who.status" || echo failed >"$dir/$who.status") &
  done
  wait
  echo "$(cat "$dir/a.status" "$dir/b.status" | grep -c ok) $(instance_of "$ns" "race-$round")"
  # Both instances gone, and what is left of the object: the next round starts afresh.
  "$TIMONI" delete race-a -n "$ns" --wait=false --kubeconfig "$(timoni_kubeconfig)" >/dev/null 2>&1 || true
  "$TIMONI" delete race-b -n "$ns" --wait=false --kubeconfig "$(timoni_kubeconfig)" >/dev/null 2>&1 || true
  kubectl delete configmap "race-$round" -n "$ns" --ignore-not-found >/dev/null
}
