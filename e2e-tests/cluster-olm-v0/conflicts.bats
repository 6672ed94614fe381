#!/usr/bin/env bats
# A second operator whose bundle ships an object of the first (widgets.v1.4.0, installed by
# lifecycle.bats in widgets-system): gadgets (in gadgets-system) ships a ClusterRole named as
# widgets' bundle ClusterRole widgets-viewer; gizmos (in widgets-system, widgets'
# OperatorGroup) has a Deployment named as widgets' widgets-operator. What OLM does, what the
# policy refuses, and the message users then see (recorded in
# OLM_RUN_DIR/conflicts-OLM_SUITE.txt). Each second operator is removed afterwards.

load common

WIDGETS=widgets.v1.4.0

# plan_outcome NAMESPACE CSV [SECONDS]: waits until the InstallPlan of CSV is Complete or
# Failed; prints its phase.
plan_outcome() {
  local plan p deadline=$((SECONDS + ${3:-$TIMEOUT}))
  while :; do
    plan="$(plan_for "$1" "$2")"
    p=""
    [ -z "$plan" ] || p="$(kubectl get installplan "$plan" -n "$1" -o jsonpath='{.status.phase}')"
    case "$p" in Complete | Failed) echo "$p"; return 0 ;; esac
    [ "$SECONDS" -lt "$deadline" ] || { echo "timeout (phase '$p')"; return 0; }
    sleep 1
  done
}

# plan_message NAMESPACE CSV: the InstallPlan's conditions (type, status, reason, message) and
# status.message, one line each.
plan_message() {
  kubectl get installplan "$(plan_for "$1" "$2")" -n "$1" -o json |
    jq -r '(.status.conditions // [] | .[] | "InstallPlan condition \(.type)=\(.status) reason=\(.reason // "") message=\(.message // "")"), (.status.message // empty | "InstallPlan status.message: \(.)")'
}

@test "$OLM_PRESET: gadgets ships widgets' ClusterRole widgets-viewer: the policy refuses catalog-operator's update, the InstallPlan says so, the ClusterRole stays widgets'" {
  assert_owner clusterrole widgets-viewer "" "$WIDGETS"
  operator_group gadgets-system
  mark
  subscribe gadgets-system gadgets stable Automatic
  outcome="$(plan_outcome gadgets-system gadgets.v1.0.0 90)"
  message="$(plan_message gadgets-system gadgets.v1.0.0)"
  say "gadgets' InstallPlan: $outcome"
  say "$message"
  say "gadgets.v1.0.0: $(csv_status gadgets-system gadgets.v1.0.0 | cut -c1-300)"
  say "the policy: $(counts); refused: $(refused_since | jq -r '"\(.operation) \(.kind) \(.name)"' | sort | uniq -c | tr '\n' ';')"
  record "conflicts-$OLM_SUITE.txt" "== gadgets ships ClusterRole widgets-viewer (preset $OLM_PRESET)
InstallPlan: $outcome
$message
CSV gadgets.v1.0.0: $(csv_status gadgets-system gadgets.v1.0.0)
the policy: $(counts)
$(verdicts | grep -v ': allowed$' | sort | uniq -c || true)
witnessed writes of widgets-viewer: $(witnessed_since '.name == "widgets-viewer"' | jq -c '{operation, user, old: .oldObject.labels["olm.owner"], new: .object.labels["olm.owner"]}' | sort | uniq -c | tr '\n' ' ')"
  assert_owner clusterrole widgets-viewer "" "$WIDGETS"
  # catalog-operator retries the plan (about once a second; still Installing after minutes
  # here, --install-plan-retry-timeout notwithstanding): never Complete.
  refute [ "$outcome" = Complete ]
  [[ "$message" == *"admission webhook \"$OLM_POLICY_WEBHOOK\" denied the request"* ]] ||
    fail "the InstallPlan does not give the policy's refusal: $message"
  needs_request_log
  run jq -c 'select(.name == "widgets-viewer" and .operation == "UPDATE" and .verdict.allowed == false)' <(since)
  refute_output ""
}

@test "$OLM_PRESET: gadgets removed" {
  remove_operator gadgets-system gadgets gadgets.v1.0.0
  kubectl delete crd gadgets.example.com --ignore-not-found >/dev/null
  run kubectl get csv -n gadgets-system -o name
  assert_output ""
}

@test "$OLM_PRESET: gizmos' Deployment is named as widgets' in widgets' namespace: the policy refuses olm-operator's update, the CSV says so, the Deployment stays widgets'" {
  assert_owner deployment widgets-operator "$NS" "$WIDGETS" "$NS"
  mark
  subscribe "$NS" gizmos stable Automatic
  # Whatever the plan's approval (the namespace's other Subscription is Manual), approve it.
  run approve "$NS" gizmos.v1.0.0
  assert_success
  outcome="$(plan_outcome "$NS" gizmos.v1.0.0)"
  say "gizmos' InstallPlan: $outcome"
  # olm-operator installs the Deployment: wait for it to give up or retry.
  deadline=$((SECONDS + 90))
  until [ -n "$(refused_since | jq -r 'select(.kind == "Deployment")')" ] || [ "$SECONDS" -ge "$deadline" ] ||
    [ "$(phase "$NS" gizmos.v1.0.0)" = Succeeded ]; do
    sleep 1
  done
  sleep 5
  status="$(csv_status "$NS" gizmos.v1.0.0)"
  conditions="$(kubectl get csv gizmos.v1.0.0 -n "$NS" -o json | jq -r '.status.conditions // [] | .[] | "  \(.phase) \(.reason): \(.message)"' | uniq | tail -8)"
  say "gizmos.v1.0.0: $status"
  say "its conditions (the last ones): $conditions"
  say "the policy: $(counts); refused: $(refused_since | jq -r '"\(.operation) \(.kind) \(.name)"' | sort | uniq -c | tr '\n' ';')"
  record "conflicts-$OLM_SUITE.txt" "== gizmos' Deployment widgets-operator in widgets-system (preset $OLM_PRESET)
InstallPlan: $outcome
CSV gizmos.v1.0.0: $status
conditions:
$conditions
the policy: $(counts)
$(verdicts | grep -v ': allowed$' | sort | uniq -c || true)
witnessed writes of Deployment widgets-operator: $(witnessed_since '.kind == "Deployment" and .name == "widgets-operator"' | jq -c '{operation, user, old: .oldObject.labels["olm.owner"], new: .object.labels["olm.owner"]}' | sort | uniq -c | tr '\n' ' ')"
  assert_owner deployment widgets-operator "$NS" "$WIDGETS" "$NS"
  refute [ "$(phase "$NS" gizmos.v1.0.0)" = Succeeded ]
  [[ "$status$conditions" == *"admission webhook \"$OLM_POLICY_WEBHOOK\" denied the request"* ]] ||
    fail "the CSV does not give the policy's refusal: $status $conditions"
  # widgets.v1.4.0 itself is still Succeeded.
  assert_equal "$(phase "$NS" "$WIDGETS")" Succeeded
}

@test "$OLM_PRESET: gizmos removed; widgets.v1.4.0 still Succeeded and its Deployment its own" {
  remove_operator "$NS" gizmos gizmos.v1.0.0
  kubectl delete crd gizmos.example.com --ignore-not-found >/dev/null
  sleep 3
  assert_equal "$(phase "$NS" "$WIDGETS")" Succeeded
  assert_owner deployment widgets-operator "$NS" "$WIDGETS" "$NS"
}
