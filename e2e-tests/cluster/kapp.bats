#!/usr/bin/env bats
# kapp for real under deploy/kapp.yaml ($KAPP against the project's API server; none:
# skipped): an app's deploy, upgrade, adoption, orphaning and delete pass; a second app that
# ships the first's object is stopped by kapp's own check, takes it with
# --dangerous-override-ownership-of-existing-resources without the policy, and is refused
# with it, the refusal naming both apps; two apps adopting one object at once: one wins, with
# the policy as without (kapp's PUT carries the resourceVersion it diffed, so the loser gets a
# 409); kubectl single-owner finds the app by its record, and reports its objects owner-gone
# once the record is deleted. Helpers: e2e-tests/cluster/kapp.bash.

load common
KAPP_POLICY=single-owner-kapp
load kapp

setup() {
  needs_kapp
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
}

teardown() {
  [ -n "${ns:-}" ] || return 0
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

@test "kapp: deploy, upgrade with a cluster-scoped object, adoption, orphaning and delete pass the policy" {
  local dir="$BATS_TEST_TMPDIR/shop" value
  configmaps "$dir" settings
  deploy shop "$ns" "$dir"
  assert_success
  value="$(app_value shop "$ns")"
  assert_equal "$(app_of "$ns" settings)" "$value"
  # Upgrade: new data, a ClusterRole (kapp labels it with the same value), and an existing
  # ConfigMap without a label, which kapp takes (an adoption), to be orphaned on delete.
  jq '.data.by = "shop v2"' "$dir/settings.yaml" >"$dir/settings.yaml.new" && mv "$dir/settings.yaml.new" "$dir/settings.yaml"
  jq -n --arg n "$ns-reader" '{apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: {name: $n}, rules: []}' >"$dir/reader.yaml"
  kubectl create configmap legacy -n "$ns" --from-literal=by=hand >/dev/null
  jq -n '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "legacy", annotations: {"kapp.k14s.io/delete-strategy": "orphan"}}, data: {by: "shop"}}' >"$dir/legacy.yaml"
  deploy shop "$ns" "$dir"
  assert_success
  assert_equal "$(data_by "$ns" settings)" "shop v2"
  assert_equal "$(kubectl get clusterrole "$ns-reader" -o json | jq -r --arg k "$APP_LABEL" '.metadata.labels[$k]')" "$value"
  assert_equal "$(app_of "$ns" legacy)" "$value"
  # Delete: settings and the ClusterRole go, legacy stays without the app label (orphaned).
  run --separate-stderr "$KAPP" delete -a shop -n "$ns" -y --tty=false
  assert_success
  run kubectl get configmap settings -n "$ns"
  assert_failure
  assert_equal "$(app_of "$ns" legacy)" ""
  assert_equal "$(kubectl get configmap legacy -n "$ns" -o json | jq -r '.metadata.labels | has("kapp.k14s.io/orphaned")')" true
}

@test "kapp: a second app is stopped by kapp's check; with the override it takes the object without the policy, and is refused with it" {
  local a="$BATS_TEST_TMPDIR/shop" b="$BATS_TEST_TMPDIR/web" va vb
  configmaps "$a" shared
  configmaps "$b" shared
  deploy shop "$ns" "$a"
  assert_success
  va="$(app_value shop "$ns")"
  # kapp's own check, from its listing: refused on the client.
  deploy web "$ns" "$b"
  assert_failure
  [[ "$stderr$output" == *"is already associated with a different app 'shop'"* ]] || fail "$stderr$output"
  vb="$(app_value web "$ns")"
  # Without the policy, the override takes it.
  policy_off "$KAPP_POLICY" probe_refused "$ns"
  deploy web "$ns" "$b" --dangerous-override-ownership-of-existing-resources
  local taken="$status"
  policy_on "$KAPP_POLICY" probe_refused "$ns"
  assert_equal "$taken" 0
  assert_equal "$(app_of "$ns" shared)" "$vb"
  assert_equal "$(data_by "$ns" shared)" web
  echo "# without the policy: app web took ConfigMap shared from app shop with the override (label $vb)" >&3
  # Back to shop, as a new owner would take it: released, then shop's deploy adopts it.
  kubectl label configmap shared -n "$ns" "$APP_LABEL-" >/dev/null
  deploy shop "$ns" "$a"
  assert_success
  assert_equal "$(app_of "$ns" shared)" "$va"
  # With the policy, the override is refused, naming both apps, and shared stays shop's.
  deploy web "$ns" "$b" --dangerous-override-ownership-of-existing-resources
  assert_failure
  local said="$stderr$output"
  [[ "$said" == *"admission webhook \"$(webhook_of "$KAPP_POLICY")\" denied the request"* ]] || fail "$said"
  [[ "$said" == *"ConfigMap \"shared\" in namespace \"$ns\" is owned by [$APP_LABEL=$va]"* ]] || fail "$said"
  [[ "$said" == *"would change its owner to [$APP_LABEL=$vb]"* ]] || fail "$said"
  [[ "$said" == *"kubectl get configmaps -A -l kapp.k14s.io/app-change-app-label=$va"* ]] || fail "$said"
  assert_equal "$(app_of "$ns" shared)" "$va"
  assert_equal "$(data_by "$ns" shared)" shop
}

@test "kapp: two apps adopting one object at once: one wins, with the policy as without (kapp's PUT carries the version it diffed)" {
  # kapp updates with a PUT of the object it diffed, resourceVersion included: the loser of a
  # race gets the API server's 409 and stops ("approved diff no longer matches"), so kapp's
  # own adoption does not race; the policy keeps it so (it refuses nothing kapp does here).
  local rounds="${KAPP_RACE_ROUNDS:-3}" i without=0 with=0 result
  policy_off "$KAPP_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns")"
    [ "${result%% *}" = 1 ] && [ -n "${result#* }" ] && without=$((without + 1))
  done
  policy_on "$KAPP_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns")"
    [ "${result%% *}" = 1 ] && [ -n "${result#* }" ] && with=$((with + 1))
  done
  echo "# $rounds rounds of two kapp apps adopting one ConfigMap at once: exactly one won in $without without the policy, in $with with it" >&3
  assert_equal "$without" "$rounds"
  assert_equal "$with" "$rounds"
}

@test "kubectl single-owner: a kapp app's objects under its label value, found by kapp's own record; owner gone once the record is deleted" {
  local dir="$BATS_TEST_TMPDIR/shop" value plugin="$ROOT/target/host/kubectl-single_owner"
  [ -x "$plugin" ] || skip "no $plugin (make kubectl-plugin)"
  configmaps "$dir" settings flags
  deploy shop "$ns" "$dir"
  assert_success
  value="$(app_value shop "$ns")"
  run --separate-stderr "$plugin" owners --preset kapp -n "$ns" -o json
  assert_success
  assert_equal "$(jq -c '.findings' <<<"$output")" '[]'
  assert_equal "$(jq -r --arg v "$value" '.owners[] | select(.owner["kapp.k14s.io/app"] == $v) | [.objects[].name] | sort | join(",")' <<<"$output")" "flags,settings"
  # The record lost (deleted by hand): kapp no longer knows the app, its objects stay.
  kubectl delete configmap shop -n "$ns" >/dev/null
  run --separate-stderr "$plugin" owners --preset kapp -n "$ns" -o json
  assert_equal "$status" 1
  assert_equal "$(jq -r '[.findings[] | "\(.object.name) \(.kind)"] | sort | join(",")' <<<"$output")" "flags owner-gone,settings owner-gone"
  assert_equal "$(jq -r '.findings[0].message' <<<"$output" | grep -c "kapp app \"$value\" (its record: a ConfigMap labelled kapp.k14s.io/is-app whose spec has labelValue $value) does not exist")" 1
}
