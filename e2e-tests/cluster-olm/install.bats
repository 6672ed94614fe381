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
  run kubectl patch clusterextension widgets --type merge -p '{"spec":{"source":{"catalog":{"version":"1.1.0"}}}}'
  assert_success
  wait_installed widgets 1.1.0
  say "widgets: $(condition widgets Installed); status.install.bundle: $(kubectl get clusterextension widgets -o jsonpath='{.status.install.bundle}')"
  assert_equal "$(kubectl get crd "$CRD" -o json | jq -r '.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties | has("color")')" true
  assert_equal "$(kubectl get crd "$CRD" -o json | jq -r '[.spec.versions[0].additionalPrinterColumns[].name] | join(",")')" Size,Color
  assert_owned customresourcedefinition "$CRD" "" widgets widgets-system 2
  assert_owned deployment widgets-operator-controller-manager widgets-system widgets widgets-system 2
  needs_request_log
  assert_equal "$(judged "$CRD" UPDATE | jq -s 'map(select(.verdict.allowed)) | length > 0')" true
  run refused
  assert_output ""
}

@test "$OLM_PRESET: a second extension (gadgets-operator) shipping the same CRD is not installed: Progressing=True reason Retrying, and the CRD stays the first extension's" {
  local progressing message source file
  # 1.1.0 ships the CRD as widgets-operator 1.1.0 does, so OLM's CRD upgrade-safety check passes
  # it: what stops it is an ownership check.
  apply "$(extension gadgets gadgets-operator 1.1.0 gadgets-system gadgets-installer)"
  assert_success
  wait_retrying gadgets
  # operator-controller retries with backoff: the condition holds, and it never installs.
  sleep 5
  progressing="$(condition gadgets Progressing)"
  assert_equal "$(jq -r '.status + " " + .reason' <<<"$progressing")" "True Retrying"
  refute [ "$(jq -r .status <<<"$(condition gadgets Installed)")" = True ]
  message="$(jq -r .message <<<"$progressing")"
  if [[ "$message" == *"admission webhook \"$OLM_POLICY_WEBHOOK\" denied the request"* ]]; then
    source="the policy ($OLM_POLICY_WEBHOOK)"
  elif [[ "$message" == *"failed to get release state using server-side dry-run: CustomResourceDefinition '$CRD' already exists in namespace '' and cannot be managed by operator-controller"* ]] ||
    [[ "$message" == *"exists and cannot be imported into the current release"* ]]; then
    # Helm's install refuses an existing object whose meta.helm.sh annotations name another
    # release ("... exists and cannot be imported into the current release: invalid ownership
    # metadata"), in the dry run operator-controller's Helm applier starts with, and
    # operator-controller rewrites that message (internal/operator-controller/action/error).
    source="Helm's own ownership check (in operator-controller's Helm applier, which rewrites Helm's message), before any write: the policy saw none"
  else
    fail "neither Helm's ownership check nor the policy: $message"
  fi
  file="second-extension-${OLM_SUITE}.txt"
  record "$file" "$(printf 'preset: %s\nsource: %s\nInstalled: %s\nProgressing: %s\nmessage:\n%s' \
    "$OLM_PRESET" "$source" "$(condition gadgets Installed)" "$(jq -c 'del(.message)' <<<"$progressing")" "$message")"
  say "gadgets Installed: $(condition gadgets Installed | jq -c '{status, reason}')"
  say "gadgets Progressing: $(jq -c '{status, reason}' <<<"$progressing")"
  say "the message users see ($source), in ${OLM_RUN_DIR#"$ROOT"/}/$file:"
  say "$message"
  # The CRD is still the first extension's, and no write of the second one's reached it.
  assert_owned customresourcedefinition "$CRD" "" widgets widgets-system 2
  run witness ".name == \"$CRD\" and .object.labels[\"olm.operatorframework.io/owner-name\"] == \"gadgets\""
  if [[ "$source" == Helm* ]]; then
    assert_output ""
  fi
}
