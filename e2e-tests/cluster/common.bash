# Shared helpers of the suites that run against a real API server (`make cluster-e2e`, which
# brings the cluster up with control-plane/cluster.sh and takes it down again).
bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
CLUSTER_DIR="${CLUSTER_DIR:-$ROOT/target/cluster}"
[ -f "$CLUSTER_DIR/env" ] || {
  echo "no cluster in $CLUSTER_DIR: run control-plane/cluster.sh up (make cluster-e2e does)" >&2
  exit 1
}
# shellcheck disable=SC1091
source "$CLUSTER_DIR/env"
# shellcheck source=control-plane/tools.bash
source "$ROOT/control-plane/tools.bash"

OLM_KIND=olm.operatorframework.io/owner-kind
OLM_NAME=olm.operatorframework.io/owner-name
# A ClusterAdmissionPolicy's policy-server id and webhook, as the imitated kubewarden-controller
# names them (control-plane/cluster.sh: KUBEWARDEN_VERSION; kw.cap.<name> from 1.37.2).
policy_id() { echo "${POLICY_ID_PREFIX:-clusterwide-}$1"; }
webhook_of() { echo "$(policy_id "$1").kubewarden.admission"; }
OLM_WEBHOOK="$(webhook_of single-owner-olm-v1)"

# policy_off POLICY PROBE_REFUSED [ARG...] / policy_on POLICY PROBE_REFUSED [ARG...]: the
# ClusterAdmissionPolicy POLICY off and on again, each time until PROBE_REFUSED (a dry-run
# ownership change it would refuse) shows the API server has seen it. With the real controller
# (WEBHOOKS=controller) the policy itself is deleted and applied back, as a user turns one off:
# the controller deletes its webhook, rolls its policy server out without it and back, and
# writes the webhook again once the new pods are Ready. With the emulation, its webhook
# configuration is deleted and applied back.
policy_off() {
  local policy="$1" i
  shift
  if [ "$WEBHOOKS" = controller ]; then
    kubectl get clusteradmissionpolicy "$policy" -o json |
      jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation,
        .metadata.managedFields, .metadata.finalizers, .status)' >"$BATS_FILE_TMPDIR/$policy.json"
    kubectl delete clusteradmissionpolicy "$policy" --wait=true --timeout 60s >/dev/null
  else
    kubectl get validatingwebhookconfiguration "$(policy_id "$policy")" -o json |
      jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation, .metadata.managedFields)' \
        >"$BATS_FILE_TMPDIR/$policy.json"
    kubectl delete validatingwebhookconfiguration "$(policy_id "$policy")" >/dev/null
  fi
  for i in $(seq 1 150); do "$@" || return 0; sleep 0.2; done
  fail "the API server still runs the webhook of $policy 30 s after it was deleted"
}

policy_on() {
  local policy="$1" i
  shift
  kubectl apply -f "$BATS_FILE_TMPDIR/$policy.json" >/dev/null
  if [ "$WEBHOOKS" = controller ]; then
    kubectl wait --for jsonpath='{.status.policyStatus}'=active --timeout 120s \
      clusteradmissionpolicy "$policy" >/dev/null || fail "$policy is not active again after 120 s"
  fi
  for i in $(seq 1 150); do "$@" && return 0; sleep 0.2; done
  fail "the API server does not run the webhook of $policy 30 s after it was applied"
}

# policy_back POLICY PROBE_REFUSED [ARG...] (teardown): POLICY on again when a failed test
# left it off (policy_off ran, policy_on did not), so that no later test runs without it.
policy_back() {
  local policy="$1"
  [ -f "$BATS_FILE_TMPDIR/$policy.json" ] || return 0
  if [ "$WEBHOOKS" = controller ]; then
    kubectl get clusteradmissionpolicy "$policy" >/dev/null 2>&1 && return 0
  else
    kubectl get validatingwebhookconfiguration "$(policy_id "$policy")" >/dev/null 2>&1 && return 0
  fi
  policy_on "$@"
}

# policy_server_settled: the controller's rollout is over: every policy server pod carries the
# ConfigMap's current version, is Ready and is not terminating (each pod's backend then serves
# what the ConfigMap holds).
policy_server_settled() {
  local version pods
  version="$(kubectl -n "$KUBEWARDEN_NAMESPACE" get configmap policy-server-default -o jsonpath='{.metadata.resourceVersion}')"
  pods="$(kubectl -n "$KUBEWARDEN_NAMESPACE" get pods -l kubewarden/policy-server=default -o json |
    jq -r '.items[] | "\(.metadata.labels["kubewarden/config-version"])|\(.metadata.deletionTimestamp // "")|\([.status.conditions[]? | select(.type == "Ready")][0].status)"')"
  [ -n "$pods" ] && ! grep -qv "^$version||True\$" <<<"$pods"
}

# A name of this test's own, so that tests never share an object.
name() { echo "e2e-$1-$BATS_TEST_NUMBER-$$"; }

# The backend's log lines (one JSON object per request it answered) naming OBJECT.
requests_for() { jq -c --arg n "$1" 'select(.name == $n)' "$BACKEND_LOG"; }

# Which requests reach the backend is the API server's choice, read from policy-host serve's
# request log; policy-server's log does not name the object of a request.
needs_request_log() {
  [ -z "${POLICY_SERVER:-}" ] || skip "policy-server's log names no object: run with policy-host serve"
}

# apply MANIFEST: kubectl apply of the manifest (JSON or YAML text); the result in $status,
# $output and $stderr.
apply() { run --separate-stderr kubectl apply -f - <<<"$1"; }

# assert_forbidden WEBHOOK TEXT...: the write failed as kubectl prints a refusal by the
# webhook. kubectl names the reason only when the webhook's status carries one, and
# policy-server's carries the code (403) and the message, not a reason (see the test of the
# HTTP status below), so kubectl prints `Error from server: admission webhook ...`.
assert_forbidden() {
  local webhook="$1"
  shift
  assert_failure
  [[ "$stderr" == *"Error from server"*": admission webhook \"$webhook\" denied the request: "* ]] ||
    fail "not a refusal by $webhook: $stderr"
  for text in "$@"; do
    [[ "$stderr" == *"$text"* ]] || fail "the refusal lacks '$text': $stderr"
  done
}

# configmap NAME LABELS-JSON [ANNOTATIONS-JSON]: a ConfigMap manifest in namespace default.
configmap() {
  jq -n --arg n "$1" --argjson l "${2:-{\}}" --argjson a "${3:-{\}}" \
    '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: $n, namespace: "default", labels: $l, annotations: $a}, data: {k: "v"}}'
}

label_of() { kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -r --arg k "$4" '.metadata.labels[$k] // ""'; }

# crd_manifest NAME OWNER [KIND]: a CRD owned by OWNER (a ClusterExtension unless KIND).
crd_manifest() {
  jq -n --arg n "$1" --arg owner "$2" --arg kind "${3:-ClusterExtension}" '{apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition", metadata: {name: $n, labels: {"olm.operatorframework.io/owner-kind": $kind,
    "olm.operatorframework.io/owner-name": $owner}}, spec: {group: ($n | split(".")[1:] | join(".")), scope: "Namespaced",
    names: {plural: ($n | split(".")[0]), kind: "Thing"}, versions: [{name: "v1", served: true, storage: true,
    schema: {openAPIV3Schema: {type: "object"}}}]}}'
}

# ensure KUBECTL-CREATE-ARGS...: `kubectl create ...`, or nothing when it exists already (the
# suites of one cluster share namespaces and service accounts).
ensure() { kubectl create "$@" --dry-run=client -o json | kubectl apply -f - >/dev/null; }

# kubeconfig_for NAMESPACE SERVICE-ACCOUNT: a kubeconfig that authenticates as the service
# account (control-plane/tools.bash), for tools that take a kubeconfig (Helm, Timoni); prints
# its path.
kubeconfig_for() { kubeconfig_as "$1" "$2" "$BATS_FILE_TMPDIR/kubeconfig-$1-$2"; }

# api METHOD PATH [CONTENT-TYPE BODY]: a raw call to the first API server as the admin; the
# HTTP status in $api_code, the answer (JSON) in $output. Tests judge the API server's answer
# by its status code, reason and causes, which hold across versions, not by its wording.
api() {
  local method="$1" path="$2" type="${3:-application/json}" body="${4:-}"
  output="$(curl -s --cacert "$APISERVER_CA" -H "Authorization: Bearer $APISERVER_TOKEN" \
    -X "$method" -H "Content-Type: $type" ${body:+--data-binary "$body"} \
    -w '\n%{http_code}' "${APISERVER_URLS%%,*}$path")"
  api_code="${output##*$'\n'}"
  output="${output%$'\n'*}"
}

# sent_as_predicted: the lifecycle corpus, every fixture and the proof's generated writes of each
# policy of this cluster (`make proof-writes`), sent through the API server: each policy's
# webhook gets exactly the writes `policy-host selects` predicts (e2e-tests/cluster/selection.py).
sent_as_predicted() {
  needs_request_log
  local writes="$ROOT/target/proof-writes" corpus="$BATS_TEST_TMPDIR/corpus" m files=()
  [ -d "$writes" ] || fail "no generated writes in $writes: make proof-writes (make cluster-e2e does)"
  python3 "$ROOT/e2e-tests/corpus/corpus.py" build "$corpus"
  for m in $MANIFESTS; do
    files+=("$writes/$(basename "$m" .yaml)"/*.json)
  done
  run python3 "$ROOT/e2e-tests/cluster/selection.py" "$corpus"/*/*.json "$ROOT"/e2e-tests/fixtures/*.json "${files[@]}"
  echo "# $(head -1 <<<"$output")" >&3
  assert_success
}
