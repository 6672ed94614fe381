#!/usr/bin/env bats
# The migrate suite's first half (scripts/cluster-olm.sh migrate, under OLM_PRESET): an
# extension installed by operator-controller's Helm applier, the default. The script then
# restarts operator-controller with the BoxcutterRuntime gate, as an administrator turns it
# on, and runs migrate-boxcutter.bats on the same cluster.

load common

setup_file() {
  installer widgets-system widgets-installer
  installer gadgets-system gadgets-installer
}

@test "$OLM_PRESET: the Helm applier installs widgets-operator 1.0.0 (Installed=True) before the move to boxcutter" {
  [ "$APPLIER" = helm ] || fail "the first half runs the Helm applier, not $APPLIER"
  apply "$(extension widgets widgets-operator 1.0.0 widgets-system widgets-installer)"
  assert_success
  wait_installed widgets 1.0.0
  assert_owned customresourcedefinition "$CRD" "" widgets widgets-system
  assert_owned deployment widgets-operator-controller-manager widgets-system widgets widgets-system
  needs_request_log
  run refused
  assert_output ""
}
