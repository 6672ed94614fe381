#!/usr/bin/env bats
# The identity rules and stamping through the built module, with the settings of the shipped
# presets in deploy/identity/ and requests whose userInfo names the writer as the API server
# fills it.

load common

# The settings of each preset in deploy/identity/, as JSON, in SETTINGS_<name>.
setup_file() {
  local preset
  for preset in flux-tenants olm-v1-operator helm-per-install helm-per-install-stamp; do
    export "SETTINGS_${preset//-/_}=$("$POLICY_HOST" verify-manifest "$ROOT/deploy/identity/$preset.yaml" "$POLICY" | jq -c .settings)"
  done
}

flux() { evaluate "$1" --settings-json "$SETTINGS_flux_tenants"; }

@test "Flux tenants: a tenant's account creates and changes its own namespace's objects" {
  flux configmap-tenant-create-own.json
  assert_quiet_accept
  flux configmap-tenant-edit-own.json
  assert_quiet_accept
}

@test "Flux tenants: an object stamped with another tenant's labels is Forbidden (forging)" {
  flux configmap-tenant-create-for-other.json
  assert_rejected
  assert_message_contains 'ConfigMap "widget-config" in namespace "shop": service account shop/reconciler may not create it' \
    'owner [kustomize.toolkit.fluxcd.io/name=apps, kustomize.toolkit.fluxcd.io/namespace=billing]' \
    'bindings[0] (serviceAccounts */*, where kustomize.toolkit.fluxcd.io/namespace={serviceAccount.namespace})'
}

@test "Flux tenants: a human's edit, or another tenant's, of an owned object is Forbidden (drift)" {
  flux configmap-tenant-edit-by-human.json
  assert_rejected
  assert_message_contains 'user "alice" may not change it' 'kustomize.toolkit.fluxcd.io/namespace=shop]'
  flux configmap-tenant-edit-by-other.json
  assert_rejected
  assert_message_contains 'service account billing/reconciler may not change it'
}

@test "Flux tenants: another tenant cannot delete; the garbage collector can" {
  flux configmap-tenant-delete-by-other.json
  assert_rejected
  assert_message_contains 'service account billing/reconciler may not delete it'
  flux configmap-tenant-delete-by-gc.json
  assert_quiet_accept
}

# variant FIXTURE JQ: the fixture edited by a jq program, as a file.
variant() {
  jq "$2" "$FIXTURES/$1" >"$BATS_TEST_TMPDIR/variant.json"
  echo "$BATS_TEST_TMPDIR/variant.json"
}

@test "Flux tenants: adopting an unowned object, or releasing an owned one, takes the owner's account" {
  local adopt release
  adopt="$(variant configmap-tenant-edit-own.json 'del(.oldObject.metadata.labels)')"
  flux "$adopt"
  assert_accepted
  assert_warning_contains 'adopted by owner [kustomize.toolkit.fluxcd.io/name=apps, kustomize.toolkit.fluxcd.io/namespace=shop]'
  flux "$(variant configmap-tenant-edit-by-other.json 'del(.oldObject.metadata.labels)')"
  assert_rejected
  assert_message_contains 'service account billing/reconciler may not adopt it'
  release="$(variant configmap-tenant-edit-by-other.json 'del(.object.metadata.labels)')"
  flux "$release"
  assert_rejected
  assert_message_contains 'service account billing/reconciler may not release it (remove its owner keys)'
  flux "$(variant configmap-tenant-edit-own.json 'del(.object.metadata.labels)')"
  assert_accepted
  assert_warning_contains 'orphaned: it no longer has owner'
}

@test "Flux tenants with handover: only the successor's account takes the object over" {
  local settings handover='.oldObject.metadata.annotations = {"example.com/handover-to":
    "kustomize.toolkit.fluxcd.io/name=apps,kustomize.toolkit.fluxcd.io/namespace=billing"}
    | .object.metadata.labels["kustomize.toolkit.fluxcd.io/namespace"] = "billing"'
  settings="$(jq -c '.handoverAnnotation = "example.com/handover-to"' <<<"$SETTINGS_flux_tenants")"
  evaluate "$(variant configmap-tenant-edit-by-other.json "$handover")" --settings-json "$settings"
  assert_accepted
  assert_warning_contains 'handed over from owner [kustomize.toolkit.fluxcd.io/name=apps, kustomize.toolkit.fluxcd.io/namespace=shop]'
  evaluate "$(variant configmap-tenant-edit-own.json "$handover")" --settings-json "$settings"
  assert_rejected
  assert_message_contains 'service account shop/reconciler may not take it over' \
    'owner [kustomize.toolkit.fluxcd.io/name=apps, kustomize.toolkit.fluxcd.io/namespace=billing]'
}

@test "OLM v1: operator-controller writes an extension's CRD; a hook's account can neither change nor delete it" {
  evaluate crd-same-owner-update.json --settings-json "$SETTINGS_olm_v1_operator"
  assert_quiet_accept
  evaluate crd-create-ext-a.json --settings-json "$SETTINGS_olm_v1_operator"
  assert_quiet_accept
  evaluate crd-edit-by-hook.json --settings-json "$SETTINGS_olm_v1_operator"
  assert_rejected
  assert_message_contains 'CustomResourceDefinition "widgets.example.com": service account widgets/widgets-hooks may not change it' \
    'serviceAccounts olmv1-system/operator-controller-controller-manager'
  evaluate crd-delete-by-hook.json --settings-json "$SETTINGS_olm_v1_operator"
  assert_rejected
  assert_message_contains 'may not delete it'
}

@test "without bindings nothing changes: the hook's DELETE and edit are judged by the label rules alone" {
  evaluate crd-delete-by-hook.json
  assert_quiet_accept
  evaluate crd-edit-by-hook.json
  assert_quiet_accept
}

@test "Helm per install: another release's account cannot change a release's object" {
  evaluate configmap-release-edit-by-other-release.json --settings-json "$SETTINGS_helm_per_install"
  assert_rejected
  assert_message_contains 'service account billing/helm-billing may not change it' \
    'owner [meta.helm.sh/release-name=shop, meta.helm.sh/release-namespace=shop]' 'serviceAccounts shop/helm-shop'
}

@test "stamping: a hook the release's account creates comes back with the release's annotations, as a JSONPatch" {
  evaluate job-hook-create-by-release.json --settings-json "$SETTINGS_helm_per_install_stamp"
  assert_quiet_accept
  assert_equal "$(jq -r .patchType <<<"$output")" JSONPatch
  local patch
  patch="$(jq -r .patch <<<"$output" | base64 -d)"
  # Only the two annotations are added; nothing else of the Job changes.
  assert_equal "$(jq -c 'sort_by(.path)' <<<"$patch")" \
    '[{"op":"add","path":"/metadata/annotations/meta.helm.sh~1release-name","value":"shop"},{"op":"add","path":"/metadata/annotations/meta.helm.sh~1release-namespace","value":"shop"}]'
  # The stamped Job is then the release's: the validating preset lets its account write it.
  jq '.object.metadata.annotations += {"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": "shop"}' \
    "$FIXTURES/job-hook-create-by-release.json" >"$BATS_TEST_TMPDIR/stamped.json"
  evaluate "$BATS_TEST_TMPDIR/stamped.json" --settings-json "$SETTINGS_helm_per_install"
  assert_quiet_accept
}

@test "stamping: an unbound writer's object, an owned object's update and a DELETE are not stamped" {
  local fixture
  for fixture in crd-create-ext-a.json configmap-release-edit-by-other-release.json crd-delete-by-hook.json; do
    evaluate "$fixture" --settings-json "$SETTINGS_helm_per_install_stamp"
    assert_quiet_accept
    assert_equal "$(jq -r '.patch // "none"' <<<"$output")" none
  done
}

@test "a stamping preset must be a mutating policy, and only a stamping one may be" {
  run --separate-stderr "$POLICY_HOST" verify-manifest <(sed 's/mutating: true/mutating: false/' "$ROOT/deploy/identity/helm-per-install-stamp.yaml") "$POLICY"
  assert_failure
  [[ "$stderr" == *"spec.mutating must be true for a stamping policy"* ]] || fail "$stderr"
  run --separate-stderr "$POLICY_HOST" verify-manifest <(sed 's/mutating: false/mutating: true/' "$ROOT/deploy/identity/helm-per-install.yaml") "$POLICY"
  assert_failure
  [[ "$stderr" == *"spec.mutating must be false: only the stamping policy"* ]] || fail "$stderr"
}
