# Argo CD for real (its application controller and repo server, v3.6.2 built from the Go module
# proxy and started by control-plane/argocd.sh; no binary given: skipped) through the API server
# of control-plane/cluster.sh, syncing from the git server argocd.sh starts. Loaded by
# argocd.bats, on the one-tool cluster (deploy/argocd.yaml for annotation tracking,
# deploy/argocd-label-tracking.yaml for label tracking), on the all-tools one
# (deploy/all-tools.yaml) and on the identity one (deploy/identity/argocd-impersonation.yaml:
# sync impersonation, Applications in the test's namespace).

TRACKING_ID=argocd.argoproj.io/tracking-id
INSTALLATION_ID=argocd.argoproj.io/installation-id
INSTANCE=app.kubernetes.io/instance
# The controller's service account (control-plane/argocd.sh), whose writes the witness records.
ARGOCD_USER=system:serviceaccount:argocd:argocd-application-controller
# What an impersonating sync writes as: its destination namespace's argocd-sync (the AppProject
# default's destinationServiceAccounts), in any namespace.
ARGOCD_SYNC_USERS='~^system:serviceaccount:[^:]+:argocd-sync$'

# The policies that judge an Application's objects on this cluster: ARGOCD_POLICY for annotation
# tracking, LABEL_POLICY for label tracking (none: the cluster has no preset for it), and whether
# another installation's takeover (the installation id changed) is the policy's business.
ARGOCD_UP_ENV=()
if [[ " $MANIFESTS " == *"/all-tools.yaml "* ]]; then
  # all-tools.yaml's argocd scheme: the two annotations, not the instance label.
  ARGOCD_POLICY=single-owner-all-tools LABEL_POLICY="" INSTALLATIONS=yes
elif [[ " $MANIFESTS " == *"/identity/"* ]]; then
  # argocd-impersonation.yaml: the tracking id only, each namespace's Applications syncing as
  # its argocd-sync.
  ARGOCD_POLICY=single-owner-argocd-impersonation LABEL_POLICY="" INSTALLATIONS=""
  ARGOCD_UP_ENV=(ARGOCD_IMPERSONATION=true)
else
  ARGOCD_POLICY=single-owner-argocd LABEL_POLICY=single-owner-argocd-label-tracking INSTALLATIONS=yes
fi
ARGOCD_WEBHOOK="$(webhook_of "$ARGOCD_POLICY")"
LABEL_WEBHOOK="$(webhook_of "${LABEL_POLICY:-none}")"

# argocd_up [VAR=VALUE...] / argocd_down (setup_file, teardown_file; argocd_up again to change
# argocd-cm's settings: ARGOCD_TRACKING, ARGOCD_INSTALLATION_ID): Argo CD on this cluster with
# the cluster's settings and the given ones. Without its binary argocd_up exports ARGOCD_SKIP,
# the reason every test then skips (setup: bats 1.8 cannot skip from setup_file).
argocd_up() {
  local code=0
  # The defaults first: argocd_env exported the last run's settings.
  env ARGOCD_TRACKING=annotation ARGOCD_INSTALLATION_ID= ARGOCD_IMPERSONATION=false "${ARGOCD_UP_ENV[@]}" "$@" \
    "$ROOT/control-plane/argocd.sh" up || code=$?
  if [ "$code" = 3 ]; then
    export ARGOCD_SKIP="no Argo CD: set ARGOCD (control-plane/build.sh argocd builds it)"
    return 0
  fi
  [ "$code" = 0 ] || return "$code"
  argocd_env
}
argocd_down() { "$ROOT/control-plane/argocd.sh" down; }
argocd_env() {
  # shellcheck disable=SC1091
  source "$CLUSTER_DIR/argocd/env"
}
# argocd_settled: Argo CD runs with the cluster's settings (a test that changed them restarts it
# so, also when it failed half-way).
argocd_settled() {
  argocd_env
  [ "$ARGOCD_TRACKING" = annotation ] && [ -z "$ARGOCD_INSTALLATION_ID" ] || argocd_up
}

# Where the test's Applications live: Argo CD's namespace, or with impersonation the test's own
# (apps in any namespace: each namespace's Applications sync as its argocd-sync, which the
# identity preset binds to tracking ids that start with the namespace).
app_namespace() { if [ "$ARGOCD_IMPERSONATION" = true ]; then echo "$ns"; else echo argocd; fi; }
# instance_of APP: the Application's instance name, the owner in its objects' tracking ids.
instance_of() { if [ "$(app_namespace)" = argocd ]; then echo "$1"; else echo "$(app_namespace)_$1"; fi; }
# qualified_of APP: the name Argo CD's messages give the Application (namespace/name outside
# its own namespace).
qualified_of() { if [ "$(app_namespace)" = argocd ]; then echo "$1"; else echo "$(app_namespace)/$1"; fi; }
# tracking_of APP KIND NAME: the tracking id APP writes on the test namespace's core KIND NAME.
tracking_of() { echo "$(instance_of "$1"):/$2:$ns/$3"; }

# sync_account NAMESPACE: the namespace's argocd-sync, with every right in it, which an
# impersonating sync there runs as (a Role of its own: the cluster's `admin` role is empty here,
# no clusterrole-aggregation controller runs).
sync_account() {
  ensure serviceaccount argocd-sync -n "$1"
  ensure role argocd-sync -n "$1" --verb '*' --resource '*.*'
  ensure rolebinding argocd-sync -n "$1" --role argocd-sync --serviceaccount "$1:argocd-sync"
}

# git_repo NAME: a bare repository NAME.git on the git server, with a work tree of the test's
# own; prints the work tree. git_push WORKTREE MESSAGE: commits all of it and pushes to main.
git_repo() {
  local work="$BATS_TEST_TMPDIR/git-$1"
  rm -rf "$ARGOCD_GIT_ROOT/$1.git" "$work"
  git init -q --bare -b main "$ARGOCD_GIT_ROOT/$1.git"
  git init -q -b main "$work"
  git -C "$work" remote add origin "$ARGOCD_GIT_ROOT/$1.git"
  echo "$work"
}
git_push() {
  git -C "$1" add -A
  git -C "$1" -c user.name=e2e -c user.email=e2e@example.com commit -q -m "$2"
  git -C "$1" push -q origin HEAD:main
}

# A ConfigMap manifest NAME with data.by (written to FILE).
configmap_file() {
  mkdir -p "$(dirname "$1")"
  jq -n --arg n "$2" --arg by "$3" '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: $n}, data: {by: $by}}' >"$1"
}

# application NAME PATH [SPEC-JSON]: an Application NAME (labelled with the test's namespace,
# for teardown) of PATH in the test's repository, to the test's namespace in this cluster;
# SPEC-JSON merged into its spec (syncPolicy).
application() {
  jq -n --arg name "$1" --arg appns "$(app_namespace)" --arg repo "$ARGOCD_GIT_URL/$ns.git" --arg path "$2" \
    --arg ns "$ns" --argjson spec "${3:-{\}}" '{apiVersion: "argoproj.io/v1alpha1", kind: "Application",
    metadata: {name: $name, namespace: $appns, labels: {"e2e.single-owner.test/namespace": $ns}},
    spec: ({project: "default", source: {repoURL: $repo, targetRevision: "main", path: $path},
      destination: {server: "https://kubernetes.default.svc", namespace: $ns}} * $spec)}'
}

# with_operation TOKEN [SYNC-OPTION...] (a filter of an Application's JSON): a sync of main
# requested in its operation field, as `argocd app sync` does, initiated by TOKEN (outcome waits
# for that operation's end).
with_operation() {
  local token="$1"
  shift
  jq --arg token "$token" --args '.operation = {initiatedBy: {username: $token},
    sync: ({revision: "main"} + (if $ARGS.positional == [] then {} else {syncOptions: $ARGS.positional} end))}' "$@"
}

# sync_now APP [SYNC-OPTION...]: asks Argo CD to sync APP now (its operation field) and prints the
# outcome (below).
sync_now() {
  local app="$1" token
  shift
  token="e2e-$(date +%s%N)"
  kubectl get application -n "$(app_namespace)" "$app" -o json | with_operation "$token" "$@" |
    jq '{operation}' | kubectl patch application -n "$(app_namespace)" "$app" --type merge --patch-file /dev/stdin >/dev/null
  outcome "$app" "$token"
}

# outcome APP TOKEN: waits until the sync TOKEN initiated is over (the operation field cleared,
# its state Succeeded, Failed or Error); prints phase|message, the last seen after 90 s.
outcome() {
  local state=""
  for _ in $(seq 1 450); do
    state="$(kubectl get application -n "$(app_namespace)" "$1" -o json | jq -r --arg token "$2" '
      .status.operationState as $s | if .operation == null and $s.operation.initiatedBy.username == $token
        and ($s.phase | IN("Succeeded", "Failed", "Error")) then "\($s.phase)|\($s.message)" else "" end')"
    [ -z "$state" ] || break
    sleep 0.2
  done
  [ -n "$state" ] || state="$(kubectl get application -n "$(app_namespace)" "$1" -o json | jq -r '"timeout|\(.status.operationState)"')"
  echo "$state"
}

# synced APP REVISION: waits until the automated sync of APP applied REVISION (a commit); prints
# phase|message of its last operation, the last seen after 90 s.
synced() {
  local state=""
  for _ in $(seq 1 450); do
    state="$(kubectl get application -n "$(app_namespace)" "$1" -o json | jq -r --arg rev "$2" '
      .status.operationState as $s | if .operation == null and $s.syncResult.revision == $rev
        and ($s.phase | IN("Succeeded", "Failed", "Error")) then "\($s.phase)|\($s.message)" else "" end')"
    [ -z "$state" ] || break
    sleep 0.2
  done
  [ -n "$state" ] || state="$(kubectl get application -n "$(app_namespace)" "$1" -o json | jq -r '"timeout|\(.status.operationState)"')"
  echo "$state"
}

# resource_message APP KIND NAME: the last sync's result for the object.
resource_message() {
  kubectl get application -n "$(app_namespace)" "$1" -o json |
    jq -r --arg k "$2" --arg n "$3" '[.status.operationState.syncResult.resources[]? | select(.kind == $k and .name == $n)][0].message // ""'
}

# refresh APP: asks Argo CD to compare APP with git now (the refresh annotation, as `argocd app
# get --refresh` does; Argo CD removes it once done).
refresh() {
  kubectl annotate application -n "$(app_namespace)" "$1" argocd.argoproj.io/refresh=normal --overwrite >/dev/null
}

# condition_of APP TYPE: the message of the Application's condition TYPE, once there (60 s).
condition_of() {
  local message=""
  for _ in $(seq 1 300); do
    message="$(kubectl get application -n "$(app_namespace)" "$1" -o json |
      jq -r --arg t "$2" '[.status.conditions[]? | select(.type == $t)][0].message // ""')"
    [ -z "$message" ] || break
    sleep 0.2
  done
  echo "$message"
}

# delete_apps NAME...: the Applications deleted without their objects (no finalizer).
delete_apps() {
  local app
  for app in "$@"; do
    kubectl patch application -n "$(app_namespace)" "$app" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  done
  kubectl delete application -n "$(app_namespace)" "$@" --ignore-not-found --wait=true --timeout 60s >/dev/null
}

label_in() { kubectl get "$2" "$3" ${1:+-n "$1"} -o json | jq -r --arg k "$4" '.metadata.labels[$k] // ""'; }
annotation_in() { kubectl get "$2" "$3" ${1:+-n "$1"} -o json | jq -r --arg k "$4" '.metadata.annotations[$k] // ""'; }

# The probe that shows the API server runs the policy that judges Applications' objects
# (common.bash: policy_off, policy_on): a dry-run write that moves an object to another
# Application, as the namespace's argocd-sync on the identity cluster (its binding allows it
# the namespace's tracking ids; the owner change is what is refused).
probe_refused() {
  local as=()
  [ "$ARGOCD_IMPERSONATION" != true ] || as=(--as "system:serviceaccount:$ns:argocd-sync")
  jq -n --arg ns "$ns" --arg id "$(instance_of probe-a):/ConfigMap:$ns/argocd-probe" '{apiVersion: "v1",
    kind: "ConfigMap", metadata: {name: "argocd-probe", namespace: $ns, annotations: {"argocd.argoproj.io/tracking-id": $id}}}' |
    kubectl apply "${as[@]}" -f - >/dev/null
  ! kubectl annotate "${as[@]}" configmap argocd-probe -n "$ns" "$TRACKING_ID=$(instance_of probe-b):/ConfigMap:$ns/argocd-probe" \
    --overwrite --dry-run=server >/dev/null 2>&1
}

# race_round ROUND [SYNC-OPTION...]: Applications a-ROUND and b-ROUND, created in one apply, each
# with a sync of race/ROUND (ConfigMap race-ROUND) requested. Prints how many of the two
# succeeded, and the Application whose tracking id the object carries.
race_round() {
  local round="$1" a b owner
  shift
  { application "$ns-a-$round" "race/$round" | with_operation "a-$round" "$@"
    application "$ns-b-$round" "race/$round" | with_operation "b-$round" "$@"; } | kubectl apply -f - >/dev/null
  a="$(outcome "$ns-a-$round" "a-$round")"
  b="$(outcome "$ns-b-$round" "b-$round")"
  owner="$(annotation_in "$ns" configmap "race-$round" "$TRACKING_ID")"
  echo "$(printf '%s\n%s\n' "${a%%|*}" "${b%%|*}" | grep -c '^Succeeded$') ${owner%%:*}"
  printf '%s\n%s\n' "a-$round: $a" "b-$round: $b" >>"$BATS_TEST_TMPDIR/race.log"
  # Neither deletes it (no finalizer): the next round's object is another.
  delete_apps "$ns-a-$round" "$ns-b-$round"
}
