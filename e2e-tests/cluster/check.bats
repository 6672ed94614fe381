#!/usr/bin/env bats
# `kubectl single-owner check` against the deployment the real Kubewarden controller made of
# the shipped manifests: healthy, it exits 0; each fault planted (a policy edited without
# regenerating its conditions, a policy that cannot be scheduled, a webhook the controller
# wrote without conditions, a webhook calling a Service that is not there) is found, one line
# each, exit 1; the deployment is put back after each.

load ../cluster/common

PLUGIN="$ROOT/target/host/kubectl-single_owner"

setup() {
  [ "${WEBHOOKS:-}" = controller ] || skip "the webhooks are the emulation's (WEBHOOKS=$WEBHOOKS)"
  [ -x "$PLUGIN" ] || fail "no plugin at $PLUGIN (make kubectl-plugin)"
  POLICIES=()
  local m
  for m in $MANIFESTS; do POLICIES+=(--policy "$(awk '/^  name: / {print $2; exit}' "$m")"); done
}

check() { run --separate-stderr "$PLUGIN" check "$@"; }

@test "(check) the deployment the controller made of every shipped manifest has no fault" {
  check "${POLICIES[@]}"
  assert_success
  assert_output "$(wc -w <<<"$MANIFESTS") ClusterAdmissionPolicies of single-owner-policy checked: no fault"
}

@test "(check) settings edited without regenerating the conditions: found, and gone once put back" {
  local policy=single-owner-helm before
  before="$(kubectl get clusteradmissionpolicy "$policy" -o jsonpath='{.spec.settings.ownerAnnotations}')"
  kubectl patch clusteradmissionpolicy "$policy" --type json \
    -p '[{"op": "add", "path": "/spec/settings/ownerAnnotations/-", "value": "example.com/owner"}]' >/dev/null
  check --policy "$policy"
  kubectl patch clusteradmissionpolicy "$policy" --type merge -p "{\"spec\": {\"settings\": {\"ownerAnnotations\": $before}}}" >/dev/null
  assert_equal "$status" 1
  assert_output --partial "policy $policy: spec.matchConditions lack what its settings generate (ownership-change)"
  kubectl wait --for jsonpath='{.status.policyStatus}'=active --timeout 120s clusteradmissionpolicy "$policy" >/dev/null
  check --policy "$policy"
  assert_success
}

@test "(check) a policy whose PolicyServer does not exist: not active, and the server named" {
  kubectl get clusteradmissionpolicy single-owner-flux -o json |
    jq '.metadata = {name: "single-owner-flux-elsewhere"} | .spec.policyServer = "elsewhere" | del(.status)' |
    kubectl apply -f - >/dev/null
  sleep 3 # the controller's first reconcile
  check --policy single-owner-flux-elsewhere
  kubectl delete clusteradmissionpolicy single-owner-flux-elsewhere --wait=false >/dev/null
  assert_equal "$status" 1
  assert_line --partial "policy single-owner-flux-elsewhere: not active"
  assert_line "policy single-owner-flux-elsewhere: its PolicyServer elsewhere does not exist"
}

@test "(check) a webhook written without conditions (so every write under Fail), calling a missing Service: each found" {
  local config
  config="$(policy_id single-owner-olm-v1)"
  # The controller, stopped, cannot put its webhook back while the faults stand (it rewrites
  # it within seconds); what it would write after its start-up check failed: no conditions.
  "$ROOT/control-plane/cluster.sh" controller-stop
  kubectl get validatingwebhookconfiguration "$config" -o json >"$BATS_TEST_TMPDIR/webhook.json"
  kubectl patch validatingwebhookconfiguration "$config" --type json \
    -p '[{"op": "remove", "path": "/webhooks/0/matchConditions"}, {"op": "replace", "path": "/webhooks/0/clientConfig/service/name", "value": "policy-server-gone"}]' >/dev/null
  check --policy single-owner-olm-v1
  jq 'del(.metadata.resourceVersion, .metadata.managedFields)' "$BATS_TEST_TMPDIR/webhook.json" |
    kubectl replace -f - >/dev/null
  "$ROOT/control-plane/cluster.sh" controller-start
  assert_equal "$status" 1
  assert_line --partial "webhook $config: has none of policy single-owner-olm-v1's matchConditions: the controller dropped them"
  assert_line --partial "webhook $config: calls Service $KUBEWARDEN_NAMESPACE/policy-server-gone, which does not exist"
  # No preset has an objectSelector: without its conditions, the webhook gets every write.
  assert_line --partial "webhook $config: sends every write under failurePolicy Fail"
  check --policy single-owner-olm-v1
  assert_success
}
