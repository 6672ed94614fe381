#!/usr/bin/env bash
# `make cluster-latency`: what a preset costs a write through a real kube-apiserver. For
# deploy/olm-v1.yaml, deploy/all-tools.yaml and deploy/identity/olm-v1-operator.yaml, each on a
# cluster of its own (with the objects its writes make it look up: e2e-tests/cluster/lookup-*),
# the same writes (policy-host latency: the ordinary UPDATE of an owned object, owner changes
# with and without a lookup) are timed in interleaved blocks under each configuration:
#   none      no policy at all
#   vap       a ValidatingAdmissionPolicy with the same-owner rule in CEL over the preset's keys
#             (Kubernetes 1.30+; not for the identity preset, which no VAP can express)
#   floor     the preset's webhook with one matchCondition, `false`: what the API server spends
#             on any webhook it decides by a matchCondition (not for the identity preset)
#   shipped   the preset as shipped: its generated matchCondition sends only ownership changes
#   before    the preset without its generated matchCondition: every write of an owned object
#             reaches the policy, as before the condition
# with policy-host serve as the backend, and again with policy-server when POLICY_SERVER is
# given. Besides the client's times, each block records the API server's own time evaluating
# the webhook's matchConditions per write they keep in it (its metric
# apiserver_admission_match_condition_evaluation_seconds), which no noise of the machine moves.
# etcd keeps its data on tmpfs (/dev/shm where there is one), so that the disk's syncs do not
# drown a difference of a few percent. The table (scripts/latency-table.py) goes to OUTPUT.
#
# usage: scripts/cluster-latency.sh OUTPUT
# Environment: KUBE_APISERVER (1.30 or newer for the matchConditions and the VAP; older: the
# blocks that need them are left out, saying so), POLICY_SERVER, LATENCY_BLOCKS (15),
# LATENCY_WRITES (100 of each kind a block), LATENCY_PRESETS (all three).
set -euo pipefail
# The emulation's webhooks (control-plane/cluster.sh, WEBHOOKS): the blocks swap webhook
# configurations in and out, which the real Kubewarden controller would put back at once.
export WEBHOOKS=emulation
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
if [ -z "${CLUSTER_DIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  CLUSTER_DIR="/dev/shm/single-owner-latency-$$"
fi
export CLUSTER_DIR="${CLUSTER_DIR:-$root/target/cluster-latency}"
host="${POLICY_HOST:-$root/target/host/policy-host}"
record="$root/target/cluster-latency.jsonl"
blocks="${LATENCY_BLOCKS:-15}"
writes="${LATENCY_WRITES:-100}"
presets="${LATENCY_PRESETS:-olm-v1 all-tools olm-v1-operator}"
policy_server="${POLICY_SERVER:-}"
rm -f "$record"
trap '"$root/control-plane/cluster.sh" down; case "$CLUSTER_DIR" in /dev/shm/single-owner-latency-*) rm -rf "$CLUSTER_DIR" ;; esac' EXIT

manifest_of() {
  case "$1" in
    olm-v1) echo deploy/olm-v1.yaml ;;
    all-tools) echo deploy/all-tools.yaml ;;
    olm-v1-operator) echo deploy/identity/olm-v1-operator.yaml ;;
  esac
}

# configurations MANIFEST: the webhook configuration without the generated matchCondition
# (before.json) and the VAP over the manifest's owner keys (vap.json), beside cluster.sh's
# webhooks.json.
configurations() {
  python3 - "$1" "$CLUSTER_DIR/before.yaml" "$CLUSTER_DIR/vap.json" <<'PY'
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc["spec"]["matchConditions"] = [c for c in doc["spec"].get("matchConditions", [])
                                  if c["name"] not in ("ownership-change", "owned-object")]
yaml.safe_dump(doc, open(sys.argv[2], "w"))
settings = doc["spec"].get("settings") or {}
schemes = settings.get("schemes") or [settings]
labels, annotations = [], []
for s in schemes:
    labels += s.get("ownerLabels", ["olm.operatorframework.io/owner-kind", "olm.operatorframework.io/owner-name"]
                    if s is settings and "schemes" not in settings else [])
    annotations += s.get("ownerAnnotations", [])
def kept(field, keys):
    if not keys:
        return "true"
    o, n = f"oldObject.metadata.{field}", f"object.metadata.{field}"
    return (f"{json.dumps(keys)}.all(k, !has({o}) || !(k in {o}) || !has({n}) || !(k in {n}) "
            f"|| {n}[k] == {o}[k])")
policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
          "metadata": {"name": "single-owner-latency-vap"},
          "spec": {"failurePolicy": "Fail",
                   "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                                                           "resources": ["*"], "operations": ["UPDATE"]}]},
                   "validations": [{"expression": kept("labels", labels) + " && " + kept("annotations", annotations),
                                    "message": "an object has a single owner"}]}}
binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": "single-owner-latency-vap"},
           "spec": {"policyName": "single-owner-latency-vap", "validationActions": ["Deny"]}}
json.dump({"apiVersion": "v1", "kind": "List", "items": [policy, binding]}, open(sys.argv[3], "w"))
PY
  "$host" webhook "$CLUSTER_DIR/before.yaml" --url "https://127.0.0.1:$BACKEND_PORT" \
    --ca-file "$CLUSTER_DIR/certs/ca.crt" --kubernetes-minor "$KUBERNETES_MINOR" \
    --module "file://$POLICY_MODULE" >"$CLUSTER_DIR/before.json"
  jq '.items[].webhooks[].matchConditions = [{name: "floor", expression: "false"}]' \
    "$CLUSTER_DIR/webhooks.json" >"$CLUSTER_DIR/floor.json"
}

# evaluations: the API server's matchConditions evaluations of the preset's webhook on UPDATE,
# as "seconds count" (its metric; Kubernetes 1.30+).
evaluations() {
  kubectl get --raw /metrics | awk -v hook="$1" '
    /^apiserver_admission_match_condition_evaluation_seconds_(sum|count)\{/ &&
      index($0, "name=\"" hook "\"") && index($0, "operation=\"UPDATE\"") { v[$0 ~ /_sum/] = $2 }
    END { printf "%s %s\n", (v[1] == "" ? 0 : v[1]), (v[0] == "" ? 0 : v[0]) }'
}

# switch MODE: the API server runs MODE's configuration, and has seen it.
switch() {
  local f
  for f in webhooks before vap floor; do
    kubectl delete -f "$CLUSTER_DIR/$f.json" --ignore-not-found >/dev/null
  done
  case "$1" in
    shipped) kubectl apply -f "$CLUSTER_DIR/webhooks.json" >/dev/null ;;
    none) ;;
    *) kubectl apply -f "$CLUSTER_DIR/$1.json" >/dev/null ;;
  esac
  # The API server's informers see a configuration within milliseconds here; the block's
  # warm-up writes follow.
  sleep 2
}

# measure BACKEND PRESET: the blocks of one preset, on a cluster of its own.
measure() {
  local backend="$1" preset="$2" manifest modes=(none shipped before) b mode installer
  manifest="$(manifest_of "$preset")"
  "$root/control-plane/cluster.sh" up --apply "$root/e2e-tests/cluster/lookup-crds.yaml" \
    --apply "$root/e2e-tests/cluster/lookup-objects.yaml" "$root/$manifest" >&2
  # shellcheck disable=SC1091
  source "$CLUSTER_DIR/env"
  installer="$(kubectl create token latency-installer -n default --duration 2h)"
  configurations "$root/$manifest"
  if [ "$KUBERNETES_MINOR" -lt 30 ]; then
    echo "cluster-latency: Kubernetes 1.$KUBERNETES_MINOR drops matchConditions and has no VAP: shipped and before are one, no vap" >&2
    modes=(none before)
  elif [ "$preset" != olm-v1-operator ]; then
    modes=(none vap floor shipped before)
  fi
  local hook before after
  hook="$POLICY_ID_PREFIX$(awk '/^  name: / {print $2; exit}' "$root/$manifest").kubewarden.admission"
  for b in $(seq 1 "$blocks"); do
    for mode in "${modes[@]}"; do
      switch "$mode"
      before="$(evaluations "$hook")"
      "$host" latency --apiserver "${APISERVER_URLS%%,*}" --ca-file "$APISERVER_CA" \
        --backend "$backend" --preset "$preset" --mode "$mode" --writes "$writes" \
        --warm-up 10 --installer-token "$installer" --record "$record"
      after="$(evaluations "$hook")"
      jq -nc --arg preset "$preset" --arg mode "$mode" --arg backend "$backend" \
        --arg before "$before" --arg after "$after" \
        '($before | split(" ") | map(tonumber)) as $b | ($after | split(" ") | map(tonumber)) as $a |
         {preset: $preset, mode: $mode, backend: $backend, evaluations: ($a[1] - $b[1]),
          seconds: ($a[0] - $b[0])}' >>"$record"
    done
    echo "cluster-latency: $preset, $backend: block $b of $blocks" >&2
  done
  "$root/control-plane/cluster.sh" down >&2
}

for preset in $presets; do
  POLICY_SERVER="" measure "policy-host serve" "$preset"
  if [ -n "$policy_server" ]; then
    POLICY_SERVER="$policy_server" measure \
      "policy-server $("$policy_server" --version 2>/dev/null | head -1 | awk '{print $NF}')" "$preset"
  fi
done
python3 "$root/scripts/latency-table.py" "$record" | tee "$out"
