#!/usr/bin/env bats
# kubectl's ApplySets for real under deploy/all-tools.yaml: the tests of
# e2e-tests/cluster/applyset.bats, the applyset scheme among every tool's, and a set that
# applies an object a Helm release owns is refused (one owner across tools).

load ../cluster/common
APPLYSET_POLICY=single-owner-all-tools
load ../cluster/applyset

setup() {
  needs_applysets
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
}

teardown() {
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

@test "kubectl ApplySet under all tools: install and prune pass; a second set is refused naming both sets" {
  local a="$BATS_TEST_TMPDIR/set-a" b="$BATS_TEST_TMPDIR/set-b" id_a id_b
  id_a="$(applyset_id set-a "$ns")"
  id_b="$(applyset_id set-b "$ns")"
  manifests "$a" shared only-a
  manifests "$b" shared
  apply_set set-a "$ns" "$a"
  assert_success
  rm "$a/only-a.yaml"
  apply_set set-a "$ns" "$a" --server-side
  assert_success
  assert_output --partial "configmap/only-a pruned"
  apply_set set-b "$ns" "$b" --server-side
  assert_failure
  [[ "$stderr" == *"is owned by [$PART_OF=$id_a] (applyset), and this UPDATE would change its owner to [$PART_OF=$id_b]"* ]] || fail "$stderr"
  assert_equal "$(part_of "$ns" shared)" "$id_a"
}

@test "kubectl ApplySet under all tools: a set that applies a Helm release's object is refused" {
  local a="$BATS_TEST_TMPDIR/set-a"
  apply "$(jq -n --arg ns "$ns" '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "settings", namespace: $ns,
    labels: {"app.kubernetes.io/managed-by": "Helm"}, annotations: {"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": $ns}}}')"
  assert_success
  manifests "$a" settings
  apply_set set-a "$ns" "$a" --server-side
  assert_failure
  [[ "$stderr" == *"(helm), and this UPDATE would give it a second owner"* ]] || fail "$stderr"
}

@test "kubectl ApplySet under all tools: two sets racing for one object, one wins" {
  local rounds="${APPLYSET_RACE_ROUNDS:-5}" i one=0 result
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns")"
    [ "${result%% *}" = 1 ] && one=$((one + 1))
  done
  echo "# $rounds rounds of two sets racing under all-tools: exactly one won in $one" >&3
  assert_equal "$one" "$rounds"
}
