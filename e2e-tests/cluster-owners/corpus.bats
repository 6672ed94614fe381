#!/usr/bin/env bats
# kubectl single-owner over the lifecycle corpus, through a real API server: the cluster
# holds what e2e-tests/corpus/<tool>.yaml's accepted writes leave behind (each object's final
# state), every owner those objects name and the objects their rules look up, and one planted
# finding of each kind the plugin reports (corpus_seed.py writes them all, and what it
# expects). The scan must find exactly the planted findings, list every seeded object under
# its owner, accept each tool's objects under the tool's own preset too, and --report must
# write one Report per object with a finding, as the audit scanner does.
#
# Its own etcd and kube-apiserver on free loopback ports, as owners.bats (they run side by
# side). The kube-apiserver: $KUBE_APISERVER, else the one control-plane/build.sh
# caches; none: skipped. The plugin: make kubectl-plugin.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
HERE="$BATS_TEST_DIRNAME"

log() { echo "corpus.bats: $*" >&2; }
source "$BATS_TEST_DIRNAME/control-plane.bash"

setup_file() {
  plugin_suite_up default "admin:system:masters" || return 1
  [ -z "${SKIP_ALL:-}" ] || return 0
  local dir="$BATS_FILE_TMPDIR/cluster"
  export SEED="$BATS_FILE_TMPDIR/seed.yaml" EXPECTED="$BATS_FILE_TMPDIR/expected.json"
  # The owner kinds of crds.yaml and Kubewarden's report kinds, then the corpus' own owner and looked-up kinds
  # (ClusterServiceVersion, ClusterObjectSet, HelmChart, Application) and the stand-in that
  # serves the seeded APIService's group.
  python3 "$HERE/corpus_seed.py" crds >"$BATS_FILE_TMPDIR/corpus-crds.yaml"
  kubectl apply -f "$HERE/crds.yaml" -f "$BATS_FILE_TMPDIR/corpus-crds.yaml" >&2
  "$ROOT/control-plane/kubewarden-crds.sh" reports | kubectl apply --server-side -f - >&2
  kubectl wait --for condition=Established --timeout 60s crd --all >&2
  # Discovery of new CRDs takes the aggregator a moment.
  wait_for 30 "CRD discovery" kubectl get clusterextensions,clusterserviceversions,clusterobjectsets,helmreleases,helmcharts,kustomizations,applications,standins.webhook.cert-manager.io,reports,policyreports,apps.example.crossplane.io,xnetworks.example.org,xplatforms.example.org,xusers.example.org -A
  python3 "$HERE/corpus_seed.py" manifests "$SEED" "$EXPECTED" 2>"$BATS_FILE_TMPDIR/seed.log"
  cat "$BATS_FILE_TMPDIR/seed.log" >&2
  kubectl apply -f "$SEED" >&2
  # Each XR's composed objects name it by its uid, which the API server chose: patched in.
  local c uid ns
  while IFS= read -r c; do
    ns="$(jq -r '.xr.namespace // empty' <<<"$c")"
    uid="$(kubectl get "$(jq -r .xr.resource <<<"$c")" "$(jq -r .xr.name <<<"$c")" ${ns:+-n "$ns"} -o jsonpath='{.metadata.uid}')"
    [ -n "$uid" ] || { log "no uid for $c"; return 1; }
    ns="$(jq -r '.namespace // empty' <<<"$c")"
    kubectl patch "$(jq -r .plural <<<"$c")" "$(jq -r .name <<<"$c")" ${ns:+-n "$ns"} --type json \
      -p "[{\"op\": \"replace\", \"path\": \"/metadata/ownerReferences/$(jq -r .xr.index <<<"$c")/uid\", \"value\": \"$uid\"}]" >&2
  done < <(jq -c '.composed[]' "$EXPECTED")
}

teardown_file() {
  control_plane_down "$BATS_FILE_TMPDIR/cluster"
}

setup() {
  [ -z "${SKIP_ALL:-}" ] || skip "$SKIP_ALL"
}

owners() { run --separate-stderr "$PLUGIN" owners --preset "$ROOT/deploy/all-tools.yaml" "$@"; }

# findings: each finding as `name kind`, sorted.
findings() { jq -r '.findings[] | "\(.object.name) \(.kind)"' | sort; }

# The planted findings, one of each kind the plugin reports, one per object.
PLANTED_FINDINGS="controller-of-another-extension two-owners
gone-application owner-gone
gone-application-in-any-namespace owner-gone
gone-applyset owner-gone
gone-clusterextension owner-gone
gone-clusterserviceversion owner-gone
gone-composite owner-gone
gone-helm-release owner-gone
gone-helmrelease owner-gone
gone-kapp-app owner-gone
gone-kustomization owner-gone
gone-timoni-instance owner-gone
labels-and-release-of-two-extensions two-owners
non-canonical-revision refused-on-owner-change
planted-gone-clusterserviceversion-by-name owner-gone
planted-namespaced-owner-kind refused-on-owner-change
recreated-composite owner-gone
release-the-helmrelease-does-not-install two-owners
revision-of-another-extension two-owners
two-tools two-owners
unreadable-handover refused-on-owner-change"

# owned: each (owner, object) pair of -o json's owners (stdin), one a line, sorted. Not made
# unique: an API server before 1.22 serves Ingresses under extensions/v1beta1 and
# networking.k8s.io/v1 both, and the plugin must list the one object once.
owned() {
  jq -r '.owners[] | "\(.tool) \(.owner | to_entries | map("\(.key)=\(.value)") | join(",")) \(.objects[] | "\(.kind) \(.namespace // "-")/\(.name)")"' | sort
}

@test "the seed is in the cluster: every object it writes, what it left out said" {
  run kubectl get -f "$SEED" -o name
  assert_success
  assert_equal "${#lines[@]}" "$(grep -c '^kind: ' "$SEED")"
  # The one collision of the corpus: flux's and flux-helm's Service apps/podinfo.
  run jq -r '.left_out[]' "$EXPECTED"
  assert_output --partial "flux: Service 'podinfo' in namespace 'apps'"
  assert_equal "${#lines[@]}" 1
  # Every corpus file has objects left in the cluster.
  run jq -r '.tools | to_entries[] | select(.value | length > 0) | .key' "$EXPECTED"
  for tool in olm-v1 olm-v0 helm flux flux-helm argocd applyset kapp timoni crossplane; do assert_line "$tool"; done
}

@test "every planted finding is found, and nothing else" {
  owners -o json
  assert_equal "$status" 1
  assert_equal "$(findings <<<"$output")" "$PLANTED_FINDINGS"
  # The seeder plants the same ones.
  assert_equal "$(jq -r '.findings[] | "\(.object.name) \(.kind)"' "$EXPECTED" | sort)" "$PLANTED_FINDINGS"
  # Kinds and namespaces too: the planted objects, nothing of the corpus'.
  assert_equal "$(jq -c '[.findings[] | {object: {kind: .object.kind, namespace: .object.namespace, name: .object.name} | with_entries(select(.value != null)), kind}] | sort_by(.object.name)' <<<"$output")" \
    "$(jq -c '.findings | sort_by(.object.name)' "$EXPECTED")"
  local json="$output"
  message() { jq -r --arg n "$1" '.findings[] | select(.object.name == $n) | .message' <<<"$json"; }
  run message two-tools
  assert_output --partial 'would be created with the owners of two tools'
  run message controller-of-another-extension
  assert_output --partial 'ClusterExtension "planted-copy"'
  run message revision-of-another-extension
  assert_output --partial 'planted-copy-1'
  run message gone-clusterextension
  assert_output --partial 'ClusterExtension "uninstalled" (olm.operatorframework.io/v1) does not exist'
  run message gone-clusterserviceversion
  assert_output --partial 'ClusterServiceVersion "gone.v1.0.0" in namespace "planted" (operators.coreos.com/v1alpha1) does not exist'
  run message planted-gone-clusterserviceversion-by-name
  assert_output --partial 'ClusterServiceVersion "gone.v2.0.0" (operators.coreos.com/v1alpha1) does not exist'
  run message gone-helmrelease
  assert_output --partial 'HelmRelease "gone" in namespace "planted" (helm.toolkit.fluxcd.io/v2) does not exist'
  run message gone-kustomization
  assert_output --partial 'Kustomization "gone" in namespace "flux-system" (kustomize.toolkit.fluxcd.io/v1) does not exist'
  run message gone-application
  assert_output --partial 'Application "gone" in namespace "argocd" (argoproj.io/v1alpha1) does not exist'
  run message gone-application-in-any-namespace
  assert_output --partial 'Application "gone" in namespace "planted" (argoproj.io/v1alpha1) does not exist'
  run message gone-applyset
  assert_output --partial 'ApplySet "applyset-gone-v1" (its parent: a Secret, ConfigMap or parent-type custom resource labelled applyset.kubernetes.io/id=applyset-gone-v1) does not exist'
  run message gone-timoni-instance
  assert_output --partial 'Timoni instance "gone" in namespace "planted" (its storage Secret timoni.gone) does not exist'
  run message gone-kapp-app
  assert_output --partial 'kapp app "1000000000000000000" (its record: a ConfigMap labelled kapp.k14s.io/is-app whose spec has labelValue 1000000000000000000) does not exist'
  run message gone-composite
  assert_output --partial 'composite resource App "gone" in namespace "planted" (example.crossplane.io/v1, uid 9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a) does not exist'
  run message recreated-composite
  assert_output --partial 'composite resource App "recreated" in namespace "planted" (example.crossplane.io/v1, uid 0e1d2c3b-4a59-4687-9766-a5b4c3d2e1f0) does not exist'
  run message gone-helm-release
  assert_output --partial 'Helm release "gone" in namespace "planted" (its storage Secrets, owner=helm,name=gone) does not exist'
  run message planted-namespaced-owner-kind
  assert_output --partial 'is cluster-scoped, but its owner kind'
  run message non-canonical-revision
  assert_output --partial 'which is not a revision'
  run message unreadable-handover
  assert_output --partial 'which does not name a successor'
}

@test "every owner can be checked: nothing skipped" {
  owners -o json
  assert_equal "$status" 1
  assert_equal "$(jq -c '.skipped' <<<"$output")" '[]'
}

@test "every seeded object is listed under its owner, compared whole" {
  owners -o json
  assert_equal "$status" 1
  assert_equal "$(owned <<<"$output")" "$(owned <"$EXPECTED")"
  # Every corpus file's objects that carry owner keys are among them.
  local tool
  for tool in olm-v1 olm-v0 helm flux flux-helm argocd applyset kapp timoni crossplane; do
    assert [ "$(jq --arg t "$tool" '[.owners[].objects[] as $o | .tools[$t][] | select(. == $o)] | length' "$EXPECTED")" -gt 0 ]
  done
}

# A tool's own preset's findings: its planted ones (those of other tools' keys it does not
# read, nor the aliases and handover of all-tools).
preset_findings() {
  case "$1" in
    olm-v1) printf '%s\n' 'controller-of-another-extension two-owners' 'gone-clusterextension owner-gone' \
      'non-canonical-revision refused-on-owner-change' 'planted-namespaced-owner-kind refused-on-owner-change' \
      'revision-of-another-extension two-owners' ;;
    olm-v0) printf '%s\n' 'gone-clusterserviceversion owner-gone' 'planted-gone-clusterserviceversion-by-name owner-gone' ;;
    flux) printf '%s\n' 'gone-kustomization owner-gone' ;;
    argocd) printf '%s\n' 'gone-application owner-gone' 'gone-application-in-any-namespace owner-gone' ;;
    argocd-label-tracking) ;;
    applyset) printf '%s\n' 'gone-applyset owner-gone' ;;
    kapp) printf '%s\n' 'gone-kapp-app owner-gone' ;;
    timoni) printf '%s\n' 'gone-timoni-instance owner-gone' ;;
    crossplane) printf '%s\n' 'gone-composite owner-gone' 'recreated-composite owner-gone' ;;
  esac
}

@test "each tool's own preset: its planted findings, none on the tool's objects, each listed" {
  local preset tool json
  for preset in olm-v1 olm-v0 helm flux argocd argocd-label-tracking applyset kapp timoni crossplane; do
    tool="${preset%-label-tracking}"
    run --separate-stderr "$PLUGIN" owners --preset "$ROOT/deploy/$preset.yaml" -o json
    [ "$status" -le 1 ] || fail "$preset: exit $status: $stderr"
    json="$output"
    assert_equal "$preset: $(jq -c '.skipped' <<<"$json")" "$preset: []"
    if [ "$preset" = helm ]; then
      # Helm's preset alone reads the release annotations OLM v1 and helm-controller write
      # through the Helm SDK as Helm releases, whose storage is theirs, not Helm's Secrets
      # (docs/owners.md, Limits): those are gone to it. Its own planted finding is found.
      run jq -r '.findings[] | "\(.object.name) \(.kind)"' <<<"$json"
      assert_line 'gone-helm-release owner-gone'
      refute_line --partial 'two-tools'
    else
      assert_equal "$preset: $(findings <<<"$json")" "$preset: $(preset_findings "$preset")"
    fi
    # The tool's seeded objects: none of them is a finding.
    run jq -r --slurpfile e "$EXPECTED" --arg t "$tool" '
      ($e[0].tools[$t] | map("\(.kind) \(.namespace // "-")/\(.name)")) as $mine
      | .findings[] | "\(.object.kind) \(.object.namespace // "-")/\(.object.name)" as $o
      | select($mine | index($o)) | "\($o): \(.kind): \(.message)"' <<<"$json"
    assert_equal "$preset: $output" "$preset: "
    # Those all-tools lists under the tool's own scheme are listed under this preset too
    # (label tracking reads another key: its owners are the app.kubernetes.io/instance labels).
    [ "$preset" = argocd-label-tracking ] && continue
    run jq -r --slurpfile e "$EXPECTED" --arg t "$tool" '
      ([.owners[].objects[] | "\(.kind) \(.namespace // "-")/\(.name)"]) as $listed
      | ($e[0].tools[$t] | map("\(.kind) \(.namespace // "-")/\(.name)")) as $mine
      | $e[0].owners[] | select(.tool == $t) | .objects[]
      | "\(.kind) \(.namespace // "-")/\(.name)" | select(($mine | index(.)) and (($listed | index(.)) | not))' <<<"$json"
    assert_equal "$preset: $output" "$preset: "
  done
}

@test "--report writes one Report per object with a finding, as the audit scanner does" {
  owners --report -o json
  assert_equal "$status" 1
  local json="$output" reports
  reports="$(kubectl get reports.openreports.io,clusterreports.openreports.io -A -l app.kubernetes.io/managed-by=kubectl-single-owner -o json)"
  # One per finding (one finding per planted object), Reports in the object's namespace and
  # ClusterReports for cluster-scoped objects.
  assert_equal "$(jq '.items | length' <<<"$reports")" "$(jq '.findings | length' <<<"$json")"
  assert_equal "$(jq '.items | length' <<<"$reports")" 21
  assert_equal "$(jq -r '.items[] | "\(.scope.name) \(.results[].rule)"' <<<"$reports" | sort)" "$PLANTED_FINDINGS"
  assert_equal "$(jq -r '[.items[] | select(.kind == "ClusterReport") | .scope.name] | sort | join(",")' <<<"$reports")" \
    'planted-gone-clusterserviceversion-by-name,planted-namespaced-owner-kind'
  # The audit scanner's shape, each report against its object and its finding.
  run jq -r '.items[] | select(
      .metadata.name != "single-owner-" + .scope.uid
      or .metadata.ownerReferences[0].uid != .scope.uid
      or .metadata.ownerReferences[0].name != .scope.name
      or .metadata.ownerReferences[0].kind != .scope.kind
      or (.kind == "Report") != (.metadata.namespace == .scope.namespace and .scope.namespace != "")
      or .metadata.labels["kubewarden.io/policyreport-version"] != "v2"
      or .source != "single-owner"
      or .summary != {pass: 0, fail: 1, warn: 0, error: 0, skip: 0}
      or (.results | length) != 1
      or .results[0].source != "single-owner" or .results[0].result != "fail"
      or .results[0].policy != "single-owner-all-tools" or .results[0].scored != true
      or .results[0].resourceSelector != {}
      or .results[0].properties.finding != .results[0].rule) | .scope.name' <<<"$reports"
  assert_output ''
  # The message is the finding's, and the scope's uid the live object's.
  local name uid
  for name in two-tools gone-helm-release non-canonical-revision; do
    assert_equal "$(jq -r --arg n "$name" '.items[] | select(.scope.name == $n) | .results[0].message' <<<"$reports")" \
      "$(jq -r --arg n "$name" '.findings[] | select(.object.name == $n) | .message' <<<"$json")"
    uid="$(kubectl get -n planted "$(jq -r --arg n "$name" '.items[] | select(.scope.name == $n) | "\(.scope.kind)/\(.scope.name)"' <<<"$reports")" -o jsonpath='{.metadata.uid}')"
    assert_equal "$(jq -r --arg n "$name" '.items[] | select(.scope.name == $n) | .scope.uid' <<<"$reports")" "$uid"
  done
  # None for the corpus' objects.
  assert_equal "$(jq -r '[.items[] | select(.scope.namespace != "planted" and (.scope.name | startswith("planted-") | not))] | length' <<<"$reports")" 0
}

@test "--report-kind policyreport: one PolicyReport per object with a finding" {
  owners --report --report-kind policyreport -o json
  assert_equal "$status" 1
  local reports
  reports="$(kubectl get policyreports.wgpolicyk8s.io,clusterpolicyreports.wgpolicyk8s.io -A -l app.kubernetes.io/managed-by=kubectl-single-owner -o json)"
  assert_equal "$(jq '.items | length' <<<"$reports")" "$(jq '.findings | length' <<<"$output")"
  assert_equal "$(jq -r '.items[] | "\(.scope.name) \(.results[].rule)"' <<<"$reports" | sort)" "$PLANTED_FINDINGS"
  assert_equal "$(jq -r '[.items[].results[0].resourceSelector] | unique | map(tojson) | join(",")' <<<"$reports")" '{}'
}
