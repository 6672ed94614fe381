#!/usr/bin/env bats
# A lookup refused by RBAC: deploy/olm-v0.yaml, with the policy server's account
# (kubewarden:policy-server-default) not yet allowed to read ClusterServiceVersions
# (deploy/rbac/lookups.yaml not applied; scripts/cluster-olm-v0.sh, suite lookups). widgets
# installs (its CREATEs need no lookup); its upgrade to widgets.v1.1.0 moves objects, which
# needs the new CSV looked up: refused with the policy's message, where OLM shows it, until
# the RBAC is applied; OLM v0 does not retry that install (the CSV is Failed,
# InstallComponentFailedNoRetry), and the operator comes back only by a reinstall at the new
# version, which the policy then accepts. Recorded in OLM_RUN_DIR/lookups.txt.

load common

setup_file() {
  operator_group "$NS"
}

@test "without deploy/rbac/lookups.yaml: widgets.v1.0.0 installs (no lookup), Succeeded" {
  [ "$OLM_LOOKUPS" = no ] || skip "the lookups RBAC is applied"
  mark
  subscribe "$NS" widgets stable Manual widgets.v1.0.0
  run approve "$NS" widgets.v1.0.0
  assert_success
  wait_phase "$NS" widgets.v1.0.0 Succeeded
  assert_owner deployment widgets-operator "$NS" widgets.v1.0.0 "$NS"
  say "the policy: $(counts)"
  assert_none_refused
}

@test "without deploy/rbac/lookups.yaml: the upgrade to widgets.v1.1.0 is refused with the policy's message; OLM v0 fails the CSV for good (InstallComponentFailedNoRetry), the RBAC applied or not" {
  [ "$OLM_LOOKUPS" = no ] || skip "the lookups RBAC is applied"
  mark
  run approve "$NS" widgets.v1.1.0
  assert_success
  plan="$output"
  deadline=$((SECONDS + 90))
  until [ -n "$(refused_since)" ] || [ "$SECONDS" -ge "$deadline" ]; do sleep 1; done
  refused="$(refused_since | jq -r '"\(.operation) \(.kind) \(.namespace)/\(.name)"' | sort | uniq -c)"
  say "refused: $refused"
  [ -n "$refused" ] || fail "the policy refused nothing in 90 s: $(subscription_state "$NS")"
  # Where users see it: the InstallPlan (catalog-operator's steps) or the CSV (olm-operator's
  # install); a few seconds of retries first.
  sleep 8
  plan_view="$(kubectl get installplan "$plan" -n "$NS" -o json | jq -r '"InstallPlan phase=\(.status.phase)", (.status.conditions // [] | .[] | "  \(.type)=\(.status) reason=\(.reason // "") message=\(.message // "")"), (.status.message // empty | "  status.message: \(.)")')"
  csv_view="$(csv_status "$NS" widgets.v1.1.0)"
  say "$plan_view"
  say "CSV widgets.v1.1.0: $csv_view"
  say "CSV widgets.v1.0.0: $(csv_status "$NS" widgets.v1.0.0)"
  record lookups.txt "== the upgrade widgets.v1.0.0 -> widgets.v1.1.0 without deploy/rbac/lookups.yaml
refused by the policy: $refused
$plan_view
CSV widgets.v1.1.0: $csv_view
CSV widgets.v1.0.0: $(csv_status "$NS" widgets.v1.0.0)
the policy: $(counts)"
  refute [ "$(phase "$NS" widgets.v1.1.0)" = Succeeded ]
  [[ "$plan_view$csv_view" == *"admission webhook \"$OLM_POLICY_WEBHOOK\" denied the request"* ]] ||
    fail "neither the InstallPlan nor the CSV gives the policy's refusal"
  [[ "$plan_view$csv_view" == *ClusterServiceVersion* ]] || fail "the message names no ClusterServiceVersion lookup"

  kubectl apply -f "$ROOT/deploy/rbac/lookups.yaml" >/dev/null
  applied=$SECONDS
  mark
  # olm-operator set the CSV Failed, InstallComponentFailedNoRetry: it does not retry on its own,
  # nor when the CSV changes (annotated): what OLM v0 does, so lookups.yaml goes in before an
  # upgrade (docs/tools.md). The policy refuses nothing more, and the Deployment stays the old CSV's.
  sleep 60
  kubectl annotate csv widgets.v1.1.0 -n "$NS" --overwrite single-owner.test/retry="$SECONDS" >/dev/null
  sleep 30
  local after
  after="$(csv_status "$NS" widgets.v1.1.0)"
  say "90 s after deploy/rbac/lookups.yaml (the CSV annotated at 60 s): widgets.v1.1.0 $after"
  record lookups.txt "90 s after deploy/rbac/lookups.yaml (the CSV annotated at 60 s): widgets.v1.1.0 ${after:0:120}: olm-operator did not retry; the policy then: $(counts)"
  [[ "$after" == *"phase=Failed reason=InstallComponentFailedNoRetry"* ]] || fail "OLM retried after all: $after"
  assert_owner deployment widgets-operator "$NS" widgets.v1.0.0 "$NS"
}

@test "then, the RBAC applied: OLM v0 recovers only by a reinstall (the Subscription and both CSVs deleted, a Subscription starting at widgets.v1.1.0), which the policy accepts" {
  [ "$OLM_LOOKUPS" = no ] || skip "the lookups RBAC is applied"
  [ "$(phase "$NS" widgets.v1.1.0)" = Failed ] || skip "widgets.v1.1.0 did not fail (test 2)"
  mark
  # Neither deleting the failed CSV and its InstallPlan (the Subscription still names it) nor
  # making the Subscription again, starting at widgets.v1.0.0 or not, brings the upgrade back:
  # widgets.v1.0.0 stays Replacing and the resolver refuses (ConstraintsNotSatisfiable,
  # "clusterserviceversion widgets.v1.0.0 exists and is not referenced by a subscription"; runs
  # of 2026-12-04). What does: a reinstall at the new version. (A garbage collector would delete
  # the old CSV's Deployment; none runs here, so widgets.v1.1.0 takes it over, an owner move
  # the policy checks by looking widgets.v1.1.0 up, now allowed.)
  kubectl delete subscription widgets -n "$NS" >/dev/null
  kubectl delete installplans -n "$NS" --all --wait=false >/dev/null
  kubectl delete csv widgets.v1.1.0 widgets.v1.0.0 -n "$NS" >/dev/null
  run wait_gone "$NS" widgets.v1.1.0
  assert_success
  run wait_gone "$NS" widgets.v1.0.0
  assert_success
  subscribe "$NS" widgets stable Manual widgets.v1.1.0
  run approve "$NS" widgets.v1.1.0
  assert_success
  run wait_phase "$NS" widgets.v1.1.0 Succeeded
  say "after the reinstall: widgets.v1.1.0 $(csv_status "$NS" widgets.v1.1.0 | cut -c1-100); the policy: $(counts)"
  record lookups.txt "the Subscription and both CSVs deleted, a Subscription starting at widgets.v1.1.0: widgets.v1.1.0 $(csv_status "$NS" widgets.v1.1.0 | cut -c1-100); the policy: $(counts)"
  assert_success
  assert_owner deployment widgets-operator "$NS" widgets.v1.1.0 "$NS"
  assert_none_refused
}
