#!/usr/bin/env bats
# The real OLM v0 under one preset (OLM_PRESET: deploy/olm-v0.yaml, then deploy/all-tools.yaml,
# each on a cluster of its own; scripts/cluster-olm-v0.sh): the package widgets installed from
# the catalog in widgets-system (installPlanApproval Manual, each step approved by the test),
# then upgraded along replaces (1.0.0 -> 1.1.0), along skips alone (-> 1.2.0, channel fast),
# and two steps, 1.3.0 and 1.4.0, while 1.3.0 still replaces 1.2.0 (the stand-in holds its
# rollout). Every CSV Succeeded, every write of OLM's accepted. The tests run in order.

load common

setup_file() {
  operator_group "$NS"
}

# upgraded FROM TO: after TO Succeeded, FROM is gone, what FROM owned is TO's, TO's
# spec.replaces names FROM, and the policy judged the moves and refused none.
upgraded() {
  wait_phase "$NS" "$2" Succeeded
  wait_gone "$NS" "$1"
  say "$2: $(csv_status "$NS" "$2" | cut -c1-120); spec.replaces=$(kubectl get csv "$2" -n "$NS" -o jsonpath='{.spec.replaces}')"
  assert_equal "$(kubectl get csv "$2" -n "$NS" -o jsonpath='{.spec.replaces}')" "$1"
  assert_owner deployment widgets-operator "$NS" "$2" "$NS"
  assert_owner clusterrole widgets-viewer "" "$2"
  say "owner moves OLM wrote:"
  while read -r line; do say "  $line"; done < <(moves)
  record "lifecycle-$OLM_SUITE.txt" "== $1 -> $2: $(counts)"
  record "lifecycle-$OLM_SUITE.txt" "$(moves)"
  assert_none_refused
  # The Deployment's move was judged, and allowed.
  run jq -c 'select(.kind == "Deployment" and .operation == "UPDATE" and .verdict.allowed)' <(since)
  refute_output ""
  say "the policy: $(counts)"
}

@test "$OLM_PRESET: widgets.v1.0.0 installed from the catalog: Succeeded; its Deployment carries olm.owner, the bundle's ClusterRole and the CRD none" {
  mark
  subscribe "$NS" widgets stable Manual widgets.v1.0.0
  run approve "$NS" widgets.v1.0.0
  assert_success
  wait_phase "$NS" widgets.v1.0.0 Succeeded
  say "widgets.v1.0.0: $(csv_status "$NS" widgets.v1.0.0 | cut -c1-120)"
  assert_owner deployment widgets-operator "$NS" widgets.v1.0.0 "$NS"
  # catalog-operator creates the bundle's ClusterRole without OLM's labels (the resolver's
  # bundle steps carry none); the first upgrade's update adds olm.owner alone.
  assert_owner clusterrole widgets-viewer "" ""
  assert_owner crd widgets.example.com "" ""
  say "CRD widgets.example.com annotations: $(kubectl get crd widgets.example.com -o json | jq -c '.metadata.annotations // {} | with_entries(select(.key | test("alongside|olm")))')"
  record "lifecycle-$OLM_SUITE.txt" "== install widgets.v1.0.0: $(counts)"
  assert_none_refused
  say "the policy: $(counts)"
}

@test "$OLM_PRESET: upgrade along replaces, widgets.v1.0.0 -> widgets.v1.1.0: Succeeded, objects moved, none refused" {
  mark
  run approve "$NS" widgets.v1.1.0
  assert_success
  upgraded widgets.v1.0.0 widgets.v1.1.0
}

@test "$OLM_PRESET: upgrade along skips alone (channel fast), widgets.v1.1.0 -> widgets.v1.2.0: OLM sets spec.replaces to the installed CSV; Succeeded, none refused" {
  mark
  kubectl patch subscription widgets -n "$NS" --type merge -p '{"spec":{"channel":"fast"}}' >/dev/null
  run approve "$NS" widgets.v1.2.0
  assert_success
  upgraded widgets.v1.1.0 widgets.v1.2.0
}

@test "$OLM_PRESET: two steps while replacing: widgets.v1.3.0 held in its rollout (widgets.v1.2.0 Replacing); what OLM resolves for widgets.v1.4.0 then, and after; every CSV Succeeded, none refused" {
  mark
  local phases="$OLM_SUITE_DIR/phases-two-steps.txt" plan4="" t resolution
  echo "$NS/widgets-operator" >"$OLM_SUITE_DIR/standin-hold"
  run approve "$NS" widgets.v1.3.0
  assert_success
  # 1.3.0 installs its Deployment and waits for a rollout that the stand-in holds.
  wait_phase "$NS" widgets.v1.3.0 Installing 120
  wait_phase "$NS" widgets.v1.2.0 Replacing 60
  say "held: widgets.v1.2.0 $(phase "$NS" widgets.v1.2.0), widgets.v1.3.0 $(phase "$NS" widgets.v1.3.0)"
  # Does OLM resolve the next upgrade while 1.3.0 still replaces 1.2.0?
  for t in $(seq 1 30); do
    plan4="$(plan_for "$NS" widgets.v1.4.0)"
    [ -n "$plan4" ] && break
    sleep 1
  done
  resolution="$(kubectl get subscription widgets -n "$NS" -o json | jq -r '.status.conditions // [] | .[] | select(.type == "ResolutionFailed") | "ResolutionFailed=\(.status) reason=\(.reason) message=\(.message)"')"
  say "after 30 s, InstallPlan for widgets.v1.4.0: '${plan4:-none}'; the Subscription: $resolution"
  record "lifecycle-$OLM_SUITE.txt" "two steps: while widgets.v1.3.0 $(phase "$NS" widgets.v1.3.0) and widgets.v1.2.0 $(phase "$NS" widgets.v1.2.0): InstallPlan for widgets.v1.4.0 '${plan4:-none}'; Subscription $resolution"
  rm -f "$OLM_SUITE_DIR/standin-hold"
  wait_phase "$NS" widgets.v1.3.0 Succeeded
  wait_gone "$NS" widgets.v1.2.0
  if [ -z "$plan4" ]; then
    for t in $(seq 1 30); do
      plan4="$(plan_for "$NS" widgets.v1.4.0)"
      [ -n "$plan4" ] && break
      sleep 1
    done
    if [ -z "$plan4" ]; then
      # catalog-operator resolves a namespace again on an event of it (or its 15-minute
      # resync): the deletion of widgets.v1.2.0 is none. A change to the Subscription is.
      say "no InstallPlan for widgets.v1.4.0 30 s after widgets.v1.2.0 is gone: the Subscription annotated to have it resolved again"
      record "lifecycle-$OLM_SUITE.txt" "two steps: no InstallPlan for widgets.v1.4.0 30 s after widgets.v1.3.0 Succeeded and widgets.v1.2.0 deleted (the failed resolution is not retried on that): the Subscription annotated"
      kubectl annotate subscription widgets -n "$NS" --overwrite single-owner.test/resolve="$(date +%s)" >/dev/null
    fi
  fi
  run approve "$NS" widgets.v1.4.0
  assert_success
  for t in $(seq 1 120); do
    echo "$(date +%T) 1.3.0=$(phase "$NS" widgets.v1.3.0) 1.4.0=$(phase "$NS" widgets.v1.4.0) deployment-owner=$(label_of deployment widgets-operator "$NS" olm.owner)" >>"$phases"
    [ "$(phase "$NS" widgets.v1.4.0)" = Succeeded ] && break
    sleep 1
  done
  wait_phase "$NS" widgets.v1.4.0 Succeeded
  wait_gone "$NS" widgets.v1.3.0
  assert_equal "$(kubectl get csv widgets.v1.4.0 -n "$NS" -o jsonpath='{.spec.replaces}')" widgets.v1.3.0
  assert_owner deployment widgets-operator "$NS" widgets.v1.4.0 "$NS"
  assert_owner clusterrole widgets-viewer "" widgets.v1.4.0
  say "owner moves OLM wrote:"
  while read -r line; do say "  $line"; done < <(moves)
  record "lifecycle-$OLM_SUITE.txt" "== widgets.v1.2.0 -> widgets.v1.3.0 (held) -> widgets.v1.4.0: $(counts)"
  record "lifecycle-$OLM_SUITE.txt" "$(moves)"
  assert_none_refused
  say "the policy: $(counts)"
}
