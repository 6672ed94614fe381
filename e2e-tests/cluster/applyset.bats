#!/usr/bin/env bats
# kubectl's ApplySets for real, under deploy/applyset.yaml (the machine's kubectl against the
# project's API server): a set's install, upgrade and prune pass; a second set that ships the
# first's object takes it without the policy and is refused with it; two sets racing for one
# object both win without the policy, one with it. Helpers: e2e-tests/cluster/applyset.bash.

load common
APPLYSET_POLICY=single-owner-applyset
load applyset

setup() {
  needs_applysets
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
}

teardown() {
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

@test "kubectl ApplySet: install, upgrade with a cluster-scoped member, and prune pass the policy" {
  local dir="$BATS_TEST_TMPDIR/set-a" id
  id="$(applyset_id set-a "$ns")"
  manifests "$dir" shared only-a
  apply_set set-a "$ns" "$dir"
  assert_success
  assert_equal "$(part_of "$ns" shared)" "$id"
  assert_equal "$(kubectl get secret set-a -n "$ns" -o json | jq -r '.metadata.labels["applyset.kubernetes.io/id"]')" "$id"
  # Upgrade: new data, and a ClusterRole of the namespaced set (kubectl allows it).
  jq '.data.by = "set-a v2"' "$dir/shared.yaml" >"$dir/shared.yaml.new" && mv "$dir/shared.yaml.new" "$dir/shared.yaml"
  jq -n --arg n "$ns-reader" '{apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: {name: $n}, rules: []}' >"$dir/reader.yaml"
  apply_set set-a "$ns" "$dir" --server-side
  assert_success
  assert_equal "$(data_by "$ns" shared)" "set-a v2"
  assert_equal "$(kubectl get clusterrole "$ns-reader" -o json | jq -r --arg k "$PART_OF" '.metadata.labels[$k]')" "$id"
  # Prune: only-a and the ClusterRole leave the set's manifests and the cluster.
  rm "$dir/only-a.yaml" "$dir/reader.yaml"
  apply_set set-a "$ns" "$dir" --server-side
  assert_success
  assert_output --partial "configmap/only-a pruned"
  assert_output --partial "clusterrole.rbac.authorization.k8s.io/$ns-reader pruned"
  run kubectl get configmap only-a -n "$ns"
  assert_failure
}

@test "kubectl ApplySet: without the policy a second set takes the first's object; with it, refused naming both sets" {
  local a="$BATS_TEST_TMPDIR/set-a" b="$BATS_TEST_TMPDIR/set-b" id_a id_b
  id_a="$(applyset_id set-a "$ns")"
  id_b="$(applyset_id set-b "$ns")"
  manifests "$a" shared only-a
  manifests "$b" shared only-b
  apply_set set-a "$ns" "$a"
  assert_success
  # Without the policy: kubectl lets set-b take it, with its data, and set-a's next apply takes
  # it back; the prune of set-a then deletes it under set-b.
  policy_off "$APPLYSET_POLICY" probe_refused "$ns"
  apply_set set-b "$ns" "$b"
  local taken="$status"
  policy_on "$APPLYSET_POLICY" probe_refused "$ns"
  assert_equal "$taken" 0
  assert_equal "$(part_of "$ns" shared)" "$id_b"
  assert_equal "$(data_by "$ns" shared)" set-b
  echo "# without the policy: set-b took ConfigMap shared from set-a (part-of $id_b, data set-b)" >&3
  # With it: set-a takes its object back only as a new owner would (the policy refuses
  # kubectl's silent move back too), so restore it as set-a's by hand for the next part.
  kubectl label configmap shared -n "$ns" "$PART_OF-" >/dev/null
  apply_set set-a "$ns" "$a"
  assert_success
  assert_equal "$(part_of "$ns" shared)" "$id_a"
  # With the policy: set-b's apply fails on shared, saying both sets, and shared stays set-a's.
  apply_set set-b "$ns" "$b"
  assert_failure
  [[ "$stderr" == *"admission webhook \"$(webhook_of "$APPLYSET_POLICY")\" denied the request"* ]] || fail "$stderr"
  [[ "$stderr" == *"ConfigMap \"shared\" in namespace \"$ns\" is owned by [$PART_OF=$id_a]"* ]] || fail "$stderr"
  [[ "$stderr" == *"would change its owner to [$PART_OF=$id_b]"* ]] || fail "$stderr"
  [[ "$stderr" == *"kubectl get secrets,configmaps -A -l applyset.kubernetes.io/id=$id_a"* ]] || fail "$stderr"
  assert_equal "$(part_of "$ns" shared)" "$id_a"
  assert_equal "$(data_by "$ns" shared)" set-a
  # And set-a's next apply, with its prune, leaves its objects as they were.
  apply_set set-a "$ns" "$a"
  assert_success
  assert_equal "$(part_of "$ns" shared)" "$id_a"
  assert_equal "$(part_of "$ns" only-a)" "$id_a"
}

@test "kubectl ApplySet: two sets applying one object at once both win without the policy, one with it" {
  local rounds="${APPLYSET_RACE_ROUNDS:-5}" i both=0 one=0 result won
  policy_off "$APPLYSET_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns")"
    [ "${result%% *}" = 2 ] && both=$((both + 1))
  done
  policy_on "$APPLYSET_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns")"
    won="${result#* }"
    [ "${result%% *}" = 1 ] && [ -n "$won" ] && one=$((one + 1))
  done
  echo "# $rounds rounds of two sets racing: both succeeded in $both without the policy; exactly one in $one with it" >&3
  assert_equal "$both" "$rounds"
  assert_equal "$one" "$rounds"
}
