#!/usr/bin/env bats
# The migrate suite's second half (scripts/cluster-olm.sh migrate): operator-controller
# restarted with the BoxcutterRuntime gate moves the extension the Helm applier installed to
# boxcutter (BoxcutterStorageMigrator: the Helm release becomes a ClusterObjectSet revision,
# then boxcutter reconciles its objects, each write through the policy), then upgrades it.

load common

# migrated: the extension's CRD is boxcutter's (a revision annotation and a ClusterObjectSet
# as its controller) and the extension reports Installed=True at 1.0.0.
migrated() {
  kubectl get crd "$CRD" -o json | jq -e '(.metadata.annotations["olm.operatorframework.io/revision"] // "") != ""
    and ([.metadata.ownerReferences // [] | .[] | select(.controller and .kind == "ClusterObjectSet")] | length) == 1' >/dev/null &&
    [ "$(installed_version widgets)" = 1.0.0 ]
}

@test "$OLM_PRESET: with BoxcutterRuntime on, operator-controller moves widgets from its Helm release to boxcutter revisions (Installed=True), and the policy refuses none of its writes" {
  [ "$APPLIER" = boxcutter ] || fail "the second half runs boxcutter, not $APPLIER"
  local deadline=$((SECONDS + INSTALL_TIMEOUT))
  until migrated; do
    [ "$SECONDS" -lt "$deadline" ] || { conditions widgets; fail "widgets was not moved to boxcutter in $INSTALL_TIMEOUT s"; }
    sleep 0.5
  done
  say "ClusterObjectSets: $(kubectl get clusterobjectsets -o json | jq -c '[.items[] | "\(.metadata.name) \(.spec.lifecycleState)"]')"
  assert_owned customresourcedefinition "$CRD" "" widgets widgets-system
  assert_owned deployment widgets-operator-controller-manager widgets-system widgets widgets-system
  needs_request_log
  run refused
  assert_output ""
}

@test "$OLM_PRESET: after the move, the upgrade to 1.1.0 is a new revision: Installed=True at 1.1.0" {
  upgrade_widgets
  say "ClusterObjectSets: $(kubectl get clusterobjectsets -o json | jq -c '[.items[] | "\(.metadata.name) \(.spec.lifecycleState)"]')"
}

@test "$OLM_PRESET: after the move, a second extension shipping the same CRD is not installed" {
  second_extension_refused
}
