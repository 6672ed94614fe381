# Crossplane for real (its core and function-patch-and-transform, built from the Go module proxy
# and started by control-plane/crossplane.sh; none given: skipped) through the API server of
# control-plane/cluster.sh. Loaded by crossplane-core.bats, on the one-tool cluster
# (deploy/crossplane.yaml) and on the all-tools one (deploy/all-tools.yaml).

COMPOSITE=crossplane.io/composite
# The core's service account (control-plane/crossplane.sh), whose writes the witness records.
XP_USER=system:serviceaccount:crossplane-system:crossplane
# The suite's XR type: a namespaced Shop (an XRD of apiVersion v2), composed by the Composition
# shop through function-patch-and-transform. Its own group: crossplane.bats's CRD is XApp of
# e2e.crossplane.example.org.
XR_GROUP=core.crossplane.e2e.example.org
XR_API="$XR_GROUP/v1"

# The policy that judges Crossplane's composed objects on this cluster.
if [[ " $MANIFESTS " == *"/all-tools.yaml "* ]]; then
  XP_POLICY=single-owner-all-tools
else
  XP_POLICY=single-owner-crossplane
fi
XP_WEBHOOK="$(webhook_of "$XP_POLICY")"

# crossplane_up / crossplane_down (setup_file, teardown_file): Crossplane on this cluster.
# Without its binaries crossplane_up exports XP_SKIP, the reason every test then skips (setup:
# bats 1.8 cannot skip from setup_file).
crossplane_up() {
  local code=0
  "$ROOT/control-plane/crossplane.sh" up || code=$?
  if [ "$code" = 3 ]; then
    export XP_SKIP="no Crossplane: set CROSSPLANE and CROSSPLANE_FUNCTION (control-plane/build.sh crossplane function-patch-and-transform)"
    return 0
  fi
  return "$code"
}
crossplane_down() { "$ROOT/control-plane/crossplane.sh" down; }
crossplane_env() {
  # shellcheck disable=SC1091
  source "$CLUSTER_DIR/crossplane/env"
}

# shop_type: the XRD Shop (Namespaced: its XRs compose objects in their own namespace) and its
# Composition, a pipeline of one step: patch-and-transform composes a ConfigMap, data.setting
# patched from the XR's spec.setting, and metadata.name from spec.objectName when the XR gives
# one (else the core generates it). Waits until the core serves Shops.
shop_type() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: apiextensions.crossplane.io/v2
kind: CompositeResourceDefinition
metadata: {name: shops.$XR_GROUP}
spec:
  group: $XR_GROUP
  names: {kind: Shop, plural: shops}
  scope: Namespaced
  defaultCompositionRef: {name: shop}
  versions:
    - name: v1
      served: true
      referenceable: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                setting: {type: string}
                objectName: {type: string}
---
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: shop}
spec:
  compositeTypeRef: {apiVersion: $XR_API, kind: Shop}
  mode: Pipeline
  pipeline:
    - step: settings
      functionRef: {name: $CROSSPLANE_FUNCTION_NAME}
      input:
        apiVersion: pt.fn.crossplane.io/v1beta1
        kind: Resources
        resources:
          - name: settings
            base: {apiVersion: v1, kind: ConfigMap, data: {setting: ""}}
            patches:
              - {type: FromCompositeFieldPath, fromFieldPath: spec.setting, toFieldPath: data.setting}
              - {type: FromCompositeFieldPath, fromFieldPath: spec.objectName, toFieldPath: metadata.name}
            readinessChecks: [{type: None}]
YAML
  kubectl wait --for condition=Established --timeout 90s "compositeresourcedefinition/shops.$XR_GROUP" >/dev/null
  kubectl wait --for condition=Established --timeout 60s "crd/shops.$XR_GROUP" >/dev/null
  local i
  for i in $(seq 1 150); do kubectl get shops -A >/dev/null 2>&1 && break; sleep 0.2; done
  [ "$i" -lt 150 ] || { echo "Shop is not served 30 s after its XRD is established" >&2; return 1; }
  gc_watches shops
}

# gc_watches RESOURCE: waits until the garbage collector (control-plane/crossplane.sh) watches
# RESOURCE of the XR group: it finds new resources every 30 s, and before it watches an XR type
# an orphaning deletion of an XR is lost (its objects deleted all the same).
gc_watches() {
  local log="$CROSSPLANE_DIR/garbage-collector.log" i
  for i in $(seq 1 450); do
    awk -v r="$XR_GROUP/v1, Resource=$1" 'index($0, "syncing garbage collector") && index($0, r) { seen = 1 }
      seen && index($0, "synced garbage collector") { found = 1 } END { exit !found }' "$log" && return 0
    sleep 0.2
  done
  echo "the garbage collector does not watch $1 after 90 s" >&2
  return 1
}

# shop NAMESPACE NAME SETTING [OBJECT-NAME]: applies XR Shop NAME.
shop() {
  jq -n --arg ns "$1" --arg n "$2" --arg setting "$3" --arg object "${4:-}" --arg api "$XR_API" \
    '{apiVersion: $api, kind: "Shop", metadata: {name: $n, namespace: $ns},
      spec: ({setting: $setting} + (if $object == "" then {} else {objectName: $object} end))}' |
    kubectl apply -f - >/dev/null
}

# condition_of NAMESPACE KIND NAME TYPE: the condition TYPE as status|reason|message ("" before any).
condition_of() {
  kubectl get -n "$1" "$2" "$3" -o json |
    jq -r --arg t "$4" '[.status.conditions[]? | select(.type == $t)][0] | if . then "\(.status)|\(.reason)|\(.message // "")" else "" end'
}

# synced NAMESPACE NAME: waits until the core's verdict on XR Shop NAME: Synced True with Ready
# True, or Synced False with a message (a compose that failed); prints Synced's status|reason|
# message, the last seen after 90 s.
synced() {
  local s r
  for _ in $(seq 1 450); do
    s="$(condition_of "$1" shop "$2" Synced)"
    r="$(condition_of "$1" shop "$2" Ready)"
    case "$s" in True\|*) [[ "$r" == True\|* ]] && break ;; False\|*\|?*) break ;; esac
    sleep 0.2
  done
  echo "$s"
}

# reconcile NAMESPACE NAME: asks the core to reconcile XR Shop NAME now (the annotation
# crossplane.io/reconcile-requested-at) and waits until it has begun: its event
# ReconcileRequestHandled (the status field status.lastHandledReconcileAt it also sets is not in
# the XR's schema: pruned).
reconcile() {
  handled() {
    kubectl get events -n "$1" --field-selector "involvedObject.name=$2,reason=ReconcileRequestHandled" -o json |
      jq '[.items[] | .count // 1] | add // 0'
  }
  local before i
  before="$(handled "$1" "$2")"
  kubectl annotate -n "$1" shop "$2" "crossplane.io/reconcile-requested-at=$(date +%s%N)" --overwrite >/dev/null
  for i in $(seq 1 300); do
    [ "$(handled "$1" "$2")" -gt "$before" ] && return 0
    sleep 0.2
  done
  echo "Shop $2 did not handle a reconcile request in 60 s"
  return 1
}

# synced_becomes NAMESPACE NAME PATTERN: waits (60 s at most) until the Synced condition of XR
# Shop NAME, as status|reason|message, matches the glob PATTERN; prints the last seen.
synced_becomes() {
  local s i
  for i in $(seq 1 300); do
    s="$(condition_of "$1" shop "$2" Synced)"
    # shellcheck disable=SC2053
    [[ "$s" == $3 ]] && break
    sleep 0.2
  done
  echo "$s"
}

# composed_of NAMESPACE NAME: the name of the ConfigMap XR Shop NAME lists in its resourceRefs.
composed_of() {
  kubectl get -n "$1" shop "$2" -o json | jq -r '[.spec.crossplane.resourceRefs[]? | select(.kind == "ConfigMap") | .name][0] // ""'
}

label_of() { kubectl get configmap "$2" -n "$1" -o json | jq -r --arg k "$3" '.metadata.labels[$k] // ""'; }
controller_of() { kubectl get configmap "$2" -n "$1" -o json | jq -r '[.metadata.ownerReferences[]? | select(.controller) | "\(.kind)/\(.name)"] | join(",")'; }
setting_of() { kubectl get configmap "$2" -n "$1" -o jsonpath='{.data.setting}'; }

# until_true SECONDS COMMAND...: COMMAND until it succeeds, at most SECONDS; fails the test after.
until_true() {
  local seconds="$1" i
  shift
  for i in $(seq 1 $((seconds * 5))); do "$@" && return 0; sleep 0.2; done
  fail "not after $seconds s: $*"
}

# gc_knows NAMESPACE NAME: waits (30 s at most) until the garbage collector has learnt of
# ConfigMap NAME (its graph builder's log line): an XR deleted with --cascade=orphan before then
# would leave it to be deleted as garbage, its owner gone.
gc_knows() {
  local i
  for i in $(seq 1 150); do
    grep -q "\"GraphBuilder process object\".*kind=\"ConfigMap\" object=\"$1/$2\"" "$CROSSPLANE_DIR/garbage-collector.log" && return 0
    sleep 0.2
  done
  fail "the garbage collector has not seen ConfigMap $1/$2 after 30 s"
}

# settled NAMESPACE NAME: waits (90 s at most) until XR Shop NAME has not changed for 3 s: the
# core's reconciles that its first compose set off are over. An XR deleted with --cascade=orphan
# while one is in flight loses its object: the core's apply puts the controller reference back
# after the garbage collector removed it, and the garbage collector deletes the object once the XR
# is gone (seen with Crossplane v2.4.0).
settled() {
  local last="" now i
  for i in $(seq 1 30); do
    now="$(kubectl get -n "$1" shop "$2" -o jsonpath='{.metadata.resourceVersion}')"
    [ "$now" = "$last" ] && return 0
    last="$now"
    sleep 3
  done
  fail "Shop $2 still changes after 90 s"
}

# The probe that shows the API server runs the policy that judges composed objects
# (common.bash: policy_off, policy_on): a dry-run relabel of an object to another XR.
probe_refused() {
  local ns="$1"
  kubectl get configmap xp-probe -n "$ns" >/dev/null 2>&1 ||
    jq -n --arg k "$COMPOSITE" '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "xp-probe", labels: {($k): "probe-a"}}}' |
    kubectl apply -n "$ns" -f - >/dev/null
  ! kubectl label configmap xp-probe -n "$ns" "$COMPOSITE=probe-b" --overwrite --dry-run=server >/dev/null 2>&1
}
