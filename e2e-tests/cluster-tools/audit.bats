#!/usr/bin/env bats
# Kubewarden's own audit scanner (github.com/kubewarden/adm-controller v1.36.0, built by
# control-plane/build.sh), run against the policy as the real controller deployed it, with an
# object stored with two tools' owners (from before the policy: its webhook is off while it is
# written). What docs/tools.md (Audit) says is what this shows: the shipped preset, whose rules
# are `*`, is skipped and nothing is reported; the same settings in a policy whose rules name
# the type (here ConfigMaps, in monitor mode) are evaluated, and the object's report fails with
# the policy's message.

load ../cluster/common

setup_file() {
  [ "${WEBHOOKS:-}" = controller ] || return 0
  export AUDIT_NS="audit-$$"
  kubectl create namespace "$AUDIT_NS" >/dev/null
  cat >"$BATS_FILE_TMPDIR/two-tools.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: two-tools
  labels: {"$OLM_KIND": ClusterExtension, "$OLM_NAME": ext-a}
  annotations: {meta.helm.sh/release-name: web, meta.helm.sh/release-namespace: $AUDIT_NS}
EOF
  # Stored as it was before the policy: written with the policy off.
  policy_off single-owner-all-tools two_tools_refused
  kubectl apply -n "$AUDIT_NS" -f "$BATS_FILE_TMPDIR/two-tools.yaml" >/dev/null
  policy_on single-owner-all-tools two_tools_refused
}

# The policy is on: a second object with two tools' owners is refused (a server-side dry run).
two_tools_refused() {
  ! sed 's/name: two-tools/name: two-tools-probe/' "$BATS_FILE_TMPDIR/two-tools.yaml" |
    kubectl apply --dry-run=server -n "$AUDIT_NS" -f - >/dev/null 2>&1
}

teardown_file() {
  [ "${WEBHOOKS:-}" = controller ] || return 0
  kubectl delete clusteradmissionpolicy single-owner-all-tools-audit --ignore-not-found --wait=true --timeout 60s >/dev/null || true
  kubectl delete namespace "$AUDIT_NS" --wait=false >/dev/null || true
  # The policy server rolled out without the audit policy before the next suite looks at it.
  local i
  for i in $(seq 1 300); do policy_server_settled && break; sleep 0.2; done
}

setup() {
  [ "${WEBHOOKS:-}" = controller ] || skip "the audit scanner needs the real controller's policies (WEBHOOKS=$WEBHOOKS)"
}

# scan: the audit scanner over the namespace, through the policy server of the pods' first
# address (its certificate names the Service, which does not resolve here: --insecure-ssl).
scan() {
  local scanner ip
  scanner="$("$ROOT/control-plane/build.sh" audit-scanner)"
  ip="$(head -1 "$CLUSTER_DIR/pod-ips")"
  run --separate-stderr "$scanner" -k "$KUBEWARDEN_NAMESPACE" -u "https://$ip:8443" --insecure-ssl \
    --report-kind openreports -n "$AUDIT_NS" -l debug
}

reports() {
  kubectl get reports.openreports.io -n "$AUDIT_NS" -o json |
    jq -c '[.items[] | {object: .scope.name, fail: .summary.fail, results: [.results[] | {policy, result, message}]}]'
}

@test "(audit scanner) the shipped preset is skipped (its rules are *): no report names the object" {
  scan
  assert_success
  [[ "$output$stderr" == *'"the policy targets only wildcard resources, skipping...","client":"policyclient","policy":"'"$(policy_id single-owner-all-tools)"'"'* ]] ||
    fail "the scanner did not skip the preset: $output$stderr"
  assert_equal "$(reports | jq '[.[] | select(.fail > 0)] | length')" 0
}

@test "(audit scanner) the preset's settings under rules that name the type: the object's report fails with the policy's message" {
  kubectl get clusteradmissionpolicy single-owner-all-tools -o json |
    jq '.metadata = {name: "single-owner-all-tools-audit"} | del(.status) | .spec.mode = "monitor"
      | .spec.rules = [{apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"], operations: ["CREATE", "UPDATE"]}]' |
    kubectl apply -f - >/dev/null
  kubectl wait --for jsonpath='{.status.policyStatus}'=active --timeout 120s \
    clusteradmissionpolicy single-owner-all-tools-audit >/dev/null
  # The backends of the new rollout, serving the new policy.
  wait_for_served() { grep -q . "$CLUSTER_DIR/pod-ips" && curl -sf -m 2 "http://$(head -1 "$CLUSTER_DIR/pod-ips"):8081/readiness" >/dev/null; }
  for _ in $(seq 1 50); do wait_for_served && break; sleep 0.2; done
  scan
  assert_success
  run reports
  assert_equal "$(jq -r --arg p "$(policy_id single-owner-all-tools-audit)" \
    '[.[] | select(.object == "two-tools") | .results[] | select(.policy == $p) | .result] | join(",")' <<<"$output")" fail
  [[ "$(jq -r '.[0].results[] | select(.result == "fail") | .message' <<<"$output")" == *"would be created with the owners of two tools"* ]] ||
    fail "not the policy's message: $output"
}
