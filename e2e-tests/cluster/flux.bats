#!/usr/bin/env bats
# Flux for real (source-controller, kustomize-controller and helm-controller, built from the Go
# module proxy: control-plane/flux-*/go.mod, started by control-plane/flux.sh; none: skipped),
# reconciling from a git server on loopback, under deploy/flux.yaml and deploy/helm.yaml, and
# under deploy/all-tools.yaml through the link in cluster-tools/: a Kustomization's apply,
# upgrade, prune and deletion pass; a second Kustomization applying the same object takes it
# without the policy (Flux checks no owner) and is refused with it, the refusal in its Ready
# condition; two racing Kustomizations both report Ready without the policy, exactly one with
# it; a HelmRelease's install, upgrade and uninstall pass; a HelmRelease taking a plain Helm
# release's objects is refused; every kind of write the two controllers made (the witness
# webhook's records) is in their corpus. Helpers: flux.bash.

load ../cluster/common
load ../cluster/flux

setup_file() {
  flux_up
  [ -z "${FLUX_SKIP:-}" ] || return 0
  "$ROOT/control-plane/witness.sh" up flux "$KS_USER" "$KS_TENANT_USERS" "$SOURCE_USER"
  "$ROOT/control-plane/witness.sh" up flux-helm "$HR_USER"
}

teardown_file() {
  [ -z "${FLUX_SKIP:-}" ] || return 0
  "$ROOT/control-plane/witness.sh" down flux
  "$ROOT/control-plane/witness.sh" down flux-helm
  flux_down
}

setup() {
  [ -z "${FLUX_SKIP:-}" ] || skip "$FLUX_SKIP"
  flux_env
  ns="$(name ns)"
  kubectl create namespace "$ns" >/dev/null
  tenant "$ns"
  work="$(git_repo "$ns")"
}

teardown() {
  [ -n "${ns:-}" ] || return 0
  policy_back "$FLUX_POLICY" probe_refused "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

@test "flux: a Kustomization's apply, upgrade and prune pass the policy; deleting it deletes its objects" {
  configmap_file "$work/app/settings.yaml" settings v1
  configmap_file "$work/app/flags.yaml" flags v1
  git_push "$work" "v1"
  git_source "$ns" "$ns"
  kustomization "$ns" shop ./app | kubectl apply -f - >/dev/null
  run outcome "$ns" kustomization shop
  [[ "$output" == True\|* ]] || fail "$output"
  assert_equal "$(label_in "$ns" configmap settings "$KS_NAME")" shop
  assert_equal "$(label_in "$ns" configmap flags "$KS_NAMESPACE")" "$ns"
  # Upgrade: new data, and flags no longer in git (pruned).
  configmap_file "$work/app/settings.yaml" settings v2
  rm "$work/app/flags.yaml"
  git_push "$work" "v2"
  reconcile "$ns" gitrepository apps
  reconcile "$ns" kustomization shop
  run outcome "$ns" kustomization shop
  [[ "$output" == True\|* ]] || fail "$output"
  assert_equal "$(kubectl get configmap settings -n "$ns" -o jsonpath='{.data.by}')" v2
  run kubectl get configmap flags -n "$ns"
  assert_failure
  # Deleted with prune on: its objects go with it.
  kubectl delete -n "$ns" kustomization shop --wait=true --timeout 60s >/dev/null
  run kubectl get configmap settings -n "$ns"
  assert_failure
}

@test "flux: a second Kustomization applying the first's object is refused, the refusal in its Ready condition; without the policy it takes it" {
  configmap_file "$work/app/shared.yaml" shared v1
  git_push "$work" "v1"
  git_source "$ns" "$ns"
  kustomization "$ns" shop ./app | kubectl apply -f - >/dev/null
  run outcome "$ns" kustomization shop
  [[ "$output" == True\|* ]] || fail "$output"
  kustomization "$ns" web ./app | kubectl apply -f - >/dev/null
  run outcome "$ns" kustomization web
  echo "# web's Ready condition: $output" >&3
  [[ "$output" == "False|ConfigMap/$ns/shared dry-run failed"*"admission webhook \"$FLUX_WEBHOOK\" denied the request: ConfigMap \"shared\" in namespace \"$ns\" is owned by [$KS_NAME=shop"*"this UPDATE would change its owner to [$KS_NAME=web"* ]] ||
    fail "not the policy's refusal: $output"
  assert_equal "$(label_in "$ns" configmap shared "$KS_NAME")" shop
  # Without the policy: web's next try relabels it, and both report Ready.
  policy_off "$FLUX_POLICY" probe_refused "$ns"
  reconcile "$ns" kustomization web
  local web shop taken
  web="$(outcome "$ns" kustomization web)"
  reconcile "$ns" kustomization shop
  shop="$(outcome "$ns" kustomization shop)"
  taken="$(label_in "$ns" configmap shared "$KS_NAME")"
  policy_on "$FLUX_POLICY" probe_refused "$ns"
  [[ "$web" == True\|* ]] || fail "web without the policy: $web"
  [[ "$shop" == True\|* ]] || fail "shop without the policy: $shop"
  [ "$taken" = shop ] || [ "$taken" = web ] || fail "labels: $taken"
}

@test "flux: two Kustomizations applying one object at once: both Ready without the policy, exactly one with it" {
  local rounds="${FLUX_RACE_ROUNDS:-3}" i both=0 one=0 result
  for i in $(seq 1 "$rounds"); do
    configmap_file "$work/race/off-$i/race.yaml" "race-off-$i" "round $i"
    configmap_file "$work/race/on-$i/race.yaml" "race-on-$i" "round $i"
  done
  git_push "$work" "race"
  git_source "$ns" "$ns"
  policy_off "$FLUX_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns" "off-$i")"
    [ "${result%% *}" = 2 ] && both=$((both + 1))
  done
  policy_on "$FLUX_POLICY" probe_refused "$ns"
  for i in $(seq 1 "$rounds"); do
    result="$(race_round "$ns" "on-$i")"
    [ "${result%% *}" = 1 ] && [ -n "${result#* }" ] && one=$((one + 1))
  done
  echo "# $rounds rounds of two Kustomizations applying one ConfigMap at once: both Ready in $both without the policy; exactly one in $one with it" >&3
  cat "$BATS_TEST_TMPDIR/race.log"
  assert_equal "$both" "$rounds"
  assert_equal "$one" "$rounds"
}

@test "flux: a HelmRelease's install, upgrade and uninstall pass the policy" {
  local shared
  shared="$(name hr).example.com"
  chart_repo "$work"
  git_source "$ns" "$ns"
  helmrelease "$ns" podinfo "{\"shared\": \"$shared\"}" | kubectl apply -f - >/dev/null
  run outcome "$ns" helmrelease podinfo
  [[ "$output" == True\|* ]] || fail "$output"
  # helm-controller's labels and Helm's annotations on what it installed.
  assert_equal "$(label_in "$ns" configmap podinfo-settings "$HR_NAME")" podinfo
  assert_equal "$(annotation_in "$ns" configmap podinfo-settings meta.helm.sh/release-name)" podinfo
  assert_equal "$(kubectl get crd "widgets.$shared" -o json | jq -r --arg k "$HR_NAME" '.metadata.labels[$k]')" podinfo
  # Upgrade: a changed value.
  kubectl patch -n "$ns" helmrelease podinfo --type merge -p '{"spec":{"values":{"setting":"2"}}}' >/dev/null
  for _ in $(seq 1 150); do
    [ "$(kubectl get configmap podinfo-settings -n "$ns" -o jsonpath='{.data.setting}')" = 2 ] && break
    sleep 0.2
  done
  run outcome "$ns" helmrelease podinfo
  [[ "$output" == True\|*"Helm upgrade succeeded"* ]] || fail "$output"
  # Uninstall: deleting the HelmRelease uninstalls the release.
  kubectl delete -n "$ns" helmrelease podinfo --wait=true --timeout 60s >/dev/null
  run kubectl get configmap podinfo-settings -n "$ns"
  assert_failure
  run kubectl get crd "widgets.$shared"
  assert_failure
}

@test "flux: a HelmRelease taking a plain Helm release's objects is refused, the refusal in its Ready condition" {
  local shared
  shared="$(name plain).example.com"
  "$ROOT/scripts/setup.sh" helm >&2
  run --separate-stderr env PATH="$ROOT/target/tools/bin:$PATH" helm -n "$ns" install widgets "$ROOT/e2e-tests/charts/widgets-a" \
    --set "shared=$shared" --set hooks=false
  assert_success
  chart_repo "$work"
  git_source "$ns" "$ns"
  # helm-controller takes existing objects over by default (Helm's take-ownership).
  helmrelease "$ns" podinfo "{\"shared\": \"$shared\"}" | kubectl apply -f - >/dev/null
  run outcome "$ns" helmrelease podinfo
  echo "# podinfo's Ready condition: $output" >&3
  [[ "$output" == "False|Helm install failed for release $ns/podinfo"*"server-side apply failed for object /widgets.$shared"*"admission webhook \"$HELM_WEBHOOK\" denied the request: CustomResourceDefinition \"widgets.$shared\" is owned by [meta.helm.sh/release-name=widgets"* ]] ||
    fail "not the policy's refusal: $output"
  assert_equal "$(kubectl get crd "widgets.$shared" -o json | jq -r '.metadata.annotations["meta.helm.sh/release-name"]')" widgets
  assert_equal "$(kubectl get crd "widgets.$shared" -o json | jq -r --arg k "$HR_NAME" '.metadata.labels[$k] // ""')" ""
}

@test "flux: every kind of write Flux's controllers made in this file is in their corpus" {
  local code=0
  run python3 "$ROOT/e2e-tests/corpus/witnessed.py" flux "$CLUSTER_DIR/witness-flux.jsonl"
  echo "$output" | sed 's/^/# /' >&3
  [ "$status" = 0 ] || code=1
  run python3 "$ROOT/e2e-tests/corpus/witnessed.py" flux-helm "$CLUSTER_DIR/witness-flux-helm.jsonl"
  echo "$output" | sed 's/^/# /' >&3
  [ "$status" = 0 ] || code=1
  assert_equal "$code" 0
}
