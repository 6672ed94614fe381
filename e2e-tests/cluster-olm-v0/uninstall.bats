#!/usr/bin/env bats
# Uninstall, as OLM's documentation says: delete the Subscription, then the CSV
# (widgets.v1.4.0, lifecycle.bats). OLM's own writes on the way (its finalizers' and its
# controllers') are accepted; no garbage collector runs here, so the objects the CSV owned are
# then deleted as it would (by the admin: DELETE is not judged). Recorded in
# OLM_RUN_DIR/uninstall-OLM_SUITE.txt.

load common

WIDGETS=widgets.v1.4.0

@test "$OLM_PRESET: uninstall widgets (delete the Subscription and the CSV): OLM's writes accepted" {
  mark
  kubectl delete subscription widgets -n "$NS" >/dev/null
  kubectl delete csv "$WIDGETS" -n "$NS" --wait=false >/dev/null
  wait_gone "$NS" "$WIDGETS" 120
  # OLM reconciles what the deletion leaves (the OperatorGroup's status, the CSV's RBAC...).
  sleep 10
  writes="$(witnessed_since '.user == env.OLM_USER' | jq -r '"\(.operation) \(.kind) \(.namespace)/\(.name) olm.owner: \(.oldObject.labels["olm.owner"] // "-") -> \(.object.labels["olm.owner"] // "-")"' | sort | uniq -c)"
  say "OLM's writes after the deletion:"
  while read -r line; do say "  $line"; done <<<"$writes"
  say "the policy: $(counts)"
  record "uninstall-$OLM_SUITE.txt" "== uninstall $WIDGETS (preset $OLM_PRESET)
OLM's writes (witness):
$writes
the policy: $(counts)
$(verdicts | sort | uniq -c)"
  assert_none_refused
}

@test "$OLM_PRESET: what the garbage collector would delete, deleted; the OperatorGroup's own ClusterRoles stay" {
  remove_operator "$NS" widgets widgets.v1.0.0 widgets.v1.1.0 widgets.v1.2.0 widgets.v1.3.0 "$WIDGETS"
  kubectl delete clusterrole widgets-viewer --ignore-not-found >/dev/null
  run kubectl get deployments -n "$NS" -o name
  assert_output ""
  say "OperatorGroup ClusterRoles: $(kubectl get clusterroles -l olm.owner.kind=OperatorGroup -o name | tr '\n' ' ')"
}
