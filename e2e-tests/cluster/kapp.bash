# kapp for real ($KAPP, a kapp binary; none: skipped), through the API server of
# control-plane/cluster.sh, for the suites of the one-tool preset (e2e-tests/cluster/kapp.bats,
# deploy/kapp.yaml). The suite sets KAPP_POLICY, the name of the ClusterAdmissionPolicy that
# judges kapp's objects, before loading this file.

APP_LABEL=kapp.k14s.io/app

# needs_kapp: $KAPP runs.
needs_kapp() {
  [ -n "${KAPP:-}" ] || skip "no kapp: set KAPP to a kapp binary (carvel-dev/kapp)"
  "$KAPP" version >/dev/null 2>&1 || skip "KAPP=$KAPP does not run"
}

# configmaps DIR NAME...: a ConfigMap manifest per NAME in DIR (data: the app that ships it).
configmaps() {
  local dir="$1" name
  shift
  mkdir -p "$dir"
  rm -f "$dir"/*.yaml
  for name in "$@"; do
    jq -n --arg n "$name" --arg by "$(basename "$dir")" \
      '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: $n}, data: {by: $by}}' >"$dir/$name.yaml"
  done
}

# deploy APP NAMESPACE DIR [KAPP FLAGS...]: kapp deploy; its answer in $status, $output, $stderr.
deploy() {
  local app="$1" ns="$2" dir="$3"
  shift 3
  run --separate-stderr "$KAPP" deploy -a "$app" -n "$ns" -f "$dir" -y --tty=false "$@"
}

# app_value APP NAMESPACE: the app's label value, from its record (data.spec, labelValue).
app_value() { kubectl get configmap "$1" -n "$2" -o json | jq -r '.data.spec | fromjson | .labelValue'; }
app_of() { kubectl get configmap "$2" -n "$1" -o json | jq -r --arg k "$APP_LABEL" '.metadata.labels[$k] // ""'; }
data_by() { kubectl get configmap "$2" -n "$1" -o json | jq -r '.data.by // ""'; }

# The probe that shows the API server runs the policy that judges kapp's objects (common.bash:
# policy_off, policy_on): a dry-run write that moves an object to another app.
probe_refused() {
  local ns="$1"
  jq -n --arg k "$APP_LABEL" '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "kapp-probe", labels: {($k): "1"}}}' |
    kubectl apply -n "$ns" -f - >/dev/null
  ! kubectl label configmap kapp-probe -n "$ns" "$APP_LABEL=2" --overwrite --dry-run=server >/dev/null 2>&1
}

# race_round NAMESPACE: apps a and b deploy the same ConfigMap at once; it exists without an
# app label, so kapp's own check, made from its listing before the deploy, passes for both and
# each goes on to adopt it. Prints how many of the two succeeded, and the label value that
# holds it.
race_round() {
  local ns="$1" dir="$BATS_TEST_TMPDIR/race"
  configmaps "$dir/a" shared
  configmaps "$dir/b" shared
  kubectl create configmap shared -n "$ns" >/dev/null
  ("$KAPP" deploy -a race-a -n "$ns" -f "$dir/a" -y --tty=false >"$dir/a.out" 2>&1 && echo ok >"$dir/a.status" || echo failed >"$dir/a.status") &
  ("$KAPP" deploy -a race-b -n "$ns" -f "$dir/b" -y --tty=false >"$dir/b.out" 2>&1 && echo ok >"$dir/b.status" || echo failed >"$dir/b.status") &
  wait
  echo "$(grep -c ok "$dir/a.status" "$dir/b.status" | awk -F: '{s += $2} END {print s}') $(app_of "$ns" shared)"
  # Both apps forget it: the next round starts from an object of no app.
  kubectl delete configmap shared -n "$ns" >/dev/null
  "$KAPP" delete -a race-a -n "$ns" -y --tty=false >/dev/null 2>&1 || true
  "$KAPP" delete -a race-b -n "$ns" -y --tty=false >/dev/null 2>&1 || true
}
