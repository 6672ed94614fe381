#!/usr/bin/env bats
# Argo CD for real (v3.6.2's application controller and repo server, built from the Go module
# proxy: control-plane/argocd/go.mod, started by control-plane/argocd.sh; none: skipped),
# syncing from a git server on loopback, under deploy/argocd.yaml (and
# deploy/argocd-label-tracking.yaml), under deploy/all-tools.yaml and under
# deploy/identity/argocd-impersonation.yaml (sync impersonation): an Application's automated
# sync, upgrade, prune and deletion with its objects pass; a second Application syncing the
# first's object takes it without the policy (Argo CD only warns: SharedResourceWarning) unless
# FailOnSharedResource stops it, and is refused with the policy, the refusal in its operation
# state; two Applications syncing one new object at once: Argo CD's FailOnSharedResource is
# checked against the last refresh, before the sync, so both succeed without the policy, exactly
# one with it; label tracking and the installation id, each with a second owner refused, where
# the cluster's presets know them; every kind of write Argo CD made (the witness webhook's
# records) is in its corpus. Helpers: argocd.bash.

load ../cluster/common
load ../cluster/argocd

setup_file() {
  argocd_up
  [ -z "${ARGOCD_SKIP:-}" ] || return 0
  "$ROOT/control-plane/witness.sh" up argocd "$ARGOCD_USER" "$ARGOCD_SYNC_USERS"
}

teardown_file() {
  [ -z "${ARGOCD_SKIP:-}" ] || return 0
  "$ROOT/control-plane/witness.sh" down argocd
  argocd_down
}

setup() {
  [ -z "${ARGOCD_SKIP:-}" ] || skip "$ARGOCD_SKIP"
  argocd_env
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
  [ "$ARGOCD_IMPERSONATION" != true ] || sync_account "$ns"
  work="$(git_repo "$ns")"
}

teardown() {
  [ -n "${ns:-}" ] || return 0
  policy_back "$ARGOCD_POLICY" probe_refused
  argocd_settled || true
  local apps
  apps="$(kubectl get applications -n "$(app_namespace)" -l "e2e.single-owner.test/namespace=$ns" -o name)"
  # shellcheck disable=SC2086
  [ -z "$apps" ] || delete_apps ${apps//application.argoproj.io\//} || true
  kubectl delete clusterrole "$ns-viewer" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

@test "argocd: an Application's sync, upgrade and prune pass the policy; deleting it deletes its objects" {
  local rev
  configmap_file "$work/app/settings.yaml" settings v1
  configmap_file "$work/app/flags.yaml" flags v1
  # A cluster-scoped object too (its tracking id names the destination namespace); not with
  # impersonation: the namespace's argocd-sync may not write ClusterRoles.
  [ "$ARGOCD_IMPERSONATION" = true ] || kubectl create clusterrole "$ns-viewer" --verb get --resource configmaps \
    --dry-run=client -o yaml >"$work/app/viewer.yaml"
  git_push "$work" "v1"
  rev="$(git -C "$work" rev-parse HEAD)"
  # Pruning and the deletion in the background (Argo CD's PrunePropagationPolicy and resources
  # finalizer, both foreground by default): no garbage collector runs here (no
  # kube-controller-manager) to finish a foreground deletion.
  application "$ns-shop" app '{"syncPolicy": {"automated": {"prune": true}, "syncOptions": ["PrunePropagationPolicy=background"]}}' |
    jq '.metadata.finalizers = ["resources-finalizer.argocd.argoproj.io/background"]' | kubectl apply -f - >/dev/null
  run synced "$ns-shop" "$rev"
  [[ "$output" == Succeeded\|* ]] || fail "$output"
  assert_equal "$(annotation_in "$ns" configmap settings "$TRACKING_ID")" "$(tracking_of "$ns-shop" ConfigMap settings)"
  [ "$ARGOCD_IMPERSONATION" = true ] ||
    assert_equal "$(annotation_in "" clusterrole "$ns-viewer" "$TRACKING_ID")" "$(instance_of "$ns-shop"):rbac.authorization.k8s.io/ClusterRole:$ns/$ns-viewer"
  # Upgrade: new data, and flags no longer in git (pruned).
  configmap_file "$work/app/settings.yaml" settings v2
  rm "$work/app/flags.yaml"
  git_push "$work" "v2"
  rev="$(git -C "$work" rev-parse HEAD)"
  refresh "$ns-shop"
  run synced "$ns-shop" "$rev"
  [[ "$output" == Succeeded\|* ]] || fail "$output"
  assert_equal "$(kubectl get configmap settings -n "$ns" -o jsonpath='{.data.by}')" v2
  run kubectl get configmap flags -n "$ns"
  assert_failure
  # Deleted with Argo CD's resources finalizer: its objects go with it.
  kubectl delete application -n "$(app_namespace)" "$ns-shop" --wait=true --timeout 60s >/dev/null
  run kubectl get configmap settings -n "$ns"
  assert_failure
  run kubectl get clusterrole "$ns-viewer"
  assert_failure
}

@test "argocd: a second Application syncing the first's object is refused, the refusal in its operation state; without the policy it takes it unless FailOnSharedResource" {
  local web shop owned to
  configmap_file "$work/app/shared.yaml" shared v1
  git_push "$work" "v1"
  application "$ns-shop" app | kubectl apply -f - >/dev/null
  run sync_now "$ns-shop"
  [[ "$output" == Succeeded\|* ]] || fail "$output"
  application "$ns-web" app | kubectl apply -f - >/dev/null
  run sync_now "$ns-web"
  # all-tools.yaml names the scheme after the owner: "[...] (argocd), and this UPDATE ...".
  owned="admission webhook \"$ARGOCD_WEBHOOK\" denied the request: ConfigMap \"shared\" in namespace \"$ns\" is owned by [$TRACKING_ID=$(tracking_of "$ns-shop" ConfigMap shared)]"
  to="and this UPDATE would change its owner to [$TRACKING_ID=$(tracking_of "$ns-web" ConfigMap shared)]"
  [[ "$output" == "Failed|one or more objects failed to apply, reason: error when patching \""*"\": $owned"*"$to"* ]] ||
    fail "not the policy's refusal: $output"
  run resource_message "$ns-web" ConfigMap shared
  [[ "$output" == "error when patching \""*"\": $owned"*"$to"* ]] || fail "not the policy's refusal in the resource's result: $output"
  assert_equal "$(annotation_in "$ns" configmap shared "$TRACKING_ID")" "$(tracking_of "$ns-shop" ConfigMap shared)"
  # Without the policy: Argo CD's own check stops web only when asked to (FailOnSharedResource,
  # from the condition its last refresh found) ...
  policy_off "$ARGOCD_POLICY" probe_refused
  shop="$(condition_of "$ns-web" SharedResourceWarning)"
  web="$(sync_now "$ns-web" FailOnSharedResource=true)"
  local taken_after_check
  taken_after_check="$(annotation_in "$ns" configmap shared "$TRACKING_ID")"
  # ... and otherwise takes the object without a word (but that warning).
  local took
  took="$(sync_now "$ns-web")"
  local taken
  taken="$(annotation_in "$ns" configmap shared "$TRACKING_ID")"
  policy_on "$ARGOCD_POLICY" probe_refused
  assert_equal "$shop" "ConfigMap/shared is part of applications $(app_namespace)/$ns-web and $(qualified_of "$ns-shop")"
  assert_equal "$web" "Failed|Shared resource found: ConfigMap/shared is part of applications $(app_namespace)/$ns-web and $(qualified_of "$ns-shop")"
  assert_equal "$taken_after_check" "$(tracking_of "$ns-shop" ConfigMap shared)"
  [[ "$took" == Succeeded\|* ]] || fail "web without the policy: $took"
  assert_equal "$taken" "$(tracking_of "$ns-web" ConfigMap shared)"
}

# Server-side apply (ServerSideApply=true): with client-side apply (kubectl apply's get, then
# create) the later of two creates fails "configmaps ... already exists" (no retry as an update),
# which hides the ownership race behind a create race.
@test "argocd: two Applications syncing one object at once, FailOnSharedResource on both: both succeed without the policy, exactly one with it" {
  local rounds="${ARGOCD_RACE_ROUNDS:-3}" i both=0 one=0 result
  for i in $(seq 1 "$rounds"); do
    configmap_file "$work/race/off-$i/race.yaml" "race-off-$i" "round $i"
    configmap_file "$work/race/on-$i/race.yaml" "race-on-$i" "round $i"
  done
  git_push "$work" "race"
  policy_off "$ARGOCD_POLICY" probe_refused
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "off-$i" FailOnSharedResource=true ServerSideApply=true)"
    [ "${result%% *}" = 2 ] && both=$((both + 1))
  done
  policy_on "$ARGOCD_POLICY" probe_refused
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "on-$i" FailOnSharedResource=true ServerSideApply=true)"
    [ "${result%% *}" = 1 ] && [ -n "${result#* }" ] && one=$((one + 1))
  done
  echo "# $rounds rounds of two Applications (FailOnSharedResource=true, server-side apply) syncing one ConfigMap at once: both succeeded in $both without the policy; exactly one in $one with it" >&3
  cat "$BATS_TEST_TMPDIR/race.log"
  assert_equal "$both" "$rounds"
  assert_equal "$one" "$rounds"
}

@test "argocd: label tracking: a sync passes deploy/argocd-label-tracking.yaml, a second Application's is refused" {
  [ -n "$LABEL_POLICY" ] || skip "no preset of this cluster knows Argo CD's instance label (label tracking): deploy/argocd-label-tracking.yaml is the one-tool cluster's"
  argocd_up ARGOCD_TRACKING=label
  work="$(git_repo "$ns")"
  configmap_file "$work/app/shared.yaml" shared v1
  git_push "$work" "v1"
  application "$ns-shop" app | kubectl apply -f - >/dev/null
  run sync_now "$ns-shop"
  [[ "$output" == Succeeded\|* ]] || fail "$output"
  assert_equal "$(label_in "$ns" configmap shared "$INSTANCE")" "$ns-shop"
  assert_equal "$(annotation_in "$ns" configmap shared "$TRACKING_ID")" ""
  # A second sync of the same Application (an update that keeps the label) passes.
  configmap_file "$work/app/shared.yaml" shared v2
  git_push "$work" "v2"
  run sync_now "$ns-shop"
  [[ "$output" == Succeeded\|* ]] || fail "$output"
  application "$ns-web" app | kubectl apply -f - >/dev/null
  run sync_now "$ns-web"
  [[ "$output" == "Failed|one or more objects failed to apply, reason: error when patching \""*"\": admission webhook \"$LABEL_WEBHOOK\" denied the request: ConfigMap \"shared\" in namespace \"$ns\" is owned by [$INSTANCE=$ns-shop]"*"and this UPDATE would change its owner to [$INSTANCE=$ns-web]"* ]] ||
    fail "not the policy's refusal: $output"
  assert_equal "$(label_in "$ns" configmap shared "$INSTANCE")" "$ns-shop"
  argocd_up
}

@test "argocd: the installation id: a sync with it set, and with it unset again, passes; a second Application, and another installation's Application of the same name, are refused" {
  argocd_up ARGOCD_INSTALLATION_ID=east
  work="$(git_repo "$ns")"
  configmap_file "$work/app/shared.yaml" shared v1
  git_push "$work" "v1"
  application "$ns-shop" app | kubectl apply -f - >/dev/null
  run sync_now "$ns-shop"
  [[ "$output" == Succeeded\|* ]] || fail "$output"
  assert_equal "$(annotation_in "$ns" configmap shared "$INSTALLATION_ID")" east
  assert_equal "$(annotation_in "$ns" configmap shared "$TRACKING_ID")" "$(tracking_of "$ns-shop" ConfigMap shared)"
  application "$ns-web" app | kubectl apply -f - >/dev/null
  run sync_now "$ns-web"
  [[ "$output" == "Failed|one or more objects failed to apply, reason: error when patching \""*"\": admission webhook \"$ARGOCD_WEBHOOK\" denied the request: ConfigMap \"shared\" in namespace \"$ns\" is owned by ["*"$TRACKING_ID=$(tracking_of "$ns-shop" ConfigMap shared)"*"]"*"and this UPDATE would change its owner to ["*"$TRACKING_ID=$(tracking_of "$ns-web" ConfigMap shared)"* ]] ||
    fail "not the policy's refusal: $output"
  delete_apps "$ns-web"
  if [ -n "$INSTALLATIONS" ]; then
    # Another installation (installationID west) with an Application of the same name: the
    # tracking id is the same, the installation id would change.
    argocd_up ARGOCD_INSTALLATION_ID=west
    kubectl get application -n "$(app_namespace)" "$ns-shop" -o json |
      jq --arg url "$ARGOCD_GIT_URL/$ns.git" '.spec.source.repoURL = $url' | kubectl apply -f - >/dev/null
    run sync_now "$ns-shop"
    [[ "$output" == "Failed|one or more objects failed to apply, reason: error when patching \""*"\": admission webhook \"$ARGOCD_WEBHOOK\" denied the request: ConfigMap \"shared\" in namespace \"$ns\" is owned by ["*"$INSTALLATION_ID=east"*"]"*"and this UPDATE would change its owner to ["*"$INSTALLATION_ID=west"* ]] ||
      fail "not the policy's refusal: $output"
    assert_equal "$(annotation_in "$ns" configmap shared "$INSTALLATION_ID")" east
  fi
  # installationID unset again: the next sync drops the annotation, which the policy allows.
  argocd_up
  kubectl get application -n "$(app_namespace)" "$ns-shop" -o json |
    jq --arg url "$ARGOCD_GIT_URL/$ns.git" '.spec.source.repoURL = $url' | kubectl apply -f - >/dev/null
  run sync_now "$ns-shop"
  [[ "$output" == Succeeded\|* ]] || fail "$output"
  assert_equal "$(annotation_in "$ns" configmap shared "$INSTALLATION_ID")" ""
  assert_equal "$(annotation_in "$ns" configmap shared "$TRACKING_ID")" "$(tracking_of "$ns-shop" ConfigMap shared)"
}

@test "argocd: every kind of write Argo CD made in this file is in its corpus" {
  run python3 "$ROOT/e2e-tests/corpus/witnessed.py" argocd "$CLUSTER_DIR/witness-argocd.jsonl"
  echo "$output" | sed 's/^/# /' >&3
  assert_success
}
