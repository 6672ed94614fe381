#!/usr/bin/env bats
# The same CRD shipped by two operators: sprockets owns widgets.example.com, which widgets
# (widgets.v1.4.0 in widgets-system, lifecycle.bats) owns. First in widgets' namespace (one
# OperatorGroup): what OLM's resolver does; then in a namespace of its own: what OLM does with
# the CRD, and what the preset sees of it (OLM labels a CRD with no olm.owner). Recorded in
# OLM_RUN_DIR/crd-OLM_SUITE.txt.

load common

WIDGETS=widgets.v1.4.0
CRD=widgets.example.com

# crd_meta: the CRD's labels and annotations of OLM's (olm.*, operators.coreos.com/*,
# operatorframework.io/*), one JSON line.
crd_meta() {
  kubectl get crd "$CRD" -o json | jq -c '{labels: (.metadata.labels // {}), annotations: (.metadata.annotations // {} |
    with_entries(select(.key | test("olm|operatorframework|operators.coreos"))))}'
}

@test "$OLM_PRESET: sprockets in widgets' namespace: OLM's resolver refuses to resolve a second provider of widgets.example.com; no InstallPlan, no write" {
  mark
  before="$(crd_meta)"
  subscribe "$NS" sprockets stable Automatic
  deadline=$((SECONDS + 90))
  until kubectl get subscription sprockets -n "$NS" -o json | jq -e '.status.conditions // [] | any(.type == "ResolutionFailed" and .status == "True")' >/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ] || [ -n "$(plan_for "$NS" sprockets.v1.0.0)" ]; then break; fi
    sleep 1
  done
  condition="$(kubectl get subscription sprockets -n "$NS" -o json | jq -r '.status.conditions // [] | .[] | select(.type == "ResolutionFailed") | "ResolutionFailed=\(.status) reason=\(.reason) message=\(.message)"')"
  # The resolver resolves the namespace as a whole: widgets' Subscription reports it too.
  widgets_condition="$(kubectl get subscription widgets -n "$NS" -o json | jq -r '.status.conditions // [] | .[] | select(.type == "ResolutionFailed") | "ResolutionFailed=\(.status) reason=\(.reason) message=\(.message)"')"
  say "sprockets' Subscription: $condition"
  say "widgets' Subscription: $widgets_condition"
  record "crd-$OLM_SUITE.txt" "== sprockets (owns $CRD) in $NS, beside widgets (preset $OLM_PRESET)
sprockets Subscription: $condition
widgets Subscription: $widgets_condition
InstallPlan for sprockets.v1.0.0: '$(plan_for "$NS" sprockets.v1.0.0)'
the policy: $(counts)"
  assert_equal "$(plan_for "$NS" sprockets.v1.0.0)" ""
  [[ "$condition" == ResolutionFailed=True* ]] || fail "no ResolutionFailed on sprockets' Subscription: $(subscription_state "$NS")"
  assert_equal "$(crd_meta)" "$before"
  assert_equal "$(phase "$NS" "$WIDGETS")" Succeeded
  kubectl delete subscription sprockets -n "$NS" >/dev/null
}

@test "$OLM_PRESET: sprockets in a namespace of its own: what OLM does with widgets' CRD, and what the policy sees of it" {
  operator_group sprockets-system
  mark
  before="$(crd_meta)"
  say "CRD before: $before"
  subscribe sprockets-system sprockets stable Automatic
  deadline=$((SECONDS + TIMEOUT))
  while :; do
    p="$(phase sprockets-system sprockets.v1.0.0)"
    plan="$(plan_for sprockets-system sprockets.v1.0.0)"
    pp=""
    [ -z "$plan" ] || pp="$(kubectl get installplan "$plan" -n sprockets-system -o jsonpath='{.status.phase}')"
    case "$p:$pp" in Succeeded:* | Failed:* | *:Failed) break ;; esac
    [ "$SECONDS" -lt "$deadline" ] || break
    sleep 1
  done
  sleep 5
  after="$(crd_meta)"
  say "InstallPlan: ${pp:-none}; sprockets.v1.0.0: $(csv_status sprockets-system sprockets.v1.0.0 | cut -c1-300)"
  say "widgets.v1.4.0: $(csv_status "$NS" "$WIDGETS" | cut -c1-200)"
  say "CRD after: $after"
  crd_writes="$(witnessed_since ".name == \"$CRD\"" | jq -c '{operation, user, labels: .object.labels, oldLabels: .oldObject.labels}' | sort | uniq -c)"
  say "writes of the CRD: $crd_writes"
  judged_crd="$(since | jq -c "select(.name == \"$CRD\")")"
  say "the policy judged of the CRD: ${judged_crd:-nothing}; in all $(counts)"
  record "crd-$OLM_SUITE.txt" "== sprockets (owns $CRD) in sprockets-system (preset $OLM_PRESET)
InstallPlan: ${pp:-none}
CSV sprockets.v1.0.0: $(csv_status sprockets-system sprockets.v1.0.0)
CSV widgets.v1.4.0: $(csv_status "$NS" "$WIDGETS")
CRD before: $before
CRD after: $after
writes of the CRD (witness): $crd_writes
the policy judged of the CRD: ${judged_crd:-nothing}
the policy: $(counts)"
  # Neither operator labels the CRD with olm.owner: the preset selects none of its writes.
  refute [ "$(jq -r '.labels["olm.owner"] // ""' <<<"$after")" ]
  needs_request_log
  assert_equal "$judged_crd" ""
}

@test "$OLM_PRESET: sprockets removed; widgets.v1.4.0 still Succeeded" {
  remove_operator sprockets-system sprockets sprockets.v1.0.0
  sleep 3
  assert_equal "$(phase "$NS" "$WIDGETS")" Succeeded
}
