#!/usr/bin/env bats
# kubectl single-owner through a real API server: objects of several tools seeded as each
# tool writes them (seed.yaml), findings planted (planted.yaml, and a controller
# ownerReference naming another extension than the labels), and the plugin's scan must find
# every planted finding and nothing else, with its exit codes and -o json's shape; --report
# writes Reports and a fixed finding's report disappears on the next run.
#
# Its own etcd and kube-apiserver on free loopback ports (not control-plane/cluster.sh's, so it runs
# beside another suite's cluster). The kube-apiserver: $KUBE_APISERVER, else the one
# control-plane/build.sh caches; none: skipped. The plugin: make kubectl-plugin.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
HERE="$BATS_TEST_DIRNAME"

log() { echo "owners.bats: $*" >&2; }
source "$BATS_TEST_DIRNAME/control-plane.bash"

setup_file() {
  plugin_suite_up apps "admin:system:masters" "auditor:single-owner:auditors" "narrow:single-owner:narrow" || return 1
  [ -z "${SKIP_ALL:-}" ] || return 0
  local dir="$BATS_FILE_TMPDIR/cluster"
  export AUDITOR_KUBECONFIG="$dir/kubeconfig-auditor"
  export NARROW_KUBECONFIG="$dir/kubeconfig-narrow"
  export CLUSTER_DIR="$dir"
  kubectl apply -f "$HERE/crds.yaml" >&2
  # Kubewarden's own report CRDs, as its kubewarden-crds chart installs them.
  "$ROOT/control-plane/kubewarden-crds.sh" reports | kubectl apply --server-side -f - >&2
  kubectl wait --for condition=Established --timeout 60s crd --all >&2
  # Discovery of new CRDs takes the aggregator a moment.
  wait_for 30 "CRD discovery" kubectl get clusterextensions,helmreleases,kustomizations,reports,policyreports
  kubectl apply -f "$HERE/seed.yaml" >&2
  kubectl apply -f "$HERE/planted.yaml" >&2
  # The controller ownerReference names another extension than the labels.
  kubectl apply -f - >&2 <<EOY
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata: {name: cert-manager-copy}
spec: {namespace: apps}
EOY
  local uid
  uid="$(kubectl get clusterextension cert-manager-copy -o jsonpath='{.metadata.uid}')"
  kubectl apply -f - >&2 <<EOY
apiVersion: v1
kind: ConfigMap
metadata:
  name: two-controllers
  namespace: apps
  labels: {olm.operatorframework.io/owner-kind: ClusterExtension, olm.operatorframework.io/owner-name: cert-manager}
  ownerReferences:
    - {apiVersion: olm.operatorframework.io/v1, kind: ClusterExtension, name: cert-manager-copy, uid: "$uid", controller: true}
EOY
  kubectl apply -f "$ROOT/deploy/rbac/kubectl-single-owner.yaml" >&2
  # A user who may list ConfigMaps and ClusterExtensions only.
  kubectl apply -f - >&2 <<EOY
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: owners-test-narrow}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
  - {apiGroups: [olm.operatorframework.io], resources: [clusterextensions], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: owners-test-narrow}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: owners-test-narrow}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "single-owner:narrow"}]
EOY
}

teardown_file() {
  control_plane_down "$BATS_FILE_TMPDIR/cluster"
}

setup() {
  [ -z "${SKIP_ALL:-}" ] || skip "$SKIP_ALL"
}

owners() { run --separate-stderr "$PLUGIN" owners --preset "$ROOT/deploy/all-tools.yaml" "$@"; }

# findings: each finding as `name kind`, sorted.
findings() { jq -r '.findings[] | "\(.object.name) \(.kind)"' <<<"$output" | sort; }

@test "every planted finding is found, and nothing else" {
  owners -o json
  assert_equal "$status" 1
  assert_equal "$(findings)" "$(printf '%s\n' 'bad-revision refused-on-owner-change' 'orphaned owner-gone' \
    'two-controllers two-owners' 'two-tools two-owners')"
  # In the policy's words.
  run jq -r '.findings[] | select(.object.name == "two-tools") | .message' <<<"$output"
  assert_output --partial 'would be created with the owners of two tools'
  owners -o json
  run jq -r '.findings[] | select(.object.name == "two-controllers") | .message' <<<"$output"
  assert_output --partial 'its controller ownerReference names ClusterExtension "cert-manager-copy"'
  owners -o json
  run jq -r '.findings[] | select(.object.name == "orphaned") | .message' <<<"$output"
  assert_output --partial 'ClusterExtension "uninstalled" (olm.operatorframework.io/v1) does not exist'
  owners -o json
  run jq -r '.findings[] | select(.object.name == "bad-revision") | .message' <<<"$output"
  assert_output --partial 'which is not a revision'
}

@test "-o json is one object of owners, findings and skipped" {
  owners -o json
  assert_equal "$status" 1
  assert_equal "$(jq -c 'keys' <<<"$output")" '["findings","owners","skipped"]'
  # Each tool's owner, with its objects by kind, namespace, name.
  run jq -r '.owners[] | "\(.tool) \(.owner | to_entries | map("\(.key)=\(.value)") | join(",")): \(.objects | map(.name) | join(" "))"' <<<"$output"
  assert_line 'helm meta.helm.sh/release-name=web,meta.helm.sh/release-namespace=apps: two-tools web-config clean-config'
  assert_line 'flux kustomize.toolkit.fluxcd.io/name=apps,kustomize.toolkit.fluxcd.io/namespace=flux-system: kustomized'
  assert_line 'flux-helm helm.toolkit.fluxcd.io/name=podinfo,helm.toolkit.fluxcd.io/namespace=apps: podinfo'
  assert_line 'argocd argocd.argoproj.io/tracking-id=shop: argo-config two-tools'
  owners -o json
  # Argo CD's Application is not served: its owner cannot be checked, and says so.
  run jq -r '.skipped[] | "\(.what): \(.reason)"' <<<"$output"
  assert_line --partial 'owner Application "shop" in namespace "argocd"'
  assert_output --partial 'cannot check: Application (argoproj.io/v1alpha1) is not served'
}

@test "yaml is the same object; the table lists findings" {
  owners -o json
  local json="$output"
  owners -o yaml
  assert_equal "$status" 1
  # Same findings in both (messages compared whole).
  assert_equal "$(grep -c '^- object:' <<<"$output")" "$(jq '.findings | length' <<<"$json")"
  assert_output --partial 'kind: owner-gone'
  owners
  assert_equal "$status" 1
  assert_output --partial '4 finding(s):'
  assert_output --partial '[owner-gone] ConfigMap "orphaned" in namespace "apps"'
  assert_output --partial 'TOOL'
}

@test "a namespace without findings exits 0" {
  owners -n clean -o json
  assert_equal "$status" 0
  assert_equal "$(jq '.findings | length' <<<"$output")" 0
  assert_equal "$(jq -r '.owners[0].objects[0].name' <<<"$output")" clean-config
}

@test "--tool and --owner filter the owners and their findings" {
  owners --tool argocd -o json
  assert_equal "$status" 1
  assert_equal "$(jq -r '[.owners[].tool] | unique | join(",")' <<<"$output")" argocd
  assert_equal "$(findings)" 'two-tools two-owners'
  owners --owner olm.operatorframework.io/owner-name=uninstalled -o json
  assert_equal "$status" 1
  assert_equal "$(findings)" 'orphaned owner-gone'
}

@test "it could not run: exit 2" {
  run --separate-stderr "$PLUGIN" owners --kubeconfig /nonexistent/kubeconfig
  assert_equal "$status" 2
  run --separate-stderr "$PLUGIN" owners --no-such-flag
  assert_equal "$status" 2
  run --separate-stderr "$PLUGIN" owners --preset /nonexistent.yaml
  assert_equal "$status" 2
}

@test "the ClusterRole of deploy/rbac is enough for a scan" {
  run --separate-stderr "$PLUGIN" --kubeconfig "$AUDITOR_KUBECONFIG" owners --preset "$ROOT/deploy/all-tools.yaml" -o json
  assert_equal "$status" 1
  assert_equal "$(findings)" "$(printf '%s\n' 'bad-revision refused-on-owner-change' 'orphaned owner-gone' \
    'two-controllers two-owners' 'two-tools two-owners')"
}

@test "what cannot be listed or checked is skipped and said, never fatal" {
  run --separate-stderr "$PLUGIN" --kubeconfig "$NARROW_KUBECONFIG" owners --preset "$ROOT/deploy/all-tools.yaml" -o json
  assert_equal "$status" 1
  assert_equal "$(findings)" "$(printf '%s\n' 'bad-revision refused-on-owner-change' 'orphaned owner-gone' \
    'two-controllers two-owners' 'two-tools two-owners')"
  run jq -r '.skipped[] | "\(.what): \(.reason)"' <<<"$output"
  assert_line --regexp '^secrets: cannot be listed: .*forbidden'
  assert_line --regexp '^owner Helm release "web" in namespace "apps".*: cannot check: .*forbidden'
}

@test "who-owns explains one object" {
  run --separate-stderr "$PLUGIN" who-owns cm/two-controllers -n apps --preset "$ROOT/deploy/all-tools.yaml" -o json
  assert_equal "$status" 1
  assert_equal "$(jq -r '.owners[0].owner.tool' <<<"$output")" olm-v1
  assert_equal "$(jq -r '.owners[0].checked[0].found' <<<"$output")" exists
  assert_equal "$(jq -r '.ownerReferences[0] | "\(.kind) \(.name) \(.controller)"' <<<"$output")" 'ClusterExtension cert-manager-copy true'
  assert_equal "$(jq -r '.controllerChain[0].found' <<<"$output")" exists
  assert_equal "$(jq -r '.findings[0].kind' <<<"$output")" two-owners
  run --separate-stderr "$PLUGIN" who-owns configmaps/web-config --preset "$ROOT/deploy/all-tools.yaml"
  assert_equal "$status" 0
  assert_output --partial 'Helm release "web" in namespace "apps"'
  assert_output --partial ': exists'
}

@test "--report writes a Report per object, and a fixed finding's report disappears" {
  owners --report -o json
  assert_equal "$status" 1
  run kubectl get reports.openreports.io -n apps -l app.kubernetes.io/managed-by=kubectl-single-owner -o json
  assert_success
  assert_equal "$(jq '.items | length' <<<"$output")" 4
  run jq -r '.items[] | select(.scope.name == "orphaned") | "\(.metadata.name == "single-owner-" + .scope.uid) \(.metadata.ownerReferences[0].uid == .scope.uid) \(.summary.fail) \(.results[0].source) \(.results[0].result) \(.results[0].rule) \(.metadata.labels["kubewarden.io/policyreport-version"])"' <<<"$output"
  assert_output 'true true 1 single-owner fail owner-gone v2'
  # Fix one finding: the next run deletes its report.
  kubectl annotate configmap -n apps bad-revision olm.operatorframework.io/revision- >&2
  owners --report -o json
  assert_equal "$status" 1
  run kubectl get reports.openreports.io -n apps -l app.kubernetes.io/managed-by=kubectl-single-owner -o json
  assert_equal "$(jq -r '[.items[].scope.name] | sort | join(",")' <<<"$output")" 'orphaned,two-controllers,two-tools'
  # Put it back for the other tests.
  kubectl annotate configmap -n apps bad-revision olm.operatorframework.io/revision=01 >&2
}

@test "--report-kind policyreport writes wgpolicyk8s.io PolicyReports" {
  owners --report --report-kind policyreport -o json
  assert_equal "$status" 1
  run kubectl get policyreports.wgpolicyk8s.io -n apps -l app.kubernetes.io/managed-by=kubectl-single-owner -o json
  assert_success
  assert_equal "$(jq '.items | length' <<<"$output")" 4
  assert_equal "$(jq -r '[.items[].results[0].resourceSelector] | unique | map(tojson) | join(",")' <<<"$output")" '{}'
}
