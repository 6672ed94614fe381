#!/usr/bin/env bash
# Argo CD for real, on the cluster control-plane/cluster.sh runs: its application controller and
# repo server (v3.6.2's multi-call binary, built from the Go module proxy: argocd/go.mod) as
# processes, with Argo CD's CRDs (read from that module), its settings (argocd-cm,
# argocd-secret, argocd-rbac-cm), the AppProject default, a Redis of its own, and a git server on
# loopback (git-server.py) whose bare repositories its Applications sync from.
#
# usage: control-plane/argocd.sh up | down
#   up: prints nothing on stdout; writes $CLUSTER_DIR/argocd/env (ARGOCD_GIT_ROOT: the bare
#       repositories' folder, ARGOCD_GIT_URL: the server's URL); exits 3 when ARGOCD (the
#       binary: control-plane/build.sh argocd) is not given. Its CRDs and hack/ scripts are
#       read from the argo-cd module (control-plane/module-dir.sh).
#   ARGOCD_TRACKING: annotation (default, Argo CD 3.x's) or label, argocd-cm's
#       application.resourceTrackingMethod; ARGOCD_INSTALLATION_ID: argocd-cm's installationID
#       (unset: none); ARGOCD_IMPERSONATION=true: sync impersonation on
#       (application.sync.impersonation.enabled), each Application syncing as the service
#       account argocd-sync of its destination namespace (the AppProject's
#       destinationServiceAccounts), as deploy/identity/argocd-impersonation.yaml expects.
# Applications may live in any namespace (--application-namespaces '*', the AppProject's
# sourceNamespaces): their tracking ids then start with <namespace>_.
# What is not Argo CD's own: the controller's kubeconfig holds a service account token
# (control-plane/tools.bash, tool_account) and its account is bound to cluster-admin, as Argo
# CD's install binds argocd-application-controller; the in-cluster destination
# (https://kubernetes.default.svc) is that kubeconfig through ARGOCD_FAKE_IN_CLUSTER
# (pkg/apis/application/v1alpha1/types.go, rawRestConfig: "fake an in-cluster RESTConfig", for
# development), since no pod's service account files exist here; the repo server speaks
# plaintext gRPC on loopback (--disable-tls, the controller's --repo-server-plaintext) and
# verifies no GnuPG signatures (ARGOCD_GPG_ENABLED=false: no keyring to set up).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cluster="$(realpath -m "${CLUSTER_DIR:-$root/target/cluster}")"
dir="$cluster/argocd"
NS=argocd
CONTROLLER=argocd-application-controller

log() { echo "argocd: $*" >&2; }
# shellcheck source=control-plane/processes.bash
source "$root/control-plane/processes.bash"
# shellcheck source=control-plane/tools.bash
source "$root/control-plane/tools.bash"

down() {
  [ -d "$dir/pids" ] || return 0
  stop_all "$dir/pids"
  log "stopped"
}

# settings: argocd-cm, argocd-secret and argocd-rbac-cm. Argo CD's settings manager sees only
# ConfigMaps and Secrets labelled app.kubernetes.io/part-of: argocd.
settings() {
  local tracking="${ARGOCD_TRACKING:-annotation}"
  case "$tracking" in annotation | label) ;; *) log "ARGOCD_TRACKING: annotation or label, not $tracking"; exit 2 ;; esac
  jq -n --arg tracking "$tracking" --arg id "${ARGOCD_INSTALLATION_ID:-}" --arg imp "${ARGOCD_IMPERSONATION:-false}" '
    {apiVersion: "v1", kind: "ConfigMap",
     metadata: {name: "argocd-cm", namespace: "argocd", labels: {"app.kubernetes.io/part-of": "argocd"}},
     data: ({"application.resourceTrackingMethod": $tracking,
             "application.sync.impersonation.enabled": $imp,
             # Argo CD refreshes an Application this often without being asked (3 min upstream);
             # the suites ask (the refresh annotation, an operation), this is a fallback.
             "timeout.reconciliation": "30s"}
            + (if $id == "" then {} else {installationID: $id} end))}' |
    kubectl apply -f - >/dev/null
  # Replaced whole: an installationID of an earlier `up` must not stay behind.
  kubectl -n "$NS" create secret generic argocd-secret --from-literal "server.secretkey=$(head -c 32 /dev/urandom | base64)" \
    --dry-run=client -o json | jq '.metadata.labels = {"app.kubernetes.io/part-of": "argocd"}' | kubectl apply -f - >/dev/null
  kubectl -n "$NS" create configmap argocd-rbac-cm --dry-run=client -o json |
    jq '.metadata.labels = {"app.kubernetes.io/part-of": "argocd"}' | kubectl apply -f - >/dev/null
}

# The AppProject default, as Argo CD's API server creates it (any source, any destination), with
# every cluster-scoped kind allowed, Applications from any namespace, and (used only when
# impersonation is on) each destination namespace's argocd-sync as the account syncs run as.
project() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: $NS}
spec:
  sourceRepos: ["*"]
  sourceNamespaces: ["*"]
  destinations: [{server: "*", namespace: "*"}]
  clusterResourceWhitelist: [{group: "*", kind: "*"}]
  destinationServiceAccounts: [{server: "*", namespace: "*", defaultServiceAccount: argocd-sync}]
YAML
}

up() {
  local binary="${ARGOCD:-}"
  if [ -z "$binary" ]; then
    log "ARGOCD names Argo CD's binary (control-plane/build.sh argocd)"
    exit 3
  fi
  if ! command -v redis-server >/dev/null; then
    log "installing redis-server (Argo CD's cache)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  # shellcheck disable=SC1091
  source "$cluster/env"
  down
  rm -rf "$dir/tmp" "$dir/bin"
  mkdir -p "$dir/pids" "$dir/git" "$dir/tmp" "$dir/bin"
  # One binary, dispatching on its name (cmd/main.go).
  ln -sf "$(realpath "$binary")" "$dir/bin/argocd-application-controller"
  ln -sf "$(realpath "$binary")" "$dir/bin/argocd-repo-server"

  # Argo CD's CRDs, from the module the binary was built from.
  local module
  module="$("$root/control-plane/module-dir.sh" argocd github.com/argoproj/argo-cd/v3)"
  kubectl apply --server-side --force-conflicts -f "$module/manifests/crds/application-crd.yaml" \
    -f "$module/manifests/crds/appproject-crd.yaml" >/dev/null
  # Retried: kubectl wait fails outright while a new CRD has no status.conditions yet.
  wait_for 60 "Argo CD's CRDs" kubectl wait --for condition=established --timeout 10s crd applications.argoproj.io appprojects.argoproj.io
  local kubeconfig
  kubeconfig="$(tool_account "$NS" "$CONTROLLER" "$dir/kubeconfig-$CONTROLLER")"
  settings
  project

  local git_port redis repo repo_metrics metrics
  read -r git_port redis repo repo_metrics metrics <<<"$(free_ports 5)"
  git_server_start "$dir/pids" "$dir/git" "$git_port"
  # The cache Argo CD's components share (manifests, app state): no persistence, loopback only.
  start_in "$dir/pids" redis "$dir/redis.log" redis-server --port "$redis" --bind 127.0.0.1 \
    --save '' --appendonly no --dir "$dir/tmp"
  wait_for 20 "redis" redis-cli -p "$redis" ping

  # The repo server runs git-verify-wrapper.sh on every revision it renders, GnuPG on or off
  # (util/git/client.go, VerifyCommitSignature: deprecated, unconditional in 3.6); Argo CD's
  # image ships it from hack/, so does this folder.
  install -m 755 "$module/hack/git-verify-wrapper.sh" "$dir/bin/"
  # The repo server's working copies and its askpass socket in our folder (upstream: /tmp),
  # so that two clusters' repo servers never meet. --client-ca-path emptied: its default (an mTLS
  # CA under /app/config) is refused together with --disable-tls.
  PATH="$dir/bin:$PATH" TMPDIR="$dir/tmp" ARGOCD_ASK_PASS_SOCK="$dir/tmp/askpass.sock" ARGOCD_GPG_ENABLED=false \
    start_in "$dir/pids" repo-server "$dir/repo-server.log" \
    "$dir/bin/argocd-repo-server" --address 127.0.0.1 --port "$repo" --disable-tls --client-ca-path= \
    --metrics-address 127.0.0.1 --metrics-port "$repo_metrics" --redis "127.0.0.1:$redis" --loglevel debug
  wait_for 60 "repo server" curl -sf "http://127.0.0.1:$repo_metrics/healthz?full=true"
  # The controller's metrics server listens on 0.0.0.0:PORT (controller/appcontroller.go: no
  # address flag).
  KUBECONFIG="$kubeconfig" ARGOCD_FAKE_IN_CLUSTER=true TMPDIR="$dir/tmp" \
    start_in "$dir/pids" application-controller "$dir/application-controller.log" \
    "$dir/bin/argocd-application-controller" --repo-server "127.0.0.1:$repo" --repo-server-plaintext \
    --redis "127.0.0.1:$redis" --metrics-port "$metrics" --application-namespaces '*' \
    --status-processors 4 --operation-processors 4 --self-heal-timeout-seconds 2 --loglevel debug
  wait_for 60 "application controller" curl -sf "http://127.0.0.1:$metrics/healthz"
  cat >"$dir/env" <<EOF
export ARGOCD_GIT_ROOT="$dir/git"
export ARGOCD_GIT_URL="http://127.0.0.1:$git_port"
export ARGOCD_DIR="$dir"
export ARGOCD_TRACKING="${ARGOCD_TRACKING:-annotation}"
export ARGOCD_INSTALLATION_ID="${ARGOCD_INSTALLATION_ID:-}"
export ARGOCD_IMPERSONATION="${ARGOCD_IMPERSONATION:-false}"
EOF
  log "up: application controller, repo server (tracking: ${ARGOCD_TRACKING:-annotation}${ARGOCD_INSTALLATION_ID:+, installation id $ARGOCD_INSTALLATION_ID}${ARGOCD_IMPERSONATION:+, impersonation $ARGOCD_IMPERSONATION}); git on :$git_port; source $dir/env"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: control-plane/argocd.sh up | down" >&2; exit 2 ;;
esac
