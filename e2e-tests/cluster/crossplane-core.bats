#!/usr/bin/env bats
# Crossplane for real (its core v2.4.0 and function-patch-and-transform v0.5.0, built from the Go
# module proxy: control-plane/crossplane/go.mod and crossplane-function/go.mod, started by
# control-plane/crossplane.sh; none: skipped) under deploy/crossplane.yaml, and under
# deploy/all-tools.yaml on the all-tools cluster: a namespaced XR (an XRD of apiVersion v2, a
# Pipeline Composition) composes a ConfigMap, an update of the XR changes it, and deleting the XR
# deletes it, nothing refused; a second XR rendering the name of the first's object meets the API
# server's one-controller rule, before any webhook, with or without the policy; a second XR
# rendering the name of an object a deleted XR left behind (orphaned: its label kept) is refused by
# the policy, the refusal in its Synced condition, and takes the object without the policy; an XR
# created again under its name adopts the object it left behind; every kind of write the core
# made (the witness webhook's records) is in Crossplane's corpus. Helpers: crossplane-core.bash.

load ../cluster/common
load ../cluster/crossplane-core

setup_file() {
  crossplane_up
  [ -z "${XP_SKIP:-}" ] || return 0
  "$ROOT/control-plane/witness.sh" up crossplane "$XP_USER"
  crossplane_env
  shop_type
}

teardown_file() {
  [ -z "${XP_SKIP:-}" ] || return 0
  "$ROOT/control-plane/witness.sh" down crossplane
  crossplane_down
}

setup() {
  [ -z "${XP_SKIP:-}" ] || skip "$XP_SKIP"
  crossplane_env
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
}

teardown() {
  [ -n "${ns:-}" ] || return 0
  policy_back "$XP_POLICY" probe_refused "$ns"
  kubectl delete shops -n "$ns" --all --wait=false >/dev/null 2>&1 || true
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

@test "crossplane core: an XR's compose, update and deletion pass the policy; deleting it deletes its ConfigMap" {
  shop "$ns" web v1
  run synced "$ns" web
  [[ "$output" == True\|* ]] || fail "Synced: $output"
  local cm
  cm="$(composed_of "$ns" web)"
  [ -n "$cm" ] || fail "no ConfigMap in web's resourceRefs"
  assert_equal "$(label_of "$ns" "$cm" "$COMPOSITE")" web
  assert_equal "$(controller_of "$ns" "$cm")" Shop/web
  assert_equal "$(setting_of "$ns" "$cm")" v1
  # Update: the patched field follows the XR's.
  shop "$ns" web v2
  setting_is() { [ "$(setting_of "$ns" "$cm")" = v2 ]; }
  until_true 60 setting_is
  run synced "$ns" web
  [[ "$output" == True\|* ]] || fail "Synced after the update: $output"
  assert_equal "$(composed_of "$ns" web)" "$cm"
  # Deleted: the core removes its finalizer, the garbage collector deletes the ConfigMap.
  kubectl delete -n "$ns" shop web --wait=true --timeout 60s >/dev/null
  gone() { ! kubectl get configmap "$cm" -n "$ns" >/dev/null 2>&1; }
  until_true 60 gone
}

@test "crossplane core: a second XR rendering the first's object name meets the API server's one-controller rule, with the policy and without" {
  shop "$ns" first v1 shared
  run synced "$ns" first
  [[ "$output" == True\|* ]] || fail "first: $output"
  assert_equal "$(label_of "$ns" shared "$COMPOSITE")" first
  shop "$ns" second v2 shared
  run synced "$ns" second
  # The apply adds second's controller reference beside first's (a list keyed by uid): invalid,
  # refused by the API server's validation before any webhook; the core puts the refusal in an
  # event and marks the resource unsynced (composition_functions.go: kerrors.IsInvalid).
  assert_equal "$output" "False|ReconcileError|Unsynced resources: settings"
  run kubectl get events -n "$ns" --field-selector "involvedObject.name=second" -o jsonpath='{.items[*].message}'
  [[ "$output" == *"Only one reference can have Controller set to true"* ]] || fail "events: $output"
  [[ "$output" != *"denied the request"* ]] || fail "a webhook answered: $output"
  assert_equal "$(label_of "$ns" shared "$COMPOSITE"):$(controller_of "$ns" shared):$(setting_of "$ns" shared)" first:Shop/first:v1
  # Without the policy: the same.
  policy_off "$XP_POLICY" probe_refused "$ns"
  local handled second taken
  handled="$(reconcile "$ns" second)"
  # Its compose comes right after the request is handled; a moment for its status.
  sleep 3
  second="$(condition_of "$ns" shop second Synced)"
  taken="$(label_of "$ns" shared "$COMPOSITE"):$(controller_of "$ns" shared)"
  policy_on "$XP_POLICY" probe_refused "$ns"
  assert_equal "$handled" ""
  assert_equal "$second" "False|ReconcileError|Unsynced resources: settings"
  assert_equal "$taken" first:Shop/first
}

@test "crossplane core: a second XR taking the object a deleted XR left behind is refused, the refusal in its Synced condition; without the policy it takes it" {
  shop "$ns" first v1 left
  run synced "$ns" first
  [[ "$output" == True\|* ]] || fail "first: $output"
  # Deleted with its objects orphaned: the garbage collector removes the controller reference;
  # the label stays. Once the garbage collector knows the object and the core is done composing
  # (gc_knows, settled: else the object is lost).
  gc_knows "$ns" left
  settled "$ns" first
  kubectl delete -n "$ns" shop first --cascade=orphan --wait=true --timeout 60s >/dev/null
  orphaned() { kubectl get configmap left -n "$ns" -o json | jq -e '(.metadata.ownerReferences // []) == []' >/dev/null; }
  until_true 60 orphaned
  assert_equal "$(label_of "$ns" left "$COMPOSITE")" first
  shop "$ns" second v2 left
  run synced "$ns" second
  [[ "$output" == "False|ReconcileError|cannot compose resources: cannot apply composed resource \"settings\": admission webhook \"$XP_WEBHOOK\" denied the request: ConfigMap \"left\" in namespace \"$ns\" is owned by [$COMPOSITE=first]"*"this UPDATE would change its owner to [$COMPOSITE=second]"* ]] ||
    fail "not the policy's refusal: $output"
  echo "# Synced of the refused XR: $output" >&3
  assert_equal "$(label_of "$ns" left "$COMPOSITE"):$(controller_of "$ns" left):$(setting_of "$ns" left)" first::v1
  # Without the policy: second's next compose takes it, label and controller.
  policy_off "$XP_POLICY" probe_refused "$ns"
  local handled second taken
  handled="$(reconcile "$ns" second)"
  second="$(synced_becomes "$ns" second 'True|*')"
  taken="$(label_of "$ns" left "$COMPOSITE"):$(controller_of "$ns" left):$(setting_of "$ns" left)"
  policy_on "$XP_POLICY" probe_refused "$ns"
  assert_equal "$handled" ""
  [[ "$second" == True\|* ]] || fail "second without the policy: $second"
  assert_equal "$taken" second:Shop/second:v2
}

@test "crossplane core: an XR created again under its name adopts the object it left behind" {
  shop "$ns" web v1 kept
  run synced "$ns" web
  [[ "$output" == True\|* ]] || fail "web: $output"
  gc_knows "$ns" kept
  settled "$ns" web
  kubectl delete -n "$ns" shop web --cascade=orphan --wait=true --timeout 60s >/dev/null
  orphaned() { kubectl get configmap kept -n "$ns" -o json | jq -e '(.metadata.ownerReferences // []) == []' >/dev/null; }
  until_true 60 orphaned
  shop "$ns" web v2 kept
  run synced "$ns" web
  [[ "$output" == True\|* ]] || fail "web again: $output"
  assert_equal "$(label_of "$ns" kept "$COMPOSITE"):$(controller_of "$ns" kept):$(setting_of "$ns" kept)" web:Shop/web:v2
}

@test "crossplane core: every kind of write Crossplane's core made in this file is in its corpus" {
  run python3 "$ROOT/e2e-tests/corpus/witnessed.py" crossplane "$CLUSTER_DIR/witness-crossplane.jsonl"
  echo "$output" | sed 's/^/# /' >&3
  assert_success
}
