#!/usr/bin/env bats
# Real Helm (the Helm v4.3 SDK, through scripts/helm.py) against the real API server, under
# deploy/helm.yaml: what Helm writes, Helm's own ownership check, and what Helm prints when the
# policy refuses a write its check let through. The charts are e2e-tests/charts/widgets-a and
# widgets-b, which share a CRD and a ClusterRole.

load common

HELM_WEBHOOK="$(webhook_of single-owner-helm)"
CHARTS="$ROOT/e2e-tests/charts"

setup_file() {
  "$ROOT/scripts/setup.sh" helm >&2
}

setup() {
  PATH="$ROOT/target/tools/bin:$PATH"
  shared="$(name shared).example.com"
}

# annotations KIND NAME [NAMESPACE]: the object's annotations, as JSON, read back from the API server.
annotations() { kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -c '.metadata.annotations // {}'; }
managed_by() { kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -r '.metadata.labels["app.kubernetes.io/managed-by"] // ""'; }
owner_json() { jq -nc --arg r "$1" '{"meta.helm.sh/release-name": $r, "meta.helm.sh/release-namespace": "default"}'; }

# helm_run ARGS...: real Helm; its answer in $status, $output and $stderr.
helm_run() { run --separate-stderr helm "$@"; }

# assert_helm_refused_by_policy OBJECT-KIND OBJECT-NAME OWNER NEW-OWNER: Helm failed, and what it
# printed is the policy's refusal of its write, as Helm frames it.
assert_helm_refused_by_policy() {
  assert_failure
  [[ "$stderr" == "Error: INSTALLATION FAILED: "* ]] || fail "not Helm's install error: $stderr"
  [[ "$stderr" == *"admission webhook \"$HELM_WEBHOOK\" denied the request: $1 \"$2\" is owned by [meta.helm.sh/release-name=$3], and this UPDATE would change its owner to [meta.helm.sh/release-name=$4]"* ]] ||
    fail "not the policy's refusal of $1 $2: $stderr"
}

@test "real Helm: install creates the chart's objects with Helm's annotations, read back from the API server; upgrade keeps them" {
  local a
  a="$(name a)"
  helm_run install "$a" "$CHARTS/widgets-a" --set "shared=$shared"
  assert_success
  assert_line "STATUS: deployed"
  assert_line "REVISION: 1"
  local object
  for object in "crd widgets.$shared" "clusterrole $shared-editor" "configmap $a-settings default"; do
    # shellcheck disable=SC2086
    assert_equal "$(annotations $object)" "$(owner_json "$a")"
    # shellcheck disable=SC2086
    assert_equal "$(managed_by $object)" Helm
  done
  # The hook ran (this control plane's Job is completed by scripts/helm.py) and, as Helm
  # creates hooks, carries no release annotations.
  assert_equal "$(annotations job "$a-migrate" default)" \
    '{"helm.sh/hook":"pre-install,pre-upgrade","helm.sh/hook-delete-policy":"before-hook-creation"}'
  helm_run upgrade "$a" "$CHARTS/widgets-a" --set "shared=$shared" --set setting=2
  assert_success
  assert_line "STATUS: deployed"
  assert_line "REVISION: 2"
  assert_equal "$(kubectl get configmap "$a-settings" -n default -o json | jq -r .data.setting)" 2
  assert_equal "$(annotations crd "widgets.$shared")" "$(owner_json "$a")"
  assert_equal "$(annotations clusterrole "$shared-editor")" "$(owner_json "$a")"
}

@test "real Helm, server-side and client-side apply: another release's install fails Helm's own check; with --take-ownership the policy refuses it, and the CRD stays the first release's" {
  local apply a b
  for apply in true false; do
    shared="$(name "shared-$apply").example.com"
    a="$(name "a-$apply")" b="$(name "b-$apply")"
    helm_run install "$a" "$CHARTS/widgets-a" --set "shared=$shared" --server-side="$apply"
    assert_success
    # Helm's check, in the client: it reads the CRD and finds another release's annotations.
    helm_run install "$b" "$CHARTS/widgets-b" --set "shared=$shared" --server-side="$apply"
    assert_failure
    [[ "$stderr" == "Error: INSTALLATION FAILED: unable to continue with install: CustomResourceDefinition \"widgets.$shared\" in namespace \"\" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key \"meta.helm.sh/release-name\" must equal \"$b\": current value is \"$a\""* ]] ||
      fail "not Helm's ownership error: $stderr"
    # --take-ownership skips Helm's check: the write reaches the API server, and admission refuses it.
    helm_run install "$b" "$CHARTS/widgets-b" --set "shared=$shared" --server-side="$apply" --take-ownership
    assert_helm_refused_by_policy CustomResourceDefinition "widgets.$shared" "$a" "$b"
    [[ "$stderr" == *"ClusterRole \"$shared-editor\" is owned by [meta.helm.sh/release-name=$a]"* ]] ||
      [ "$apply" = false ] || fail "server-side apply sends every object; the ClusterRole's refusal is missing: $stderr"
    assert_equal "$(annotations crd "widgets.$shared")" "$(owner_json "$a")"
    assert_equal "$(annotations clusterrole "$shared-editor")" "$(owner_json "$a")"
    # Helm records the failed release; release a is still the deployed one.
    helm_run status "$b"
    assert_line "STATUS: failed"
    helm_run status "$a"
    assert_line "STATUS: deployed"
  done
}

@test "real Helm: two releases that install at once cannot both take the shared CRD (the one Helm's check lets through is refused at admission)" {
  local round a b deployed
  for round in 1 2 3 4 5; do
    shared="$(name "race-$round").example.com"
    a="$(name "race-a-$round")" b="$(name "race-b-$round")"
    helm install "$a" "$CHARTS/widgets-a" --set "shared=$shared" --set hooks=false >"$BATS_TEST_TMPDIR/a" 2>&1 &
    helm install "$b" "$CHARTS/widgets-b" --set "shared=$shared" --set hooks=false >"$BATS_TEST_TMPDIR/b" 2>&1 &
    wait || true
    deployed="$(grep -l '^STATUS: deployed' "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b" | wc -l)"
    [ "$deployed" -le 1 ] || fail "round $round: both releases deployed: $(cat "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b")"
    # Each shared object names one release, and a release Helm reports deployed owns both.
    local crd role r
    crd="$(annotations crd "widgets.$shared" | jq -r '."meta.helm.sh/release-name"')"
    role="$(annotations clusterrole "$shared-editor" | jq -r '."meta.helm.sh/release-name"')"
    for r in a b; do
      grep -q '^STATUS: deployed' "$BATS_TEST_TMPDIR/$r" || continue
      [ "$r" = a ] && r="$a" || r="$b"
      [ "$crd" = "$r" ] && [ "$role" = "$r" ] ||
        fail "round $round: $r is deployed, but the CRD names $crd and the ClusterRole $role"
    done
  done
}

@test "README: what Helm prints when the policy refuses its write, as the README quotes it (run as written)" {
  "$ROOT/scripts/readme-test.py" --cluster "deploy/helm.yaml"
}
