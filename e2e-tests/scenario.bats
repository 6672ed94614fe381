#!/usr/bin/env bats
# The race the policy exists for, replayed at admission: two ClusterExtensions and one CRD.

load common

@test "two ClusterExtensions, one CRD: the second owner is refused; orphan then adopt works" {
  # ext-a installs its CRD.
  evaluate crd-create-ext-a.json
  assert_quiet_accept
  # ext-b's reconciler, racing, writes the same CRD with its own owner label.
  evaluate crd-owner-change.json
  assert_rejected
  assert_message_contains 'owner-name=ext-a' 'owner-name=ext-b'
  # A Helm hook Job of ext-a's release relabelled by ext-b.
  evaluate job-helm-hook-owner-change.json
  assert_rejected
  assert_message_contains 'Job "widget-db-migrate"' 'owner-name=ext-a' 'owner-name=ext-b'
  # The supported hand-over: ext-a releases the CRD (orphan) ...
  evaluate crd-orphan.json
  assert_accepted
  assert_warning_contains 'orphaned' 'owner-name=ext-a'
  # ... then ext-b adopts it.
  evaluate crd-adopt.json
  assert_accepted
  assert_warning_contains 'adopted by owner' 'owner-name=ext-b'
}
