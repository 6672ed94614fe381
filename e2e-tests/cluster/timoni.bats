#!/usr/bin/env bats
# Timoni for real ($TIMONI, built from the Go module proxy: control-plane/timoni/go.mod; none:
# skipped) under deploy/timoni.yaml, and under deploy/all-tools.yaml through the link in
# cluster-tools/: an instance's install, upgrade (its own object pruned) and delete pass; a
# second instance shipping the first's object takes it without the policy (Timoni checks an
# instance's owner, a Bundle, not its objects'; --overwrite-ownership is about the former) and
# is refused with it, Timoni printing the policy's message; two instances applying one object at
# once both succeed without the policy, exactly one with it; every kind of write Timoni made
# (the witness webhook's records) is in its corpus. Helpers: timoni.bash.

load ../cluster/common
load ../cluster/timoni

setup_file() {
  TIMONI_SKIP="$(timoni_missing)"
  export TIMONI_SKIP
  [ -z "$TIMONI_SKIP" ] || return 0
  timoni_identity
  "$ROOT/control-plane/witness.sh" up timoni "$TIMONI_USER"
}

teardown_file() {
  [ -z "$TIMONI_SKIP" ] || return 0
  "$ROOT/control-plane/witness.sh" down timoni
}

setup() {
  [ -z "$TIMONI_SKIP" ] || skip "$TIMONI_SKIP"
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
}

teardown() {
  [ -n "${ns:-}" ] || return 0
  policy_back "$TIMONI_POLICY" probe_refused "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

@test "timoni: an instance's install, upgrade with its own object pruned, and delete pass the policy" {
  values "$BATS_TEST_TMPDIR/v1.json" "shared=shop-shared" setting=1
  timoni_apply shop "$ns" --values "$BATS_TEST_TMPDIR/v1.json"
  assert_success
  [[ "$stderr" == *"installing shop in namespace $ns"* ]] || fail "$stderr"
  assert_equal "$(instance_of "$ns" shop-settings)" shop
  assert_equal "$(instance_of "$ns" shop-shared)" shop
  # Upgrade: new data, and the instance's own ConfigMap no longer rendered (pruned).
  values "$BATS_TEST_TMPDIR/v2.json" "shared=shop-shared" setting=2 own=false
  timoni_apply shop "$ns" --values "$BATS_TEST_TMPDIR/v2.json"
  assert_success
  [[ "$stderr" == *"upgrading shop in namespace $ns"* ]] || fail "$stderr"
  [[ "$stderr" == *"ConfigMap/$ns/shop-settings deleted"* ]] || fail "no prune: $stderr"
  assert_equal "$(data_of "$ns" shop-shared setting)" 2
  run kubectl get configmap shop-settings -n "$ns"
  assert_failure
  # Delete: the instance's objects and its storage Secret go.
  run --separate-stderr "$TIMONI" delete shop -n "$ns" --timeout 60s --kubeconfig "$(timoni_kubeconfig)"
  assert_success
  run kubectl get configmap shop-shared -n "$ns"
  assert_failure
  run kubectl get secret timoni.shop -n "$ns"
  assert_failure
}

@test "timoni: a second instance takes the first's object without the policy, and is refused with it, Timoni printing why" {
  values "$BATS_TEST_TMPDIR/v.json" "shared=shared"
  timoni_apply shop "$ns" --values "$BATS_TEST_TMPDIR/v.json"
  assert_success
  # Without the policy: Timoni relabels it for the second instance, without a word.
  policy_off "$TIMONI_POLICY" probe_refused "$ns"
  timoni_apply web "$ns" --values "$BATS_TEST_TMPDIR/v.json"
  local without_status="$status"
  local taken_by="$(instance_of "$ns" shared)" data_by="$(data_of "$ns" shared by)"
  policy_on "$TIMONI_POLICY" probe_refused "$ns"
  assert_equal "$without_status" 0
  assert_equal "$taken_by" web
  assert_equal "$data_by" web
  # Back to shop (the owner web holds it now, so shop's apply is refused too: web deletes it).
  run --separate-stderr "$TIMONI" delete web -n "$ns" --timeout 60s --kubeconfig "$(timoni_kubeconfig)"
  assert_success
  timoni_apply shop "$ns" --values "$BATS_TEST_TMPDIR/v.json"
  assert_success
  # With the policy: refused at Timoni's server-side dry run, the policy's message printed, and
  # --overwrite-ownership changes nothing (it concerns a Bundle's instances).
  timoni_apply shop2 "$ns" --values "$BATS_TEST_TMPDIR/v.json"
  assert_failure
  [[ "$stderr" == *"ConfigMap/$ns/shared dry-run failed: admission webhook \"$TIMONI_WEBHOOK\" denied the request: ConfigMap \"shared\" in namespace \"$ns\" is owned by [$INSTANCE_NAME=shop]"*", and this UPDATE would change its owner to [$INSTANCE_NAME=shop2]"* ]] ||
    fail "not the policy's refusal: $stderr"
  timoni_apply shop2 "$ns" --values "$BATS_TEST_TMPDIR/v.json" --overwrite-ownership
  assert_failure
  [[ "$stderr" == *"denied the request"* ]] || fail "$stderr"
  assert_equal "$(instance_of "$ns" shared)" shop
  assert_equal "$(data_of "$ns" shared by)" shop
}

@test "timoni: two instances applying one object at once: both succeed without the policy, exactly one with it" {
  local rounds="${TIMONI_RACE_ROUNDS:-3}" i both=0 one=0 result
  policy_off "$TIMONI_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns" "off-$i")"
    [ "${result%% *}" = 2 ] && both=$((both + 1))
  done
  policy_on "$TIMONI_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns" "on-$i")"
    [ "${result%% *}" = 1 ] && [ -n "${result#* }" ] && one=$((one + 1))
  done
  echo "# $rounds rounds of two Timoni instances applying one ConfigMap at once: both succeeded in $both without the policy; exactly one in $one with it" >&3
  assert_equal "$both" "$rounds"
  assert_equal "$one" "$rounds"
}

@test "timoni: an instance shipping a Helm release's object is refused under all-tools, naming the release" {
  [ "$TIMONI_POLICY" = single-owner-all-tools ] ||
    skip "a move between tools is deploy/all-tools.yaml's to refuse: each one-tool preset sees its own keys only"
  "$ROOT/scripts/setup.sh" helm >&2
  run --separate-stderr env PATH="$ROOT/target/tools/bin:$PATH" helm -n "$ns" install widgets "$ROOT/e2e-tests/charts/widgets-a" \
    --set withShared=false --set hooks=false
  assert_success
  values "$BATS_TEST_TMPDIR/v.json" "shared=widgets-settings"
  timoni_apply shop "$ns" --values "$BATS_TEST_TMPDIR/v.json"
  assert_failure
  [[ "$stderr" == *"ConfigMap/$ns/widgets-settings dry-run failed: admission webhook \"$TIMONI_WEBHOOK\" denied the request: ConfigMap \"widgets-settings\" in namespace \"$ns\" is owned by [meta.helm.sh/release-name=widgets, meta.helm.sh/release-namespace=$ns] (helm)"* ]] ||
    fail "not the policy's refusal: $stderr"
  assert_equal "$(instance_of "$ns" widgets-settings)" ""
  assert_equal "$(data_of "$ns" widgets-settings chart)" widgets-a
}

@test "timoni: every kind of write Timoni made in this file is in its corpus (e2e-tests/corpus/timoni.yaml)" {
  run python3 "$ROOT/e2e-tests/corpus/witnessed.py" timoni "$CLUSTER_DIR/witness-timoni.jsonl"
  echo "$output" | sed 's/^/# /' >&3
  assert_success
}
