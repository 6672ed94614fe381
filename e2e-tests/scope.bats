#!/usr/bin/env bats
# The scope rules, on CREATE and UPDATE.

load common

@test "a cluster-scoped ClusterRole owned by a namespaced Extension is rejected" {
  evaluate clusterrole-create-namespaced-owner.json
  assert_rejected
  assert_message_contains 'ClusterRole "widget-editor" is cluster-scoped' \
    'olm.operatorframework.io/owner-kind=Extension' 'allowed: ClusterExtension'
}

@test "a CRD created for a namespaced Extension is rejected" {
  evaluate crd-create-namespaced-owner.json
  assert_rejected
  assert_message_contains 'CustomResourceDefinition "widgets.example.com" is cluster-scoped'
}

@test "a ClusterRole owned by a ClusterExtension is accepted" {
  evaluate clusterrole-create-cluster-owner.json
  assert_quiet_accept
}

@test "a cluster-scoped object without the owner-kind label is not judged by the scope rule" {
  evaluate clusterrole-create-name-only.json
  assert_quiet_accept
}

@test "a Namespace is cluster-scoped although its UPDATE carries a namespace" {
  evaluate namespace-update-namespaced-owner.json
  assert_rejected
  assert_message_contains 'Namespace "widgets" is cluster-scoped' 'owner-kind=Extension'
  evaluate namespace-create-cluster-owner.json
  assert_quiet_accept
}

@test "an UPDATE that changes no owner marker stands as it was judged: a Namespace labelled against the scope rule before the policy" {
  evaluate namespace-update-namespaced-owner-kept.json
  assert_quiet_accept
  # The object breaks the rule as it stands: its creation is refused, as the audit sees it.
  jq '.operation = "CREATE" | .oldObject = null' "$FIXTURES/namespace-update-namespaced-owner-kept.json" >"$BATS_TEST_TMPDIR/create.json"
  evaluate "$BATS_TEST_TMPDIR/create.json"
  assert_rejected
  assert_message_contains 'Namespace "widgets" is cluster-scoped'
}

@test "an empty ownerKindLabel turns the scope rules off" {
  evaluate clusterrole-create-namespaced-owner.json --settings-json '{"ownerKindLabel": ""}'
  assert_quiet_accept
}

@test "clusterScopedOwnerKinds lists the kinds allowed on cluster-scoped objects" {
  evaluate clusterrole-create-namespaced-owner.json --settings-json '{"clusterScopedOwnerKinds": ["ClusterExtension", "Extension"]}'
  assert_quiet_accept
}

@test "namespace confinement: a namespaced owner from another namespace is rejected" {
  evaluate configmap-owner-other-namespace.json -s "$SETTINGS/olm-confined.yaml"
  assert_rejected
  assert_message_contains 'ConfigMap "widget-config" in namespace "team-a" is owned by a namespaced owner' \
    'olm.operatorframework.io/owner-kind=Extension' 'example.com/owner-namespace=team-b' 'only objects in its own namespace'
}

@test "namespace confinement: the owner's own namespace is accepted" {
  evaluate configmap-owner-same-namespace.json -s "$SETTINGS/olm-confined.yaml"
  assert_quiet_accept
}

@test "namespace confinement does not apply to cluster-scoped owner kinds" {
  evaluate configmap-cluster-owner-other-namespace.json -s "$SETTINGS/olm-confined.yaml"
  assert_quiet_accept
}

@test "namespace confinement is off by default" {
  evaluate configmap-owner-other-namespace.json
  assert_quiet_accept
}

@test "a hook Job relabelled by another owner is rejected" {
  evaluate job-helm-hook-owner-change.json
  assert_rejected
  assert_message_contains 'Job "widget-db-migrate" in namespace "widgets" is owned by [olm.operatorframework.io/owner-name=ext-a]'
}
