#!/usr/bin/env bats
# The owner lifecycle: stale writers of the same owner fenced by revision, and an object
# handed over from one owner to another in one write.

load common

@test "revision fencing: a boxcutter revision 2 writing after revision 3 is refused" {
  evaluate deployment-revision-2-after-3.json
  assert_rejected
  assert_message_contains 'Deployment "widget-controller" in namespace "widgets" is owned by' \
    'olm.operatorframework.io/owner-name=widgets' 'at revision 3 (olm.operatorframework.io/revision)' \
    'would write revision 2' 'a stale writer (an older revision or replica of the same owner) cannot roll the object back' \
    'write the older content as a new revision above 3'
}

@test "revision fencing: revision 4 over revision 3 is accepted quietly" {
  evaluate deployment-revision-4-over-3.json
  assert_quiet_accept
}

@test "revision fencing: a revision that is not a canonical decimal is refused, naming the form" {
  evaluate deployment-revision-not-a-number.json
  assert_rejected
  assert_message_contains 'olm.operatorframework.io/revision="v4"' 'not a revision' \
    'non-negative decimal integer that fits in 64 bits'
}

@test "revision fencing is off with revisionAnnotation \"\"" {
  evaluate deployment-revision-2-after-3.json --settings-json '{"revisionAnnotation": ""}'
  assert_quiet_accept
}

@test "handover: the current owner names its successor in an ordinary write" {
  evaluate crd-handover-named.json -s "$SETTINGS/olm-handover.yaml"
  assert_quiet_accept
}

@test "handover: the named successor takes the CRD in one write, with a warning naming both" {
  evaluate crd-handover-taken.json -s "$SETTINGS/olm-handover.yaml"
  assert_accepted
  assert_warning_contains 'CustomResourceDefinition "widgets.example.com" handed over from owner' \
    'olm.operatorframework.io/owner-name=ext-a' 'to owner' 'olm.operatorframework.io/owner-name=ext-b'
}

@test "handover: another owner racing the successor is refused, naming who was named" {
  evaluate crd-handover-taken-by-other.json -s "$SETTINGS/olm-handover.yaml"
  assert_rejected
  assert_message_contains 'which handed it over to [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-b]' \
    'not to [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-c]'
}

@test "handover: works with adoption and orphaning disabled" {
  evaluate crd-handover-taken.json --settings-json \
    '{"handoverAnnotation": "single-owner.kubewarden.io/handover-to", "allowAdoption": false, "allowOrphaning": false}'
  assert_accepted
  assert_warning_contains 'handed over'
}

@test "handover: a malformed successor is refused with the expected form" {
  evaluate crd-handover-malformed.json -s "$SETTINGS/olm-handover.yaml"
  assert_rejected
  assert_message_contains 'single-owner.kubewarden.io/handover-to="ext-b"' 'does not name a successor' \
    'comma-separated key=value pairs of the owner keys'
}

@test "handover is off by default: the owner change is refused as before" {
  evaluate crd-handover-taken.json
  assert_rejected
  assert_message_contains 'would change its owner to'
}

@test "an owner change names the handover route when handover is on" {
  evaluate crd-owner-change.json -s "$SETTINGS/olm-handover.yaml"
  assert_rejected
  assert_message_contains 'the current owner hands it over by setting the annotation single-owner.kubewarden.io/handover-to=olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=ext-b'
}

@test "Helm preset: a release hands a ClusterRole over to another release" {
  evaluate clusterrole-helm-handover.json -s "$SETTINGS/helm.yaml"
  assert_accepted
  assert_warning_contains 'ClusterRole "widget-editor" handed over from owner [meta.helm.sh/release-name=widgets-a, meta.helm.sh/release-namespace=widgets]' \
    'to owner [meta.helm.sh/release-name=widgets-b, meta.helm.sh/release-namespace=widgets]'
}

@test "an UPDATE without the stored object is unreadable (400), not an adoption" {
  evaluate malformed-update-without-old-object.json
  assert_unreadable
  assert_message_contains 'request.oldObject is missing or null, but every UPDATE request carries it'
}
