# Flux for real (source-controller, kustomize-controller and helm-controller, built from the
# Go module proxy and started by control-plane/flux.sh; none given: skipped) through the API
# server of control-plane/cluster.sh, reconciling from the git server flux.sh starts. Loaded by
# flux.bats, on the one-tool cluster (deploy/flux.yaml for Kustomizations, deploy/helm.yaml for
# HelmReleases) and on the all-tools one (deploy/all-tools.yaml; the same file linked from
# cluster-tools/), and on the identity one (deploy/identity/flux-tenants.yaml and
# helm-per-install.yaml, linked from cluster-identity/).

KS_NAME=kustomize.toolkit.fluxcd.io/name
KS_NAMESPACE=kustomize.toolkit.fluxcd.io/namespace
HR_NAME=helm.toolkit.fluxcd.io/name
# The controllers' service accounts (control-plane/flux.sh), whose writes the witness records.
KS_USER=system:serviceaccount:flux-system:kustomize-controller
# What a tenant's Kustomization applies as (tenant, below), in any namespace.
KS_TENANT_USERS='~^system:serviceaccount:[^:]+:flux$'
HR_USER=system:serviceaccount:flux-system:helm-controller
SOURCE_USER=system:serviceaccount:flux-system:source-controller

# The policies that judge a Kustomization's and a HelmRelease's objects on this cluster.
if [[ " $MANIFESTS " == *"/all-tools.yaml "* ]]; then
  FLUX_POLICY=single-owner-all-tools HELM_POLICY=single-owner-all-tools
elif [[ " $MANIFESTS " == *"/identity/"* ]]; then
  FLUX_POLICY=single-owner-flux-tenants HELM_POLICY=single-owner-helm-per-install
else
  FLUX_POLICY=single-owner-flux HELM_POLICY=single-owner-helm
fi
FLUX_WEBHOOK="$(webhook_of "$FLUX_POLICY")"
HELM_WEBHOOK="$(webhook_of "$HELM_POLICY")"

# flux_up / flux_down (setup_file, teardown_file): Flux's controllers on this cluster. Without
# their binaries flux_up exports FLUX_SKIP, the reason every test then skips (setup: bats 1.8
# cannot skip from setup_file).
flux_up() {
  local code=0
  "$ROOT/control-plane/flux.sh" up || code=$?
  if [ "$code" = 3 ]; then
    export FLUX_SKIP="no Flux: set FLUX_SOURCE_CONTROLLER, FLUX_KUSTOMIZE_CONTROLLER, FLUX_HELM_CONTROLLER (control-plane/build.sh builds them)"
    return 0
  fi
  return "$code"
}
flux_down() { "$ROOT/control-plane/flux.sh" down; }
flux_env() {
  # shellcheck disable=SC1091
  source "$CLUSTER_DIR/flux/env"
}

# git_repo NAME: a bare repository NAME.git on the git server, with a work tree of the test's
# own; prints the work tree. git_push WORKTREE MESSAGE: commits all of it and pushes to main.
git_repo() {
  local work="$BATS_TEST_TMPDIR/git-$1"
  git init -q --bare -b main "$FLUX_GIT_ROOT/$1.git"
  git init -q -b main "$work"
  git -C "$work" remote add origin "$FLUX_GIT_ROOT/$1.git"
  echo "$work"
}
git_push() {
  git -C "$1" add -A
  git -C "$1" -c user.name=e2e -c user.email=e2e@example.com commit -q -m "$2"
  git -C "$1" push -q origin HEAD:main
}

# git_source NAMESPACE REPOSITORY: GitRepository apps in NAMESPACE, for the repository.
git_source() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: apps, namespace: $1}
spec: {interval: 10m, url: "$FLUX_GIT_URL/$2.git", ref: {branch: main}}
YAML
  kubectl wait --for condition=Ready --timeout 60s -n "$1" gitrepository apps >/dev/null
}

# tenant NAMESPACE: the namespace's service account flux, with every right in it, as Flux's
# multi-tenancy lockdown has each tenant's Kustomizations apply (deploy/identity/flux-tenants.yaml
# binds the objects' namespace label to it). A Role of its own: the cluster's `admin` role is
# empty here (no clusterrole-aggregation controller runs).
tenant() {
  ensure serviceaccount flux -n "$1"
  ensure role flux-tenant -n "$1" --verb '*' --resource '*.*'
  ensure rolebinding flux-tenant -n "$1" --role flux-tenant --serviceaccount "$1:flux"
}

# kustomization NAMESPACE NAME PATH [SOURCE]: a Kustomization applying PATH of the repository
# SOURCE (default apps) into NAMESPACE as the namespace's account flux (tenant), pruning;
# retried every 2 s after a failure.
kustomization() {
  cat <<YAML
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: $2, namespace: $1}
spec:
  interval: 10m
  retryInterval: 2s
  timeout: 30s
  path: "$3"
  prune: true
  serviceAccountName: flux
  targetNamespace: $1
  sourceRef: {kind: GitRepository, name: ${4:-apps}}
YAML
}

# reconcile NAMESPACE KIND NAME: asks Flux to reconcile now (as `flux reconcile` does: the
# requestedAt annotation) and waits until it has handled the request.
reconcile() {
  local at
  at="$(date +%s%N)"
  kubectl annotate -n "$1" "$2" "$3" "reconcile.fluxcd.io/requestedAt=$at" --overwrite >/dev/null
  for _ in $(seq 1 300); do
    [ "$(kubectl get -n "$1" "$2" "$3" -o jsonpath='{.status.lastHandledReconcileAt}')" = "$at" ] && return 0
    sleep 0.2
  done
  fail "$2 $3 did not handle a reconcile request in 60 s"
}

# ready_of NAMESPACE KIND NAME: the Ready condition, as status|message ("" before any).
ready_of() {
  kubectl get -n "$1" "$2" "$3" -o json |
    jq -r '[.status.conditions[]? | select(.type == "Ready")][0] | if . then "\(.status)|\(.message)" else "" end'
}

# outcome NAMESPACE KIND NAME: waits until Flux's verdict on the object: Ready True, or Ready
# False with an admission webhook's refusal (Flux says False too while it waits for a source or a
# chart, and Unknown while it works); prints status|message, the last seen after 90 s.
outcome() {
  local ready
  for _ in $(seq 1 450); do
    ready="$(ready_of "$@")"
    case "$ready" in True\|* | False\|*"denied the request"*) break ;; esac
    sleep 0.2
  done
  echo "$ready"
}

label_in() { kubectl get "$2" "$3" -n "$1" -o json | jq -r --arg k "$4" '.metadata.labels[$k] // ""'; }
annotation_in() { kubectl get "$2" "$3" -n "$1" -o json | jq -r --arg k "$4" '.metadata.annotations[$k] // ""'; }

# A ConfigMap manifest NAME with data.by (written to FILE).
configmap_file() {
  mkdir -p "$(dirname "$1")"
  jq -n --arg n "$2" --arg by "$3" '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: $n}, data: {by: $by}}' >"$1"
}

# The probe that shows the API server runs the policy that judges Kustomizations' objects
# (common.bash: policy_off, policy_on): a dry-run write that moves an object to another one.
probe_refused() {
  local ns="$1"
  jq -n --arg ns "$ns" '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "flux-probe",
    labels: {"kustomize.toolkit.fluxcd.io/name": "one", "kustomize.toolkit.fluxcd.io/namespace": $ns}}}' |
    kubectl apply -n "$ns" -f - >/dev/null
  ! kubectl label configmap flux-probe -n "$ns" "$KS_NAME=two" --overwrite --dry-run=server >/dev/null 2>&1
}

# race_round NAMESPACE ROUND: Kustomizations a-ROUND and b-ROUND, created in one apply, both
# applying race/ROUND (ConfigMap race-ROUND). Prints how many of the two report Ready, and the
# Kustomization whose labels the object carries.
race_round() {
  local ns="$1" round="$2" a b
  { kustomization "$ns" "a-$round" "./race/$round"; echo ---; kustomization "$ns" "b-$round" "./race/$round"; } |
    kubectl apply -f - >/dev/null
  a="$(outcome "$ns" kustomization "a-$round")"
  b="$(outcome "$ns" kustomization "b-$round")"
  # A second look a few retries later: the loser of a create race (409) retries as an update.
  sleep 5
  a="$(outcome "$ns" kustomization "a-$round")"
  b="$(outcome "$ns" kustomization "b-$round")"
  echo "$(printf '%s\n%s\n' "${a%%|*}" "${b%%|*}" | grep -c True) $(label_in "$ns" configmap "race-$round" "$KS_NAME")"
  printf '%s\n%s\n' "a-$round: $a" "b-$round: $b" >>"$BATS_TEST_TMPDIR/race.log"
  # Neither prunes it on deletion (the next round's object is another).
  kubectl patch -n "$ns" kustomization "a-$round" "b-$round" --type merge -p '{"spec":{"prune":false}}' >/dev/null
  kubectl delete -n "$ns" kustomization "a-$round" "b-$round" --wait=true --timeout 60s >/dev/null
}

# helmrelease NAMESPACE NAME VALUES-JSON: a HelmRelease NAME installing charts/widgets-a of the
# repository apps (its hooks off: no Job controller runs here), no retries.
helmrelease() {
  jq -n --arg ns "$1" --arg n "$2" --argjson values "$3" '{apiVersion: "helm.toolkit.fluxcd.io/v2", kind: "HelmRelease",
    metadata: {name: $n, namespace: $ns},
    spec: {interval: "10m", timeout: "60s",
      chart: {spec: {chart: "./charts/widgets-a", reconcileStrategy: "Revision",
        sourceRef: {kind: "GitRepository", name: "apps"}}},
      install: {remediation: {retries: 0}}, upgrade: {remediation: {retries: 0}},
      values: ({hooks: false} + $values)}}'
}

# chart_repo WORKTREE: the repository holds the suites' chart widgets-a.
chart_repo() {
  mkdir -p "$1/charts"
  cp -r "$ROOT/e2e-tests/charts/widgets-a" "$1/charts/"
  git_push "$1" "chart"
}
