#!/usr/bin/env bats
# The webhooks the real Kubewarden controller wrote for the shipped manifests, against what the
# emulation (`policy-host webhook`, used where the controller cannot run) writes for the same
# manifests: names, labels, rules, selectors, conditions, every other field of the webhook but
# where it sends (a Service here, a URL there), and the policy server's policies.yml. Runs on
# the cluster of each suite folder (cluster/, cluster-identity/ and cluster-tools/ load it).

load ../cluster/common

setup() {
  [ "${WEBHOOKS:-}" = controller ] || skip "the webhooks are the emulation's (WEBHOOKS=$WEBHOOKS)"
}

# The emulation's configurations and policies.yml for the cluster's manifests, as the
# controller's version, this server's minor and the controller's namespace make them.
emulated() {
  # shellcheck disable=SC2086
  "$ROOT/target/host/policy-host" webhook $MANIFESTS --kubewarden "$KUBEWARDEN_VERSION" \
    --url https://emulated --ca-file "$CLUSTER_DIR/certs/ca.crt" --kubernetes-minor "$KUBERNETES_MINOR" \
    --module "file://$POLICY_MODULE" --namespace "$KUBEWARDEN_NAMESPACE" \
    --policies-out "$BATS_TEST_TMPDIR/policies.yml" >"$BATS_TEST_TMPDIR/emulated.json"
}

# normalized FILE: each configuration by name, its webhook without clientConfig (the caBundle
# is each CA's; the controller names a Service, the emulation a URL) and without the fields
# the API server defaults (the emulation writes those defaults itself).
normalized() {
  jq -S '[.items[] | {kind, name: .metadata.name, labels: .metadata.labels,
      annotations: (.metadata.annotations // {} | with_entries(select(.key | startswith("kubewarden")))),
      webhook: (.webhooks[0] | del(.clientConfig)
        | .objectSelector = (.objectSelector // {}) | .matchPolicy = (.matchPolicy // "Equivalent")
        | .failurePolicy = (.failurePolicy // "Fail") | .timeoutSeconds = (.timeoutSeconds // 10)
        | if .reinvocationPolicy == "Never" then del(.reinvocationPolicy) else . end
        | .rules = [.rules[] | .scope = (.scope // "*")]),
      path: (.webhooks[0].clientConfig.service.path // (.webhooks[0].clientConfig.url | sub("^https://[^/]*"; "")))}]
    | sort_by(.name)' "$1"
}

@test "(kubewarden-controller) the controller wrote each manifest's webhook as the emulation does" {
  emulated
  kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations \
    -l app.kubernetes.io/part-of=kubewarden -o json >"$BATS_TEST_TMPDIR/controller.json"
  normalized "$BATS_TEST_TMPDIR/controller.json" >"$BATS_TEST_TMPDIR/a.json"
  normalized "$BATS_TEST_TMPDIR/emulated.json" >"$BATS_TEST_TMPDIR/b.json"
  # Every shipped manifest of this cluster has its webhook, with its conditions.
  assert_equal "$(jq length "$BATS_TEST_TMPDIR/a.json")" "$(wc -w <<<"$MANIFESTS")"
  assert_equal "$(jq '[.[] | select((.webhook.matchConditions // []) | length > 0)] | length' "$BATS_TEST_TMPDIR/a.json")" \
    "$(jq '[.[] | select((.webhook.matchConditions // []) | length > 0)] | length' "$BATS_TEST_TMPDIR/b.json")"
  run diff -u "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
  assert_success
  # The controller's webhooks call its policy server's Service, in its namespace.
  assert_equal "$(jq -r '[.items[].webhooks[0].clientConfig.service | "\(.namespace)/\(.name):\(.port)"] | unique | join(",")' \
    "$BATS_TEST_TMPDIR/controller.json")" "$KUBEWARDEN_NAMESPACE/policy-server-default:443"
}

@test "(kubewarden-controller) the policy server's policies.yml is the emulation's, entry for entry" {
  emulated
  kubectl -n "$KUBEWARDEN_NAMESPACE" get configmap policy-server-default -o jsonpath='{.data.policies\.yml}' |
    jq -S 'map_values(del(.namespacedName))' >"$BATS_TEST_TMPDIR/a.json"
  python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$BATS_TEST_TMPDIR/policies.yml" |
    jq -S . >"$BATS_TEST_TMPDIR/b.json"
  run diff -u "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
  assert_success
}

@test "(kubewarden-controller) every policy is active, and each pod's backend serves what the ConfigMap holds" {
  run kubectl get clusteradmissionpolicies -o jsonpath='{range .items[*]}{.status.policyStatus}{"\n"}{end}'
  assert_success
  assert_equal "$(sort -u <<<"$output")" active
  kubectl -n "$KUBEWARDEN_NAMESPACE" get configmap policy-server-default -o jsonpath='{.data.policies\.yml}' |
    jq -S . >"$BATS_TEST_TMPDIR/live.json"
  local pods pod
  pods="$(kubectl -n "$KUBEWARDEN_NAMESPACE" get pods -l kubewarden/policy-server=default -o jsonpath='{.items[*].metadata.name}')"
  [ -n "$pods" ] || fail "no policy server pod"
  for pod in $pods; do
    jq -S . "$CLUSTER_DIR/pods/$pod/policies.yml" >"$BATS_TEST_TMPDIR/served.json"
    run diff -u "$BATS_TEST_TMPDIR/live.json" "$BATS_TEST_TMPDIR/served.json"
    assert_success
  done
}
