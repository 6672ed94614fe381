#!/usr/bin/env bash
# A local control plane on loopback, for tests through a real API server: etcd, one or more
# kube-apiservers on that etcd, the webhook backend (policy-server when POLICY_SERVER is
# given, else `policy-host serve`), and the ValidatingWebhookConfigurations of the given
# ClusterAdmissionPolicy manifests (by default the shipped one-tool presets, deploy/*.yaml but
# all-tools.yaml), served with the built module. WEBHOOKS says who writes the webhooks:
#   controller (the default): the real Kubewarden controller, with kube-controller-manager,
#     kube-scheduler and kwok running its policy server's pods (control-plane/kubewarden.bash);
#     needs root (a network namespace for the pods' addresses)
#   emulation: `policy-host webhook --kubewarden VERSION`, which writes what the controller
#     writes, its webhooks calling the backend on loopback (the fallback where the controller
#     cannot run: no root, or a controller version the Go module proxy does not serve)
#
# usage: control-plane/cluster.sh up [--apiservers N] [--backends N] [--apply FILE]... [--probe FILE]
#                              [--storage-json] [MANIFEST...]
#          --apply: applied before the webhooks, in order (CRDs the tests write, objects of
#          them the policies look up); --probe: an object the
#          webhooks select, created with a dry run until each API server calls the backend;
#          --storage-json: the API servers store every object as JSON in etcd (built-in kinds
#          too, which they store as protobuf by default), so that a checker can read etcd
#        control-plane/cluster.sh down
#        control-plane/cluster.sh backend-stop | backend-start   (the webhook backend alone)
#        control-plane/cluster.sh controller-stop | controller-start   (the Kubewarden controller)
# State, logs and an `env` file to source: $CLUSTER_DIR (default target/cluster). `down`
# stops only the processes `up` started, by the PIDs it wrote; every wait is bounded.
# Environment: KUBE_APISERVER (else control-plane/build.sh builds Kubernetes 1.37 once per machine),
# POLICY_SERVER, POLICY (default annotated-policy.wasm), POLICY_HOST, MODULE_FOR (space-
# separated NAME=MODULE: the module of the policy NAME, instead of POLICY), KUBEWARDEN_VERSION
# (emulation; default 1.38: the controller whose webhook names are imitated; from 1.37.2
# kw.cap.<name>, before clusterwide-<name>; the env file's POLICY_ID_PREFIX says which),
# KUBEWARDEN_NAMESPACE (default kubewarden: the controller's namespace, which its webhooks leave
# out), WEBHOOKS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(realpath -m "${CLUSTER_DIR:-$root/target/cluster}")"
policy_host="${POLICY_HOST:-$root/target/host/policy-host}"
module="$(realpath "${POLICY:-$root/annotated-policy.wasm}")"

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=control-plane/processes.bash
source "$root/control-plane/processes.bash"
# shellcheck source=control-plane/kubewarden.bash
source "$root/control-plane/kubewarden.bash"

# start NAME COMMAND...: runs COMMAND in the background, its output in NAME.log, its PID in
# pids/NAME.pid.
start() {
  local name="$1"
  shift
  start_in "$dir/pids" "$name" "$dir/$name.log" "$@"
}

down() {
  [ -d "$dir/pids" ] || return 0
  # Backends, the controllers and API servers first, etcd last.
  for file in "$dir"/pids/policy-server-pods.pid "$dir"/pids/backend-*.pid "$dir"/pids/kubewarden-controller.pid "$dir"/pids/kwok.pid \
    "$dir"/pids/scheduler.pid "$dir"/pids/controller-manager.pid "$dir"/pids/apiserver-*.pid "$dir"/pids/etcd.pid; do
    [ -f "$file" ] && stop_pid_file "$file"
  done
  kw_netns_down
  log "stopped"
}

backend_start() {
  # shellcheck disable=SC1091
  source "$dir/env"
  if [ "$WEBHOOKS" = controller ]; then
    kw_backend_start
    return
  fi
  local i ready readiness
  read -ra readiness <<<"$READINESS_PORTS"
  for i in $(seq 1 "$BACKENDS"); do
    ready="${readiness[i - 1]}"
    if [ -n "${POLICY_SERVER:-}" ]; then
      # policy-server binds its port alone: with it, one backend.
      [ "$i" = 1 ] || break
      start "backend-$i" "$POLICY_SERVER" --policies "$dir/policies.yml" --addr 127.0.0.1 \
        --port "$BACKEND_PORT" --readiness-probe-port "$ready" \
        --cert-file "$dir/certs/backend.crt" --key-file "$dir/certs/backend.key" \
        --policies-download-dir "$dir/downloads" --sigstore-cache-dir "$dir/sigstore" \
        --workers 2 --log-fmt json --ignore-kubernetes-connection-failure
    else
      start "backend-$i" "$policy_host" serve --policies "$dir/policies.yml" --addr 127.0.0.1 \
        --port "$BACKEND_PORT" --readiness-probe-port "$ready" \
        --cert-file "$dir/certs/backend.crt" --key-file "$dir/certs/backend.key" \
        --workers 2 --log "$dir/requests.jsonl"
    fi
    wait_for 60 "webhook backend $i" curl -sf "http://127.0.0.1:$ready/readiness" ||
      die "backend $i did not become ready in 60 s: $(tail -5 "$dir/backend-$i.log")"
  done
}

backend_stop() {
  # shellcheck disable=SC1091
  source "$dir/env"
  if [ "$WEBHOOKS" = controller ]; then
    kw_backend_stop
    return
  fi
  local file
  for file in "$dir"/pids/backend-*.pid; do
    [ -f "$file" ] && stop_pid_file "$file"
  done
  return 0
}

# policy_id_prefix VERSION: what kubewarden-controller VERSION puts before a
# ClusterAdmissionPolicy's name in its policy-server id and webhook name (policy-host webhook).
policy_id_prefix() {
  local minor patch
  IFS=. read -r _ minor patch <<<"${1#v}"
  patch="${patch%%-*}"
  if [ "${minor:-0}" -gt 37 ] || { [ "${minor:-0}" -eq 37 ] && [ "${patch:-0}" -ge 2 ]; }; then
    echo kw.cap.
  else
    echo clusterwide-
  fi
}

certs() {
  local c="$dir/certs"
  mkdir -p "$c"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=single-owner-test-ca" \
    -keyout "$c/ca.key" -out "$c/ca.crt" 2>/dev/null
  for name in apiserver backend; do
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$c/$name.key" -out "$c/$name.csr" 2>/dev/null
    # 10.244.0.1: the host's end of the policy server pods' veth (kubewarden.bash), where they
    # reach the API server.
    printf 'subjectAltName=IP:127.0.0.1,IP:%s.1,DNS:localhost\n' "$KW_CIDR_PREFIX" >"$c/$name.ext"
    openssl x509 -req -in "$c/$name.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial \
      -days 2 -extfile "$c/$name.ext" -out "$c/$name.crt" 2>/dev/null
  done
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
}

up() {
  local apiservers=1 backends=1 manifests=() apply=() storage=()
  probe_file=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --apiservers) apiservers="$2"; shift 2 ;;
      --backends) backends="$2"; shift 2 ;;
      --apply) apply+=("$2"); shift 2 ;;
      --probe) probe_file="$2"; shift 2 ;;
      --storage-json) storage=(--storage-media-type application/json); shift ;;
      *) manifests+=("$1"); shift ;;
    esac
  done
  if [ ${#manifests[@]} -eq 0 ]; then
    # The one-tool presets; deploy/all-tools.yaml judges the same objects, on a cluster of its own.
    local m
    for m in "$root"/deploy/*.yaml; do
      [ "$(basename "$m")" = all-tools.yaml ] || manifests+=("$m")
    done
  fi
  WEBHOOKS="${WEBHOOKS:-controller}"
  case "$WEBHOOKS" in
    controller) [ "$(id -u)" -eq 0 ] || die "WEBHOOKS=controller needs root (a network namespace); WEBHOOKS=emulation does not" ;;
    emulation) ;;
    *) die "WEBHOOKS must be controller or emulation, not '$WEBHOOKS'" ;;
  esac
  [ -f "$module" ] || die "no module at $module (make annotated-policy.wasm)"
  [ -x "$policy_host" ] || die "no policy-host at $policy_host (make host)"
  if [ -d "$dir/pids" ] && ls "$dir"/pids/*.pid >/dev/null 2>&1; then
    log "a cluster is up in $dir already: stopping it first"
    down
  fi
  "$root/scripts/setup.sh" cluster >&2
  local apiserver
  apiserver="$("$root/control-plane/build.sh" kube-apiserver)"
  rm -rf "$dir"
  mkdir -p "$dir/pids"
  certs

  local token admin_token etcd_port
  admin_token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  token="$admin_token"
  printf '%s,admin,admin-uid,system:masters\n' "$admin_token" >"$dir/tokens.csv"

  etcd_port="$(free_port)"
  start etcd etcd --name single-owner --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$(free_port)" --log-level error
  wait_for 30 etcd curl -sf "http://127.0.0.1:$etcd_port/health" || die "etcd did not start: $(tail -5 "$dir/etcd.log")"

  local urls=() i port bind=127.0.0.1
  # The policy server's pods reach the API server (their lookups) from their own namespace.
  [ "$WEBHOOKS" = emulation ] || bind=0.0.0.0
  for i in $(seq 1 "$apiservers"); do
    port="$(free_port)"
    start "apiserver-$i" "$apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
      --bind-address "$bind" --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
      --secure-port "$port" --tls-cert-file "$dir/certs/apiserver.crt" \
      --tls-private-key-file "$dir/certs/apiserver.key" --client-ca-file "$dir/certs/ca.crt" \
      --token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
      --service-account-issuer https://kubernetes.default.svc \
      --service-account-key-file "$dir/certs/sa.pub" \
      --service-account-signing-key-file "$dir/certs/sa.key" \
      --service-cluster-ip-range 10.96.0.0/16 --etcd-compaction-interval 0 "${storage[@]}" \
      --enable-aggregator-routing
    urls+=("https://127.0.0.1:$port")
    wait_for 90 "kube-apiserver $i" curl -sf --cacert "$dir/certs/ca.crt" \
      -H "Authorization: Bearer $token" "https://127.0.0.1:$port/readyz" ||
      die "kube-apiserver $i did not become ready in 90 s: $(tail -5 "$dir/apiserver-$i.log")"
    cat >"$dir/kubeconfig-$i" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$port", certificate-authority: "$dir/certs/ca.crt"}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF
  done
  cp "$dir/kubeconfig-1" "$dir/kubeconfig"
  sed "s#https://127.0.0.1:#https://$KW_CIDR_PREFIX.1:#" "$dir/kubeconfig-1" >"$dir/kubeconfig-pod"
  export KUBECONFIG="$dir/kubeconfig"
  local minor
  minor="$(kubectl version -o json 2>/dev/null | python3 -c 'import json,sys; print(int("".join(c for c in json.load(sys.stdin)["serverVersion"]["minor"] if c.isdigit())))')"

  local file
  for file in "${apply[@]}"; do
    # Objects of the custom kinds an earlier file defined: once those CRDs are established.
    kubectl apply -f "$file" >&2 ||
      { kubectl wait --for condition=Established --timeout 30s crd --all >&2 && kubectl apply -f "$file" >&2; }
  done
  if [ ${#apply[@]} -gt 0 ]; then
    kubectl wait --for condition=Established --timeout 30s crd --all >&2
  fi

  local backend_port kubewarden_version="${KUBEWARDEN_VERSION:-1.38}"
  backend_port="$(free_port)"
  if [ "$WEBHOOKS" = controller ]; then
    kubewarden_version="$(cd "$root/control-plane/kubewarden" &&
      GOFLAGS=-mod=readonly GOTOOLCHAIN=local go list -m -f '{{.Version}}' github.com/kubewarden/adm-controller)"
  fi
  cat >"$dir/env" <<EOF
export KUBECONFIG="$dir/kubeconfig"
export CLUSTER_DIR="$dir"
export APISERVER_URLS="$(IFS=,; echo "${urls[*]}")"
export APISERVER_TOKEN="$token"
export APISERVER_CA="$dir/certs/ca.crt"
export KUBERNETES_MINOR="$minor"
export ETCD_URL="http://127.0.0.1:$etcd_port"
export BACKEND_PORT="$backend_port"
export READINESS_PORTS="$(free_ports "$backends")"
export BACKENDS="$backends"
export BACKEND_LOG="$dir/requests.jsonl"
export POLICY_MODULE="$module"
export MANIFESTS="$(realpath "${manifests[@]}" | tr '\n' ' ')"
export KUBEWARDEN_VERSION="$kubewarden_version"
export KUBEWARDEN_NAMESPACE="$KW_NAMESPACE"
export POLICY_ID_PREFIX="$(policy_id_prefix "$kubewarden_version")"
export WEBHOOKS="$WEBHOOKS"
EOF
  touch "$dir/requests.jsonl"
  if [ "$WEBHOOKS" = controller ]; then
    # The controller writes the webhooks once its policy server's pods are Ready; the
    # backend is started at the pods' addresses from what it wrote.
    kw_netns_up
    kw_control_plane "${urls[0]}"
    kw_controller "${manifests[@]}"
    backend_start
    kw_wait_active "${manifests[@]}"
    kw_backend_start
  else
    local module_for=() m
    for m in ${MODULE_FOR:-}; do module_for+=(--module-for "$m"); done
    "$policy_host" webhook "${manifests[@]}" --kubewarden "$kubewarden_version" --url "https://127.0.0.1:$backend_port" \
      --ca-file "$dir/certs/ca.crt" --kubernetes-minor "$minor" --module "file://$module" \
      --namespace "$KW_NAMESPACE" "${module_for[@]}" --policies-out "$dir/policies.yml" >"$dir/webhooks.json"
    backend_start
    # kubectl validates against the API server's OpenAPI, which a kube-apiserver 1.36 may serve
    # a few seconds after /readyz ("the server is currently unable to handle the request").
    wait_for 60 "the webhook configurations applied" kubectl apply -f "$dir/webhooks.json" ||
      kubectl apply -f "$dir/webhooks.json" >&2
  fi
  # The API servers see a new webhook configuration through their informers: wait until each
  # one has called the backend once (a dry-run create of an object every preset selects).
  [ -n "$probe_file" ] || probe_manifest "${manifests[@]}" >"$dir/probe.yaml"
  for i in $(seq 1 "$apiservers"); do
    wait_for 30 "the webhooks of kube-apiserver $i" probe "$i" ||
      die "kube-apiserver $i never called the webhook backend"
  done
  log "up: $apiservers kube-apiserver(s) (Kubernetes 1.$minor) on etcd :$etcd_port, ${#manifests[@]} policies, webhooks by the $WEBHOOKS (Kubewarden $kubewarden_version); source $dir/env"
}

# probe_manifest MANIFEST...: a ConfigMap that the webhooks of every given preset select: the
# keys of each preset's objectSelector (Exists, In, matchLabels) and the owner keys of its
# settings (ownerLabels, ownerAnnotations, of the one-tool form and of every scheme, which its
# matchConditions look for), besides the keys of every tool the default probe always carried.
probe_manifest() {
  python3 - "$@" <<'PY'
import json, sys, yaml
labels = {"olm.operatorframework.io/owner-name": "probe", "kustomize.toolkit.fluxcd.io/name": "probe",
          "app.kubernetes.io/instance": "probe"}
annotations = {"meta.helm.sh/release-name": "probe",
               "argocd.argoproj.io/tracking-id": "probe:/ConfigMap:default/single-owner-probe"}
for path in sys.argv[1:]:
    for doc in yaml.safe_load_all(open(path)):
        if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
            continue
        spec = doc["spec"]
        selector = spec.get("objectSelector") or {}
        labels.update({k: str(v) for k, v in (selector.get("matchLabels") or {}).items()})
        for e in selector.get("matchExpressions") or []:
            if e.get("operator") == "Exists":
                labels.setdefault(e["key"], "probe")
            elif e.get("operator") == "In" and e.get("values"):
                labels[e["key"]] = str(e["values"][0])
        settings = spec.get("settings") or {}
        for scheme in [settings] + list(settings.get("schemes") or []):
            for k in scheme.get("ownerLabels") or []:
                labels.setdefault(k, "probe")
            for k in scheme.get("ownerAnnotations") or []:
                annotations.setdefault(k, "probe")
print(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "single-owner-probe", "namespace": "default",
                               "labels": labels, "annotations": annotations}}))
PY
}

# probe I: a server-side dry-run CREATE through kube-apiserver I, of an object that every
# preset selects (probe_manifest's, or the --probe manifest), reaches the backend (policy-host
# serve logs each request it answers).
probe() {
  if [ -n "${POLICY_SERVER:-}" ]; then
    # policy-server's log format is its own: give the informers the time they take here.
    sleep 3
    return 0
  fi
  local before
  before="$(wc -l <"$dir/requests.jsonl")"
  kubectl --kubeconfig "$dir/kubeconfig-$1" apply --dry-run=server -f "${probe_file:-$dir/probe.yaml}" >/dev/null 2>&1 || true
  [ "$(wc -l <"$dir/requests.jsonl")" -gt "$before" ]
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  backend-stop) backend_stop ;;
  backend-start) backend_start ;;
  controller-stop) kw_controller_stop ;;
  controller-start) kw_controller_start ;;
  *) echo "usage: $0 up [--apiservers N] [--backends N] [MANIFEST...] | down | backend-stop | backend-start | controller-stop | controller-start" >&2; exit 2 ;;
esac
