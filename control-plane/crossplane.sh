#!/usr/bin/env bash
# Crossplane for real, on the cluster control-plane/cluster.sh runs: its core (`crossplane core
# start`: the XRD and composite (XR) controllers, built from the Go module proxy: crossplane/) as
# a process, as its own service account crossplane in crossplane-system, with Crossplane's CRDs
# (read from the core's module), and one composition function, function-patch-and-transform
# (crossplane-function/), as a process serving gRPC with mutual TLS on loopback.
#
# usage: control-plane/crossplane.sh up | down
#   up: prints nothing on stdout; writes $CLUSTER_DIR/crossplane/env (CROSSPLANE_DIR,
#       CROSSPLANE_FUNCTION_NAME: the name a Composition's pipeline step gives as functionRef);
#       exits 3 when a binary is not given (CROSSPLANE, CROSSPLANE_FUNCTION: `make cluster-e2e`
#       builds them with control-plane/build.sh crossplane, function-patch-and-transform).
# What is not Crossplane's own:
# - the core's kubeconfig holds a service account token from `kubectl create token` (in a pod the
#   kubelet mounts one), and the account is bound to cluster-admin (Crossplane's chart binds it
#   to its own ClusterRole crossplane, which aggregates every XR's rights: no aggregation
#   controller runs here);
# - the core runs with --enable-webhooks=false (its webhooks validate Compositions and XRDs; they
#   would need a Service to be called at) and --package-runtime=Function=External: it deploys no
#   function, whose package (an OCI image) is never pulled. In its place this script writes the
#   FunctionRevision a package manager would, paused (crossplane.io/paused: the core's package
#   controllers leave it alone) and with the status the core reads to call the function: its
#   endpoint and its capabilities. There is no Function object: the core finds a function by its
#   revisions' label pkg.crossplane.io/package;
# - the mutual TLS certificates (a CA, the function's server certificate, the core's client
#   certificate) come from openssl here, where `crossplane core init` would write them to Secrets;
# - kube-controller-manager runs its garbage collector alone (control-plane/build.sh
#   kube-controller-manager): Crossplane leaves a deleted XR's composed objects to it (their
#   controller ownerReference), and cluster.sh with WEBHOOKS=emulation runs no controller manager.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cluster="$(realpath -m "${CLUSTER_DIR:-$root/target/cluster}")"
dir="$cluster/crossplane"
NS=crossplane-system
SA=crossplane
# The function's name: its FunctionRevision's label pkg.crossplane.io/package, and the functionRef
# of a Composition's pipeline step.
FUNCTION=function-patch-and-transform

log() { echo "crossplane: $*" >&2; }
# shellcheck source=control-plane/processes.bash
source "$root/control-plane/processes.bash"
# shellcheck source=control-plane/tools.bash
source "$root/control-plane/tools.bash"

down() {
  [ -d "$dir/pids" ] || return 0
  stop_all "$dir/pids"
  log "stopped"
}

# certificates: DIR/ca.{crt,key}; DIR/function/{ca.crt,tls.crt,tls.key} (the function's server
# certificate, for 127.0.0.1 and localhost) and DIR/core/{ca.crt,tls.crt,tls.key} (the core's
# client certificate), as each one's --tls-*-certs-dir reads them.
certificates() {
  local c="$dir/certs" who
  mkdir -p "$c/function" "$c/core"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=crossplane-e2e-ca" \
    -keyout "$c/ca.key" -out "$c/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$FUNCTION" -keyout "$c/function/tls.key" -out "$c/function.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$c/function.ext"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=crossplane" -keyout "$c/core/tls.key" -out "$c/core.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$c/core.ext"
  for who in function core; do
    openssl x509 -req -in "$c/$who.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 2 \
      -extfile "$c/$who.ext" -out "$c/$who/tls.crt" 2>/dev/null
    cp "$c/ca.crt" "$c/$who/ca.crt"
  done
}

up() {
  local core="${CROSSPLANE:-}" function="${CROSSPLANE_FUNCTION:-}"
  if [ -z "$core" ] || [ -z "$function" ]; then
    log "CROSSPLANE and CROSSPLANE_FUNCTION name Crossplane's core and function-patch-and-transform (control-plane/build.sh crossplane function-patch-and-transform)"
    exit 3
  fi
  # shellcheck disable=SC1091
  source "$cluster/env"
  down
  rm -rf "$dir"
  mkdir -p "$dir/pids" "$dir/cache/xpkg" "$dir/cache/xfn"

  # Crossplane's CRDs, from the module the core was built from (cluster/crds).
  local crds
  crds="$("$root/control-plane/module-dir.sh" crossplane github.com/crossplane/crossplane/v2)/cluster/crds"
  kubectl apply --server-side --force-conflicts -f "$crds" >/dev/null
  kubectl wait --for condition=established --timeout 60s crd --all >/dev/null
  local kubeconfig
  kubeconfig="$(tool_account "$NS" "$SA" "$dir/kubeconfig-$SA")"
  certificates

  local fn_port metrics health
  read -r fn_port metrics health <<<"$(free_ports 3)"
  start_in "$dir/pids" function "$dir/function.log" "$function" --debug \
    --address "127.0.0.1:$fn_port" --tls-certs-dir "$dir/certs/function"
  wait_for 30 "$FUNCTION" bash -c "exec 3<>/dev/tcp/127.0.0.1/$fn_port"

  # The revision a package manager would have written for the function's package, paused, and
  # the status the core reads (xfn's PackagedFunctionRunner: the active revision's endpoint;
  # RevisionCapabilityChecker: its capabilities).
  kubectl apply -f - >/dev/null <<YAML
apiVersion: pkg.crossplane.io/v1
kind: FunctionRevision
metadata:
  name: $FUNCTION-e2e
  labels: {pkg.crossplane.io/package: $FUNCTION}
  annotations: {crossplane.io/paused: "true"}
spec:
  desiredState: Active
  image: xpkg.crossplane.io/crossplane-contrib/$FUNCTION:v0.5.0
  revision: 1
  ignoreCrossplaneConstraints: true
  skipDependencyResolution: true
YAML
  kubectl patch functionrevision "$FUNCTION-e2e" --subresource status --type merge \
    -p "{\"status\": {\"endpoint\": \"dns:///127.0.0.1:$fn_port\", \"capabilities\": [\"composition\"]}}" >/dev/null

  # Kubernetes' garbage collector, for a deleted XR's composed objects. It looks for new
  # resources (an XRD's XR type) every 30 s, and learns of an object's owners from its watches:
  # an orphaning deletion of an owner before it knows a dependent loses it (deleted as garbage
  # once seen). At -v 2 its log names the new resources, at graph_builder=5 every object it
  # learns of (e2e-tests/cluster/crossplane-core.bash: gc_watches, gc_knows).
  local kcm
  kcm="${KUBE_CONTROLLER_MANAGER:-$("$root/control-plane/build.sh" kube-controller-manager)}"
  start_in "$dir/pids" garbage-collector "$dir/garbage-collector.log" "$kcm" --kubeconfig "$KUBECONFIG" \
    --controllers garbagecollector --leader-elect=false --secure-port 0 --concurrent-gc-syncs 5 -v 2 --vmodule graph_builder=5

  POD_NAMESPACE="$NS" POD_SERVICE_ACCOUNT="$SA" start_in "$dir/pids" core "$dir/core.log" \
    env KUBECONFIG="$kubeconfig" "$core" core start --debug \
    --enable-webhooks=false --package-runtime=Function=External \
    --tls-client-certs-dir "$dir/certs/core" \
    --metrics-port "$metrics" --health-probe-port "$health" \
    --xpkg-cache-dir "$dir/cache/xpkg" --xfn-cache-dir "$dir/cache/xfn" \
    --poll-interval 10s --sync-interval 1m
  wait_for 90 "crossplane core" curl -sf "http://127.0.0.1:$health/readyz"
  # The paused revision kept the status the core reads.
  [ "$(kubectl get functionrevision "$FUNCTION-e2e" -o jsonpath='{.status.endpoint}')" = "dns:///127.0.0.1:$fn_port" ] ||
    { log "the FunctionRevision lost its status.endpoint"; exit 1; }
  cat >"$dir/env" <<EOF
export CROSSPLANE_DIR="$dir"
export CROSSPLANE_FUNCTION_NAME="$FUNCTION"
EOF
  log "up: core (health :$health), $FUNCTION on 127.0.0.1:$fn_port, garbage collector; source $dir/env"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: control-plane/crossplane.sh up | down" >&2; exit 2 ;;
esac
