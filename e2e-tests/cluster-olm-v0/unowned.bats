#!/usr/bin/env bats
# A bundle's ClusterRole before its operator's first upgrade carries no olm.owner
# (catalog-operator creates it with olm.managed alone: pkg/controller/operators/catalog/
# operator.go, ExecutePlan; only EnsureClusterRole's update on AlreadyExists sets olm.owner,
# step_ensurer.go). So a second operator shipping a ClusterRole of that name takes it by an
# update that adds olm.owner where there was none, which the policy judges an adoption. Run
# after lookups.bats (scripts/cluster-olm-v0.sh, suite lookups, the RBAC applied by then):
# widgets removed, gadgets installed first (its widgets-viewer unowned), then widgets.v1.0.0.
# Recorded in OLM_RUN_DIR/unowned.txt.

load common

@test "widgets removed (Subscription, CSV, what the garbage collector would delete, its ClusterRole widgets-viewer)" {
  remove_operator "$NS" widgets widgets.v1.0.0 widgets.v1.1.0
  kubectl delete clusterrole widgets-viewer --ignore-not-found >/dev/null
  run kubectl get csv -n "$NS" -o name
  assert_output ""
}

@test "gadgets installed first: whether its bundle ClusterRole widgets-viewer carries olm.owner (recorded)" {
  operator_group gadgets-system
  mark
  subscribe gadgets-system gadgets stable Automatic
  wait_phase gadgets-system gadgets.v1.0.0 Succeeded
  # Unowned when the InstallPlan's ClusterRole step ran once (its CREATE); an InstallPlan
  # executed again (steps not all done on the first pass) updates it on AlreadyExists, which
  # sets olm.owner: record which.
  first_owner="$(label_of clusterrole widgets-viewer "" olm.owner)"
  record unowned.txt "== gadgets installed first: its widgets-viewer labelled olm.owner='$first_owner' ($(owner clusterrole widgets-viewer))"
  say "gadgets' widgets-viewer: $(owner clusterrole widgets-viewer)"
  echo "$first_owner" >"$BATS_FILE_TMPDIR/first-owner"
  assert_equal "$(kubectl get clusterrole widgets-viewer -o jsonpath='{.rules[0].resources[0]}')" gadgets
  assert_none_refused
}

@test "widgets.v1.0.0 installed next ships widgets-viewer too: taken by an adoption when gadgets' is unowned (accepted), refused when gadgets owns it" {
  # Its owner now (gadgets' InstallPlan may label it after test 2 read it: read again).
  label_of clusterrole widgets-viewer "" olm.owner >"$BATS_FILE_TMPDIR/first-owner"
  mark
  subscribe "$NS" widgets stable Manual widgets.v1.0.0
  run approve "$NS" widgets.v1.0.0
  assert_success
  # Succeeded when it takes the ClusterRole; else its InstallPlan retries the refused update.
  wait_phase "$NS" widgets.v1.0.0 Succeeded 90 || true
  meta="$(owner clusterrole widgets-viewer)"
  rules="$(kubectl get clusterrole widgets-viewer -o jsonpath='{.rules[0].resources}')"
  say "widgets-viewer now: $meta, rules on $rules"
  say "gadgets.v1.0.0: $(csv_status gadgets-system gadgets.v1.0.0)"
  writes="$(witnessed_since '.name == "widgets-viewer"' | jq -c '{operation, old: .oldObject.labels["olm.owner"], new: .object.labels["olm.owner"]}' | sort | uniq -c)"
  verdict="$(since | jq -c 'select(.name == "widgets-viewer") | {operation, allowed: .verdict.allowed}' | sort | uniq -c)"
  record unowned.txt "== gadgets installed first, then widgets.v1.0.0: both bundles ship ClusterRole widgets-viewer
widgets-viewer: $meta, rules on $rules
writes of widgets-viewer (witness): $writes
the policy's verdicts on widgets-viewer: $verdict
CSV gadgets.v1.0.0: $(csv_status gadgets-system gadgets.v1.0.0)
CSV widgets.v1.0.0: $(csv_status "$NS" widgets.v1.0.0)"
  say "the policy on widgets-viewer: $verdict"
  if [ -z "$(cat "$BATS_FILE_TMPDIR/first-owner")" ]; then
    # What OLM does and the policy lets through: the ClusterRole is widgets' now, its rules
    # widgets', and gadgets' CSV still reports Succeeded.
    assert_equal "$(jq -r '.labels["olm.owner"] // ""' <<<"$meta")" widgets.v1.0.0
    assert_none_refused
  else
    # Owned by gadgets: widgets' update is refused, the ClusterRole stays gadgets'.
    assert_equal "$(jq -r '.labels["olm.owner"] // ""' <<<"$meta")" "$(cat "$BATS_FILE_TMPDIR/first-owner")"
  fi
}

@test "gadgets and widgets removed" {
  remove_operator gadgets-system gadgets gadgets.v1.0.0
  remove_operator "$NS" widgets widgets.v1.0.0
  kubectl delete clusterrole widgets-viewer --ignore-not-found >/dev/null
}
