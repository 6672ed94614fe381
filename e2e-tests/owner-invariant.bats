#!/usr/bin/env bats
# The same-owner invariant on UPDATE, with OLM v1 default settings unless said otherwise.

load common

@test "a second ClusterExtension taking a CRD is rejected, naming both owners" {
  evaluate crd-owner-change.json
  assert_rejected
  assert_message_contains 'CustomResourceDefinition "widgets.example.com" is owned by [olm.operatorframework.io/owner-name=ext-a]' \
    'change its owner to [olm.operatorframework.io/owner-name=ext-b]' \
    'the current owner must first release it by removing its owner keys'
  assert_equal "$(jq -r .uid <<<"$output")" e2e-customresourcedefinition-update
}

@test "an update by the same owner is accepted without warnings" {
  evaluate crd-same-owner-update.json
  assert_quiet_accept
}

@test "an owner changed in part (owner-kind added) is a change" {
  evaluate crd-owner-kind-added.json
  assert_rejected
  assert_message_contains '[olm.operatorframework.io/owner-kind (unset)]' '[olm.operatorframework.io/owner-kind=ClusterExtension]'
}

@test "adoption is accepted with a warning naming the object and the new owner" {
  evaluate crd-adopt.json
  assert_accepted
  assert_warning_contains 'CustomResourceDefinition "widgets.example.com" adopted by owner' \
    'olm.operatorframework.io/owner-kind=ClusterExtension' 'olm.operatorframework.io/owner-name=ext-b'
}

@test "orphaning is accepted with a warning naming the object and the lost owner" {
  evaluate crd-orphan.json
  assert_accepted
  assert_warning_contains 'CustomResourceDefinition "widgets.example.com" orphaned' 'olm.operatorframework.io/owner-name=ext-a'
}

@test "adoption is rejected when allowAdoption is false" {
  evaluate crd-adopt.json -s "$SETTINGS/strict.json"
  assert_rejected
  assert_message_contains 'has no owner' 'olm.operatorframework.io/owner-name=ext-b' 'allowAdoption: false'
}

@test "orphaning is rejected when allowOrphaning is false" {
  evaluate crd-orphan.json --settings-json '{"allowOrphaning": false}'
  assert_rejected
  assert_message_contains 'is owned by [' 'olm.operatorframework.io/owner-name=ext-a' 'allowOrphaning: false'
}

@test "an unowned object stays unowned quietly, even in strict mode" {
  evaluate crd-unowned-update.json -s "$SETTINGS/strict.json"
  assert_quiet_accept
}

@test "a status subresource update follows the same rule" {
  evaluate crd-status-owner-change.json
  assert_rejected
  assert_message_contains '"widgets.example.com" (subresource status) is owned by' 'owner-name=ext-a' 'owner-name=ext-b'
}

@test "DELETE is accepted, even in strict mode" {
  evaluate crd-delete.json -s "$SETTINGS/strict.json"
  assert_quiet_accept
}

@test "CONNECT is accepted" {
  evaluate pod-exec-connect.json
  assert_quiet_accept
}

@test "Helm: a release taking another release's ClusterRole is rejected, naming both releases" {
  evaluate clusterrole-helm-release-change.json -s "$SETTINGS/helm.yaml"
  assert_rejected
  assert_message_contains 'ClusterRole "widget-editor" is owned by [meta.helm.sh/release-name=widgets-a]' \
    '[meta.helm.sh/release-name=widgets-b]' 'annotation meta.helm.sh/release-name, annotation meta.helm.sh/release-namespace'
}

@test "Helm: an upgrade by the same release is accepted" {
  evaluate clusterrole-helm-same-release.json -s "$SETTINGS/helm.yaml"
  assert_quiet_accept
}

@test "Argo CD: another Application's tracking id is rejected, though the chart's instance label is the same" {
  evaluate deployment-argocd-app-change.json -s "$SETTINGS/argocd.yaml"
  assert_rejected
  assert_message_contains 'Deployment "widget-controller" in namespace "widgets" is owned by [argocd.argoproj.io/tracking-id=widgets-staging:apps/Deployment:widgets/widget-controller]' \
    '[argocd.argoproj.io/tracking-id=widgets-prod:apps/Deployment:widgets/widget-controller]' 'annotation argocd.argoproj.io/tracking-id'
}

@test "Argo CD: a sync by the same Application is accepted" {
  evaluate deployment-argocd-same-app.json -s "$SETTINGS/argocd.yaml"
  assert_quiet_accept
}

@test "Argo CD label tracking (legacy): another instance label is rejected, a chart's shared label is a false match" {
  evaluate deployment-argocd-instance-change.json -s "$SETTINGS/argocd-label-tracking.yaml"
  assert_rejected
  assert_message_contains 'is owned by [app.kubernetes.io/instance=widgets-staging]' '[app.kubernetes.io/instance=widgets-prod]'
  # Two Applications deploying the same chart look like one owner to label tracking.
  evaluate deployment-argocd-app-change.json -s "$SETTINGS/argocd-label-tracking.yaml"
  assert_quiet_accept
}

@test "the answer is one line with kwctl's fields: uid, allowed, status when it says something, auditAnnotations, warnings" {
  evaluate crd-owner-change.json
  assert_equal "${#lines[@]}" 1
  assert_equal "$(jq -c 'keys_unsorted' <<<"$output")" '["uid","allowed","status","auditAnnotations","warnings"]'
  assert_equal "$(jq -c '[.status | keys_unsorted, .auditAnnotations, .warnings]' <<<"$output")" '[["message","code"],null,null]'
  evaluate crd-same-owner-update.json
  assert_equal "${#lines[@]}" 1
  assert_equal "$(jq -c '.' <<<"$output")" '{"uid":"e2e-customresourcedefinition-update","allowed":true,"auditAnnotations":null,"warnings":null}'
  evaluate malformed-labels-not-a-map.json
  assert_equal "$(jq -c '.status | keys_unsorted' <<<"$output")" '["message","code"]'
}

@test "Flux: another Kustomization is rejected, a new image from the same one accepted" {
  evaluate deployment-flux-kustomization-change.json -s "$SETTINGS/flux.yaml"
  assert_rejected
  assert_message_contains '[kustomize.toolkit.fluxcd.io/name=widgets-a]' '[kustomize.toolkit.fluxcd.io/name=widgets-b]'
  evaluate deployment-flux-image-update.json -s "$SETTINGS/flux.yaml"
  assert_quiet_accept
}

@test "the request may be a whole AdmissionReview" {
  evaluate review-crd-owner-change.json
  assert_rejected
  assert_message_contains 'owner-name=ext-a' 'owner-name=ext-b'
}
