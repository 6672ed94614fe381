#!/usr/bin/env bats
# Crossplane's writes to composed objects, through the project's API server under
# deploy/crossplane.yaml. Crossplane itself cannot be built here (no vendor/), so kubectl makes
# its requests as its composite (XR) controller does (crossplane/crossplane 2d040d2
# composition_functions.go and composition_render.go; v1.14.0 86d9846 for #5035): a forced
# server-side apply of the object with the label crossplane.io/composite and the XR as its
# controller ownerReference, as the field manager apiextensions.crossplane.io/composed/<sha256 of
# the XR's name and Kind.group> (before v1.15: apiextensions.crossplane.io/composed, one for
# every XR); garbage collection's Update that removes the labels, then a DELETE. The XRs are
# objects of a CRD of this suite's own, so the references carry real uids.

load common

POLICY=single-owner-crossplane
COMPOSITE=crossplane.io/composite
SHARED_MANAGER=apiextensions.crossplane.io/composed

setup_file() {
  kubectl apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: xapps.e2e.crossplane.example.org
spec:
  group: e2e.crossplane.example.org
  scope: Cluster
  names: {plural: xapps, singular: xapp, kind: XApp, listKind: XAppList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
  kubectl wait --for condition=Established --timeout 60s crd/xapps.e2e.crossplane.example.org >/dev/null
  local i
  for i in $(seq 1 50); do kubectl get xapps >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "XApp is not served 10 s after its CRD" >&2
  return 1
}

teardown_file() {
  kubectl delete crd xapps.e2e.crossplane.example.org --wait=false >/dev/null 2>&1 || true
}

setup() {
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
}

teardown() {
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

# xr NAME: creates XR NAME, and prints its uid.
xr() {
  kubectl create -f - -o jsonpath='{.metadata.uid}' <<<"{\"apiVersion\": \"e2e.crossplane.example.org/v1\", \"kind\": \"XApp\", \"metadata\": {\"name\": \"$1\"}}"
}

# manager XR: the field manager Crossplane v1.15+ applies XR's objects as
# (ComposedFieldOwnerName: sha256 of the XR's name, Kind and group).
manager() {
  echo "apiextensions.crossplane.io/composed/$(printf '%s' "$1XApp.e2e.crossplane.example.org" | sha256sum | cut -d' ' -f1)"
}

# compose MANAGER OBJECT ROOT XR UID DATA: the forced server-side apply of ConfigMap OBJECT
# labelled with ROOT, controlled by XR (uid UID); the answer in $status, $output, $stderr.
compose() {
  local body
  body="$(jq -n --arg n "$2" --arg root "$3" --arg xr "$4" --arg uid "$5" --arg data "$6" --arg k "$COMPOSITE" \
    '{apiVersion: "v1", kind: "ConfigMap",
      metadata: {name: $n, labels: {($k): $root}, annotations: {"crossplane.io/composition-resource-name": $n},
        ownerReferences: [{apiVersion: "e2e.crossplane.example.org/v1", kind: "XApp", name: $xr, uid: $uid,
          controller: true, blockOwnerDeletion: true}]},
      data: {by: $data}}')"
  run --separate-stderr kubectl apply --server-side --force-conflicts --field-manager="$1" -n "$ns" -f - <<<"$body"
}

composite_of() { kubectl get configmap "$1" -n "$ns" -o json | jq -r --arg k "$COMPOSITE" '.metadata.labels[$k] // ""'; }
controller_of() { kubectl get configmap "$1" -n "$ns" -o json | jq -r '[.metadata.ownerReferences[]? | select(.controller) | .name] | join(",")'; }

# The probe that shows the API server runs the policy (common.bash: policy_off, policy_on): a
# dry-run relabel of a composed object.
probe_refused() {
  kubectl get configmap xp-probe -n "$ns" >/dev/null 2>&1 || {
    kubectl create configmap xp-probe -n "$ns" >/dev/null
    kubectl label configmap xp-probe -n "$ns" "$COMPOSITE=probe-a" >/dev/null
  }
  ! kubectl label configmap xp-probe -n "$ns" "$COMPOSITE=probe-b" --overwrite --dry-run=server >/dev/null 2>&1
}

@test "Crossplane: compose, re-apply, garbage collection and delete of a composed object pass the policy" {
  local a uid
  a="$(name a)"
  uid="$(xr "$a")"
  compose "$(manager "$a")" cm "$a" "$a" "$uid" v1
  assert_success
  compose "$(manager "$a")" cm "$a" "$a" "$uid" v2
  assert_success
  assert_equal "$(kubectl get configmap cm -n "$ns" -o jsonpath='{.data.by}')" v2
  # A Usage's in-use label: no owner key.
  run kubectl label configmap cm -n "$ns" crossplane.io/in-use=true
  assert_success
  # Garbage collection: the labels go in an Update that keeps the controller, then a DELETE.
  run kubectl label configmap cm -n "$ns" "$COMPOSITE-"
  assert_success
  assert_equal "$(controller_of cm)" "$a"
  # Foreground, as Crossplane deletes it (nothing collects garbage here: not waited for).
  run kubectl delete configmap cm -n "$ns" --cascade=foreground --wait=false
  assert_success
}

@test "Crossplane before v1.15 (#5035): without the policy a second XR takes the object, label and controller; with it, refused" {
  local a b uid_a uid_b
  a="$(name a)" b="$(name b)"
  uid_a="$(xr "$a")" uid_b="$(xr "$b")"
  compose "$SHARED_MANAGER" shared "$a" "$a" "$uid_a" "$a"
  assert_success
  policy_off "$POLICY" probe_refused
  compose "$SHARED_MANAGER" shared "$b" "$b" "$uid_b" "$b"
  local taken="$status"
  policy_on "$POLICY" probe_refused
  assert_equal "$taken" 0
  assert_equal "$(composite_of shared):$(controller_of shared)" "$b:$b"
  echo "# without the policy: XR $b took ConfigMap shared from $a (label and controller)" >&3
  # Back to a's (its own apply would be refused now, as any move is): released, then a adopts.
  kubectl label configmap shared -n "$ns" "$COMPOSITE-" >/dev/null
  kubectl patch configmap shared -n "$ns" --type json -p '[{"op": "remove", "path": "/metadata/ownerReferences"}]' >/dev/null
  compose "$SHARED_MANAGER" shared "$a" "$a" "$uid_a" "$a"
  assert_success
  compose "$SHARED_MANAGER" shared "$b" "$b" "$uid_b" "$b"
  assert_failure
  [[ "$stderr" == *"admission webhook \"$(webhook_of "$POLICY")\" denied the request"* ]] || fail "$stderr"
  [[ "$stderr" == *"is owned by [$COMPOSITE=$a], and this UPDATE would change its owner to [$COMPOSITE=$b]"* ]] || fail "$stderr"
  assert_equal "$(composite_of shared):$(controller_of shared)" "$a:$a"
}

@test "Crossplane before v1.15: two nested XRs of one root take the controller alone; refused" {
  local root n1 n2 uid1 uid2
  root="$(name root)" n1="$(name n1)" n2="$(name n2)"
  uid1="$(xr "$n1")" uid2="$(xr "$n2")"
  compose "$SHARED_MANAGER" nested "$root" "$n1" "$uid1" "$n1"
  assert_success
  compose "$SHARED_MANAGER" nested "$root" "$n2" "$uid2" "$n2"
  assert_failure
  [[ "$stderr" == *"'s controller ownerReference names XApp \"$n1\", and this UPDATE would make it XApp \"$n2\""* ]] || fail "$stderr"
  assert_equal "$(controller_of nested)" "$n1"
}

@test "Crossplane v1.15 and later: a second XR's own field manager meets the API server's one-controller rule" {
  local a b uid_a uid_b
  a="$(name a)" b="$(name b)"
  uid_a="$(xr "$a")" uid_b="$(xr "$b")"
  compose "$(manager "$a")" own "$a" "$a" "$uid_a" "$a"
  assert_success
  # Its reference is merged beside a's (a list keyed by uid): two controllers, refused by the
  # API server's validation whatever the label, before any webhook.
  compose "$(manager "$b")" own "$a" "$b" "$uid_b" "$b"
  assert_failure
  [[ "$stderr" == *"Only one reference can have Controller set to true"* ]] || fail "$stderr"
  assert_equal "$(composite_of own):$(controller_of own)" "$a:$a"
}
