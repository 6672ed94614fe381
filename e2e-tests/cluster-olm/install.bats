#!/usr/bin/env bats
# The real OLM v1 under one preset (OLM_PRESET: deploy/olm-v1.yaml, then deploy/all-tools.yaml,
# each on a cluster of its own; scripts/cluster-olm.sh): operator-controller installs and
# upgrades an extension through the policy, and a second extension shipping the same CRD is
# not installed. The tests run in order, on one cluster.

load common

setup_file() {
  installer widgets-system widgets-installer
  installer gadgets-system gadgets-installer
}

@test "$OLM_PRESET: operator-controller installs widgets-operator 1.0.0 (Installed=True); its CRD, Deployment and ServiceAccount carry the owner labels and the applier's marks" {
  apply "$(extension widgets widgets-operator 1.0.0 widgets-system widgets-installer)"
  assert_success
  wait_installed widgets 1.0.0
  say "widgets: $(condition widgets Installed)"
  assert_equal "$(kubectl get clusterextension widgets -o jsonpath='{.status.install.bundle.name}')" widgets-operator.v1.0.0
  assert_owned customresourcedefinition "$CRD" "" widgets widgets-system 1
  assert_owned deployment widgets-operator-controller-manager widgets-system widgets widgets-system 1
  assert_owned serviceaccount widgets-operator widgets-system widgets widgets-system 1
  # The policy judged operator-controller's writes of them, and allowed each.
  needs_request_log
  run judged "$CRD" CREATE
  assert_output --partial '"allowed":true'
  refute_output --partial '"allowed":false'
  run refused
  assert_output ""
  say "the policy judged $(jq -s 'map(select(.name | test("probe$") | not)) | length' "$BACKEND_LOG") writes of owned objects, refused none"
}

@test "$OLM_PRESET: upgrade to widgets-operator 1.1.0 by spec.source.catalog.version: Installed=True at 1.1.0, the CRD has 1.1.0's field, the owner is unchanged" {
  upgrade_widgets 2
}

@test "$OLM_PRESET: a second extension (gadgets-operator) shipping the same CRD is not installed: Progressing=True reason Retrying, and the CRD stays the first extension's" {
  second_extension_refused 2
}
