#!/usr/bin/env bats
# The tools' rules that look something up (a context-aware policy: Kubewarden's `kubernetes`
# host capability), through the built module: what the module is granted, and that a lookup
# that fails or is not granted is a clear refusal (403), never a 500 and never an acceptance.
# Sessions are kwctl's recorded host-capability sessions; the corpus (corpus.bats) replays one
# per write.

load common

setup_file() {
  export CORPUS="$BATS_FILE_TMPDIR/corpus"
  python3 "$ROOT/e2e-tests/corpus/corpus.py" build "$CORPUS"
  "$POLICY_HOST" verify-manifest "$ROOT/deploy/all-tools.yaml" "$POLICY" | jq .settings >"$BATS_FILE_TMPDIR/all-tools.json"
  "$POLICY_HOST" verify-manifest "$ROOT/deploy/identity/olm-v1-operator.yaml" "$POLICY" | jq .settings >"$BATS_FILE_TMPDIR/olm-v1-operator.json"
  echo '[]' >"$BATS_FILE_TMPDIR/empty.yml"
}

upgrade() { echo "$CORPUS/olm-v0/upgrade-relabels-deployment"; }

@test "the module's metadata grants the kinds the tools' rules look up" {
  run --separate-stderr "$POLICY_HOST" inspect "$POLICY"
  assert_success
  for kind in ClusterServiceVersion HelmRelease ClusterExtension; do
    [[ "$output" == *"$kind"* ]] || fail "contextAwareResources lack $kind: $output"
  done
}

@test "an OLM v0 upgrade is accepted when the new CSV replaces the old one (replayed lookup)" {
  evaluate "$(upgrade).json" -s "$BATS_FILE_TMPDIR/all-tools.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$(upgrade).session.yml"
  assert_quiet_accept
}

@test "a lookup the policy is not granted is a 403 refusal that says so" {
  evaluate "$(upgrade).json" -s "$BATS_FILE_TMPDIR/all-tools.json"
  assert_rejected
  assert_message_contains 'would change its owner to [olm.owner=cert-manager.v1.17.1]' \
    "Whether the new owner replaces the current one by olm-v0's upgrade rule could not be checked, and the policy refuses what it cannot check" \
    'Policy has not been granted access to Kubernetes operators.coreos.com/v1alpha1/ClusterServiceVersion resources' \
    "List the kind in the policy's contextAwareResources"
  # In the host's words: kwctl and policy-server refuse it before their callback handler, so
  # without the handler's "Callback evaluation failure: ".
  assert_message_contains '(operators.coreos.com/v1alpha1) failed: Host error: Policy has not been granted access'
}

# kwctl 1.36 and later: --allowed-host-capabilities ('*' by default), checked before the kind.
kwctl_grants_host_capabilities() {
  [[ "$(basename "$KWCTL")" != kwctl ]] && return 0
  "$KWCTL" run --help 2>/dev/null | grep -q -- --allowed-host-capabilities
}

@test "a host capability the policy is not allowed to call is a 403 refusal that says what to grant" {
  kwctl_grants_host_capabilities || skip "$KWCTL has no --allowed-host-capabilities (Kubewarden before 1.36 grants every capability)"
  # The flag takes any number of values: another flag ends them.
  evaluate "$(upgrade).json" --allowed-host-capabilities 'oci/*' -s "$BATS_FILE_TMPDIR/all-tools.json" \
    --allow-context-aware --replay-host-capabilities-interactions "$(upgrade).session.yml"
  assert_rejected
  assert_message_contains "Policy has not been granted access to the 'kubernetes/get_resource' host capability" \
    'Grant the policy the host capabilities kubernetes/get_resource and kubernetes/list_resources_all' \
    "spec.namespacedPoliciesCapabilities"
  # The capabilities metadata.yml declares are enough.
  evaluate "$(upgrade).json" --allowed-host-capabilities kubernetes/get_resource kubernetes/list_resources_all \
    -s "$BATS_FILE_TMPDIR/all-tools.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$(upgrade).session.yml"
  assert_quiet_accept
  evaluate "$(upgrade).json" --allowed-host-capabilities 'kubernetes/*' -s "$BATS_FILE_TMPDIR/all-tools.json" \
    --allow-context-aware --replay-host-capabilities-interactions "$(upgrade).session.yml"
  assert_quiet_accept
}

@test "an allowed-host-capabilities pattern kwctl refuses is refused before the policy runs" {
  kwctl_grants_host_capabilities || skip "$KWCTL has no --allowed-host-capabilities"
  for bad in 'kubernetes' 'oci*' 'unknown/v1/op'; do
    run --separate-stderr "$KWCTL" run --allowed-host-capabilities "$bad" -r "$(upgrade).json" "file://$POLICY"
    assert_failure
    [[ -z "$output" ]] || fail "$bad: answered $output"
  done
}

@test "a lookup that finds nothing is an answer; one the host cannot answer is a 403 refusal naming the lookup" {
  # Not found (the host's words: "Cannot find ... named '...'"): no such CSV replaces the owner.
  evaluate "$(upgrade).json" -s "$BATS_FILE_TMPDIR/all-tools.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$CORPUS/olm-v0/relabel-to-a-csv-that-does-not-exist.session.yml"
  assert_rejected
  assert_message_contains "The new owner does not replace the current one by olm-v0's upgrade rule (its replacement chain: ClusterServiceVersion \"cert-manager.v1.17.1\" in namespace \"cert-manager\" (operators.coreos.com/v1alpha1) does not exist)"
  [[ "$(message)" != *"could not be checked"* && "$(message)" != *"Grant"* && "$(message)" != *"lookups.yaml"* ]] ||
    fail "a CSV that does not exist reads as a failure to check: $(message)"
  evaluate "$(upgrade).json" -s "$BATS_FILE_TMPDIR/all-tools.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$BATS_FILE_TMPDIR/empty.yml"
  assert_rejected
  assert_message_contains 'could not be checked' 'failed: Host error: Callback evaluation failure: the list of recorded responses is empty. Let the policy server read the kind'
  # Under RUST_BACKTRACE=1 kwctl's and policy-server's error carries their stack backtrace:
  # the message ends before it.
  RUST_BACKTRACE=1 evaluate "$(upgrade).json" -s "$BATS_FILE_TMPDIR/all-tools.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$BATS_FILE_TMPDIR/empty.yml"
  [[ "$(message)" != *"Stack backtrace"* && "$(message)" != *$'\n'* ]] || fail "the host's backtrace is in the message: $(message)"
}

@test "the issue's OLM v1 install: the extension's service account creates its ServiceAccount under the identity preset" {
  local w="$CORPUS/olm-v1/helm-install-serviceaccount-as-installer"
  evaluate "$w.json" -s "$BATS_FILE_TMPDIR/olm-v1-operator.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$w.session.yml"
  assert_quiet_accept
  # Without the lookup, the installer cannot be told apart: refused, saying why.
  evaluate "$w.json" -s "$BATS_FILE_TMPDIR/olm-v1-operator.json"
  assert_rejected
  assert_message_contains 'service account argocd-system/argocd-installer may not create it' \
    "bindings[0] (serviceAccounts olmv1-system/operator-controller-controller-manager openshift-operator-controller/operator-controller-controller-manager, the owner's installer)" \
    "The owner's installer could not be looked up, and the policy refuses what it cannot check"
}

@test "a Flux release named by spec.releaseName is looked up; one named by the HelmRelease's name is not" {
  local w="$CORPUS/flux-helm/install-with-release-name"
  evaluate "$w.json" -s "$BATS_FILE_TMPDIR/all-tools.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$w.session.yml"
  assert_quiet_accept
  # The default naming and a target namespace need no lookup: no session at all.
  evaluate "$CORPUS/flux-helm/install-with-target-namespace.json" -s "$BATS_FILE_TMPDIR/all-tools.json"
  assert_quiet_accept
}

@test "verify-manifest refuses a preset whose settings look up a kind its contextAwareResources do not grant" {
  sed '/^  contextAwareResources:$/,/^  rules:$/{/^  rules:$/!d}' "$ROOT/deploy/all-tools.yaml" >"$BATS_TEST_TMPDIR/all-tools.yaml"
  run --separate-stderr "$POLICY_HOST" verify-manifest "$BATS_TEST_TMPDIR/all-tools.yaml" "$POLICY"
  assert_failure
  [[ "$stderr" == *"spec.contextAwareResources must list {apiVersion: olm.operatorframework.io/v1, kind: ClusterObjectSet}: settings schemes[0].tool: olm-v1 looks it up"* ]] ||
    fail "$stderr"
  # Each kind on its own: without the ClusterServiceVersion alone.
  sed '/^    - apiVersion: operators.coreos.com\/v1alpha1$/,/^      kind: ClusterServiceVersion$/d' "$ROOT/deploy/all-tools.yaml" >"$BATS_TEST_TMPDIR/no-csv.yaml"
  run --separate-stderr "$POLICY_HOST" verify-manifest "$BATS_TEST_TMPDIR/no-csv.yaml" "$POLICY"
  assert_failure
  [[ "$stderr" == *"spec.contextAwareResources must list {apiVersion: operators.coreos.com/v1alpha1, kind: ClusterServiceVersion}: settings schemes[1].tool: olm-v0 looks it up"* ]] ||
    fail "$stderr"
}

@test "a recorded session's request that does not match what the policy asks is refused, not replayed" {
  local w="$CORPUS/olm-v0/upgrade-relabels-deployment"
  evaluate "$w.json" -s "$BATS_FILE_TMPDIR/all-tools.json" --allow-context-aware \
    --replay-host-capabilities-interactions "$CORPUS/flux-helm/install-with-release-name.session.yml"
  assert_rejected
  assert_message_contains 'Replay error: unexpected request' 'could not be checked'
}
