# kubectl's ApplySets for real (the machine's kubectl, 1.27 or newer), through the API server of
# control-plane/cluster.sh, shared by the suites of the one-tool presets (e2e-tests/cluster/
# applyset.bats, deploy/applyset.yaml) and of all tools (e2e-tests/cluster-tools/
# applyset.bats, deploy/all-tools.yaml). Each suite sets APPLYSET_POLICY, the name of the
# ClusterAdmissionPolicy that judges ApplySet members, before loading this file.

PART_OF=applyset.kubernetes.io/part-of

# applyset_id NAME NAMESPACE: the id kubectl gives the set of Secret NAME in NAMESPACE (KEP-3659:
# applyset-<base64url(sha256("<name>.<namespace>.Secret."))>-v1, unpadded).
applyset_id() {
  python3 -c 'import base64, hashlib, sys
d = hashlib.sha256(f"{sys.argv[1]}.{sys.argv[2]}.Secret.".encode()).digest()
print("applyset-" + base64.urlsafe_b64encode(d).decode().rstrip("=") + "-v1")' "$1" "$2"
}

# needs_applysets: kubectl has --applyset (1.27 or newer).
needs_applysets() {
  KUBECTL_APPLYSET=true kubectl apply --help 2>/dev/null | grep -q -- '--applyset' ||
    skip "this kubectl ($(kubectl version --client -o json | jq -r .clientVersion.gitVersion)) has no ApplySets (1.27 or newer)"
}

# manifests DIR NAME...: a ConfigMap manifest per NAME in DIR (data: the set that ships it).
manifests() {
  local dir="$1" name
  shift
  mkdir -p "$dir"
  rm -f "$dir"/*.yaml
  for name in "$@"; do
    jq -n --arg n "$name" --arg by "$(basename "$dir")" \
      '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: $n}, data: {by: $by}}' >"$dir/$name.yaml"
  done
}

# apply_set SET NAMESPACE DIR [KUBECTL FLAGS...]: kubectl's ApplySet apply with prune; its
# answer in $status, $output and $stderr.
apply_set() {
  local set="$1" ns="$2" dir="$3"
  shift 3
  KUBECTL_APPLYSET=true run --separate-stderr kubectl apply --prune --applyset="$set" -n "$ns" -f "$dir" "$@"
}

part_of() { kubectl get configmap "$2" -n "$1" -o json | jq -r --arg k "$PART_OF" '.metadata.labels[$k] // ""'; }
data_by() { kubectl get configmap "$2" -n "$1" -o json | jq -r '.data.by // ""'; }

# The probe that shows the API server runs the policy that judges ApplySet members (common.bash:
# policy_off, policy_on): a dry-run write that moves a member from one set to another.
probe_refused() {
  local ns="$1"
  jq -n --arg k "$PART_OF" '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "applyset-probe", labels: {($k): "probe-a"}}}' |
    kubectl apply -n "$ns" -f - >/dev/null
  ! kubectl label configmap applyset-probe -n "$ns" "$PART_OF=probe-b" --overwrite --dry-run=server >/dev/null 2>&1
}

# race_round NAMESPACE: set-a and set-b apply the same ConfigMap at once (server-side: one field
# manager, no conflict of kubectl's own); prints how many of the two succeeded, and who holds it.
race_round() {
  local ns="$1" dir="$BATS_TEST_TMPDIR/race"
  manifests "$dir/set-a" shared
  manifests "$dir/set-b" shared
  kubectl create configmap shared -n "$ns" >/dev/null
  (KUBECTL_APPLYSET=true kubectl apply --server-side --prune --applyset=set-a -n "$ns" -f "$dir/set-a" \
    >"$dir/a.out" 2>&1 && echo ok >"$dir/a.status" || echo failed >"$dir/a.status") &
  (KUBECTL_APPLYSET=true kubectl apply --server-side --prune --applyset=set-b -n "$ns" -f "$dir/set-b" \
    >"$dir/b.out" 2>&1 && echo ok >"$dir/b.status" || echo failed >"$dir/b.status") &
  wait
  echo "$(grep -c ok "$dir/a.status" "$dir/b.status" | awk -F: '{s += $2} END {print s}') $(part_of "$ns" shared)"
  kubectl delete configmap shared -n "$ns" >/dev/null
}
