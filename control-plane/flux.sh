#!/usr/bin/env bash
# Flux for real, on the cluster control-plane/cluster.sh runs: its source-controller,
# kustomize-controller and helm-controller (built from the Go module proxy: flux-source/,
# flux-kustomize/, flux-helm/) as processes, each as its own service account in flux-system
# with Flux's CRDs (read from the controllers' modules), and a git server on loopback
# (git-server.py) whose bare repositories they reconcile from.
#
# usage: control-plane/flux.sh up | down
#   up: prints nothing on stdout; writes $CLUSTER_DIR/flux/env (FLUX_GIT_ROOT: the bare
#       repositories' folder, FLUX_GIT_URL: the server's URL); exits 3 when a controller's
#       binary is not given (FLUX_SOURCE_CONTROLLER, FLUX_KUSTOMIZE_CONTROLLER,
#       FLUX_HELM_CONTROLLER: `make cluster-e2e` builds them with control-plane/build.sh).
# What is not Flux's own: the controllers' kubeconfigs hold service account tokens
# (control-plane/tools.bash, tool_account), and the accounts are bound to cluster-admin, as
# Flux's install binds kustomize-controller and helm-controller (cluster-reconciler-flux-system);
# source-controller gets the same, not its narrower role.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cluster="$(realpath -m "${CLUSTER_DIR:-$root/target/cluster}")"
dir="$cluster/flux"
NS=flux-system

log() { echo "flux: $*" >&2; }
# shellcheck source=control-plane/processes.bash
source "$root/control-plane/processes.bash"
# shellcheck source=control-plane/tools.bash
source "$root/control-plane/tools.bash"

down() {
  [ -d "$dir/pids" ] || return 0
  stop_all "$dir/pids"
  log "stopped"
}

up() {
  local source="${FLUX_SOURCE_CONTROLLER:-}" kustomize="${FLUX_KUSTOMIZE_CONTROLLER:-}" helm="${FLUX_HELM_CONTROLLER:-}"
  if [ -z "$source" ] || [ -z "$kustomize" ] || [ -z "$helm" ]; then
    log "FLUX_SOURCE_CONTROLLER, FLUX_KUSTOMIZE_CONTROLLER and FLUX_HELM_CONTROLLER name Flux's binaries (control-plane/build.sh source-controller ...)"
    exit 3
  fi
  # shellcheck disable=SC1091
  source "$cluster/env"
  down
  mkdir -p "$dir/pids" "$dir/git" "$dir/storage"

  # Flux's CRDs, from the modules the binaries were built from (their config/crd/bases).
  local module crds=()
  for module in flux-source flux-kustomize flux-helm; do
    crds+=("$("$root/control-plane/module-dir.sh" "$module" "$(sed -n 's/^tool //p' "$root/control-plane/$module/go.mod")")/config/crd/bases")
  done
  kubectl apply --server-side --force-conflicts -f "${crds[0]}" -f "${crds[1]}" -f "${crds[2]}" >/dev/null
  kubectl wait --for condition=established --timeout 60s crd --all >/dev/null

  local git_port binary
  git_port="$(free_port)"
  git_server_start "$dir/pids" "$dir/git" "$git_port"
  read -r storage metrics_s health_s metrics_k health_k metrics_h health_h <<<"$(free_ports 7)"
  RUNTIME_NAMESPACE="$NS" start_in "$dir/pids" source-controller "$dir/source-controller.log" \
    env KUBECONFIG="$(tool_account "$NS" source-controller "$dir/kubeconfig-source-controller")" "$source" \
    --storage-path "$dir/storage" --storage-addr "127.0.0.1:$storage" --storage-adv-addr "127.0.0.1:$storage" \
    --metrics-addr "127.0.0.1:$metrics_s" --health-addr "127.0.0.1:$health_s" --log-level debug
  RUNTIME_NAMESPACE="$NS" start_in "$dir/pids" kustomize-controller "$dir/kustomize-controller.log" \
    env KUBECONFIG="$(tool_account "$NS" kustomize-controller "$dir/kubeconfig-kustomize-controller")" "$kustomize" \
    --metrics-addr "127.0.0.1:$metrics_k" --health-addr "127.0.0.1:$health_k" --log-level debug
  RUNTIME_NAMESPACE="$NS" start_in "$dir/pids" helm-controller "$dir/helm-controller.log" \
    env KUBECONFIG="$(tool_account "$NS" helm-controller "$dir/kubeconfig-helm-controller")" "$helm" \
    --metrics-addr "127.0.0.1:$metrics_h" --health-addr "127.0.0.1:$health_h" --log-level debug
  for binary in source:$health_s kustomize:$health_k helm:$health_h; do
    wait_for 60 "${binary%:*}-controller" curl -sf "http://127.0.0.1:${binary#*:}/readyz"
  done
  cat >"$dir/env" <<EOF
export FLUX_GIT_ROOT="$dir/git"
export FLUX_GIT_URL="http://127.0.0.1:$git_port"
export FLUX_DIR="$dir"
EOF
  log "up: source-controller, kustomize-controller, helm-controller; git on :$git_port; source $dir/env"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: control-plane/flux.sh up | down" >&2; exit 2 ;;
esac
