# The real Kubewarden controller on the test cluster (sourced by control-plane/cluster.sh, which
# defines `log`, `die`, `start`, `$dir`, `$root`, `$policy_host`): the controller
# (github.com/kubewarden/adm-controller, control-plane/kubewarden/go.mod) reconciles the
# ClusterAdmissionPolicies and a PolicyServer and writes the webhook configurations and the
# policy server's ConfigMap itself; nothing of them is the harness's.
#
# The route, the simplest that keeps every Kubewarden part real:
# - The controller writes a policy's webhook only once every pod of the PolicyServer's newest
#   ReplicaSet is Ready (policy_subreconciler.go, isPolicyUniquelyReachable): upstream
#   kube-controller-manager (deployment, replicaset, endpointslice and serviceaccount
#   controllers; not the garbage collector, which would act on the suites' planted owner
#   references) and kube-scheduler turn its Deployment into a scheduled pod, and kwok, a
#   kubelet-less node simulator, runs a fake node that starts the pod (Running, an address from
#   its pod CIDR). kwok runs no container and no probe: control-plane/policy-server-pods.py
#   starts the pod's backend at that address and, once it answers /readiness, annotates the pod,
#   and kwok marks it Ready (kwok-stages.yaml): the controller's readiness gate holds as with a
#   kubelet.
# - The backend is started as the pod would be: from the controller's ConfigMap (policies.yml)
#   and certificate Secret (tls.crt, tls.key), on port 8443 of the pod's address, in a network
#   namespace of the harness's (a test host reached over a veth pair). The API server reaches
#   the controller's Service through its endpoints (--enable-aggregator-routing) and checks
#   the certificate against the Service's name, as in a cluster.
# - The policies are the shipped manifests with spec.module pointing at the built module
#   (file://, which the CRD allows; a cluster pulls it from a registry).
# - The controller's own admission webhooks (defaulting and validating its CRDs) are not
#   installed: the chart writes them, not the controller; its webhook server runs on a
#   self-signed certificate.

KW_NAMESPACE="${KUBEWARDEN_NAMESPACE:-kubewarden}"
KW_POLICY_SERVER=default
# The pods' network, 10.244.0.0/24: its first address is the host's end of the veth pair (and
# the fake node's address), the pods' are from its upper half (the node's pod CIDR).
KW_CIDR_PREFIX=10.244.0
KW_POD_CIDR=10.244.0.128/25

# kw_netns: the network namespace of this cluster's policy-server pods (one per cluster dir).
kw_netns() { echo "so-kw-$(echo "$dir" | sha256sum | cut -c1-8)"; }

# kw_control_plane APISERVER_URL: kube-controller-manager, kube-scheduler and kwok, and the
# fake node.
kw_control_plane() {
  local url="$1" kcm scheduler kwok kwok_dir
  kcm="$("$root/control-plane/build.sh" kube-controller-manager)"
  scheduler="$("$root/control-plane/build.sh" kube-scheduler)"
  kwok="$("$root/control-plane/build.sh" kwok)"
  start controller-manager "$kcm" --kubeconfig "$dir/kubeconfig" --master "$url" \
    --controllers deployment,replicaset,endpointslice,serviceaccount --leader-elect=false \
    --service-account-private-key-file "$dir/certs/sa.key" --root-ca-file "$dir/certs/ca.crt" \
    --secure-port 0 --concurrent-deployment-syncs 2 --concurrent-replicaset-syncs 2
  start scheduler "$scheduler" --kubeconfig "$dir/kubeconfig" --master "$url" --leader-elect=false \
    --secure-port 0
  # kwok's stock node and pod-delete stages (its kustomize/stage/{node,pod}/fast), read from
  # its module, and the pods' start and readiness (kwok-stages.yaml: Ready once the backend is).
  kwok_dir="$("$root/control-plane/module-dir.sh" kwok sigs.k8s.io/kwok)"
  cat "$kwok_dir"/kustomize/stage/node/fast/node-initialize.yaml \
    <(echo ---) "$root/control-plane/kwok-stages.yaml" \
    <(echo ---) "$kwok_dir"/kustomize/stage/pod/fast/pod-delete.yaml >"$dir/kwok-stages.yaml"
  # Debian's etcd (3.4) has no watch progress requests, which client-go's watch-list asks the
  # API server for: kwok's client-go would retry its watches for ever.
  start kwok env KUBE_FEATURE_WatchListClient=false "$kwok" --kubeconfig "$dir/kubeconfig" --master "$url" --config "$dir/kwok-stages.yaml" \
    --manage-all-nodes=true --cidr "$KW_POD_CIDR" --node-ip "$KW_CIDR_PREFIX.1" \
    --server-address "127.0.0.1:$(free_port)"
  kubectl apply -f - >&2 <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node
  labels: {kubernetes.io/hostname: kwok-node, type: kwok}
  annotations: {kwok.x-k8s.io/node: fake}
spec:
  podCIDR: $KW_POD_CIDR
EOF
  wait_for 60 "the kwok node Ready" kubectl wait --for condition=Ready --timeout 1s node/kwok-node ||
    die "the kwok node is not Ready: $(tail -5 "$dir/kwok.log")"
  # What kube-controller-manager's node lifecycle controller does once a node is Ready (it is
  # not run: kwok sends no heartbeats it would read): the admission plugin's not-ready taint
  # removed, so that the scheduler places pods.
  kubectl taint node kwok-node node.kubernetes.io/not-ready:NoSchedule- >&2 || true
}

# kw_controller MANIFEST...: the controller's CRDs, its namespace and CA, the controller, a
# PolicyServer of BACKENDS replicas, and the policies.
kw_controller() {
  local c="$dir/certs" m
  "$root/control-plane/kubewarden-crds.sh" all | kubectl apply --server-side -f - >&2
  kubectl wait --for condition=Established --timeout 60s crd --all >&2
  kubectl create namespace "$KW_NAMESPACE" >&2
  # The CA the controller signs the policy server's certificate with (the chart makes it):
  # an EC key, as internal/certs reads it.
  openssl ecparam -name prime256v1 -genkey -noout -out "$c/kw-ca.key" 2>/dev/null
  openssl req -x509 -new -key "$c/kw-ca.key" -days 2 -subj "/CN=kubewarden-controller-ca" -out "$c/kw-ca.crt" 2>/dev/null
  kubectl -n "$KW_NAMESPACE" create secret generic kubewarden-ca \
    --from-file=ca.crt="$c/kw-ca.crt" --from-file=ca.key="$c/kw-ca.key" >&2
  # Its own webhook server needs a certificate to start; nothing calls it.
  mkdir -p "$dir/kw-tmp/k8s-webhook-server/serving-certs"
  cp "$c/backend.crt" "$dir/kw-tmp/k8s-webhook-server/serving-certs/tls.crt"
  cp "$c/backend.key" "$dir/kw-tmp/k8s-webhook-server/serving-certs/tls.key"
  kw_controller_start
  kubectl apply -f - >&2 <<EOF
apiVersion: policies.kubewarden.io/v1
kind: PolicyServer
metadata:
  name: $KW_POLICY_SERVER
spec:
  image: ghcr.io/kubewarden/policy-server:v1.36.0
  replicas: ${backends:-1}
EOF
  for m in "$@"; do
    kw_policy_manifest "$m"
  done | kubectl apply -f - >&2
}

# kw_wait_active MANIFEST...: until the controller made every policy active (its webhook
# written), and the rollouts are over.
kw_wait_active() {
  local names m
  names="$(for m in "$@"; do awk '/^  name: / {print $2; exit}' "$m"; done)"
  # shellcheck disable=SC2086
  wait_for 240 "every policy active" kw_all_active $names || {
    kubectl get clusteradmissionpolicies -o wide >&2 || true
    tail -20 "$dir/kubewarden-controller.log" >&2
    die "the controller did not make every policy active"
  }
  # The rollouts are over: the newest ReplicaSet's pods alone are left.
  wait_for 60 "the policy server's pods settled" kw_pods_settled ||
    die "the policy server's pods did not settle: $(kubectl -n "$KW_NAMESPACE" get pods -o wide 2>&1)"
}

# kw_policy_manifest MANIFEST: the manifest as applied, its spec.module the built module
# (MODULE_FOR names another module for a policy).
# kw_controller_start: the controller process (again, after kw_controller_stop).
kw_controller_start() {
  local controller health_port
  controller="$("$root/control-plane/build.sh" kubewarden-controller)"
  health_port="$(free_port)"
  start kubewarden-controller env TMPDIR="$dir/kw-tmp" "$controller" --kubeconfig "$dir/kubeconfig" \
    --deployments-namespace "$KW_NAMESPACE" --metrics-bind-address 0 \
    --health-probe-bind-address "127.0.0.1:$health_port" --webhook-server-port "$(free_port)" \
    --zap-log-level info
  wait_for 60 "kubewarden-controller" curl -sf "http://127.0.0.1:$health_port/readyz" ||
    die "kubewarden-controller did not become ready: $(tail -5 "$dir/kubewarden-controller.log")"
}

kw_controller_stop() {
  [ -f "$dir/pids/kubewarden-controller.pid" ] && stop_pid_file "$dir/pids/kubewarden-controller.pid"
  return 0
}

kw_policy_manifest() {
  python3 - "$1" "$module" "${MODULE_FOR:-}" <<'PY'
import sys, yaml
path, module, module_for = sys.argv[1], sys.argv[2], sys.argv[3]
own = dict(m.split("=", 1) for m in module_for.split() if "=" in m)
for doc in yaml.safe_load_all(open(path)):
    if not isinstance(doc, dict):
        continue
    name = doc["metadata"]["name"]
    location = own.get(name, "file://" + module)
    doc["spec"]["module"] = location if "://" in location else "file://" + location
    print("---")
    print(yaml.safe_dump(doc, sort_keys=False))
PY
}

kw_all_active() {
  local name status
  for name in "$@"; do
    status="$(kubectl get clusteradmissionpolicy "$name" -o jsonpath='{.status.policyStatus}' 2>/dev/null)"
    [ "$status" = active ] || return 1
  done
}

# kw_pods_settled: exactly BACKENDS pods, all Running with an address, none terminating.
kw_pods_settled() {
  local pods
  pods="$(kubectl -n "$KW_NAMESPACE" get pods -l "kubewarden/policy-server=$KW_POLICY_SERVER" \
    -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}|{.status.phase}|{.status.podIP}{"\n"}{end}')"
  [ "$(grep -c . <<<"$pods")" -eq "${backends:-1}" ] && ! grep -qv '^|Running|[0-9]' <<<"$pods"
}

# kw_netns_up: the namespace the pods' addresses live in, its veth's host end the CIDR's first
# address.
kw_netns_up() {
  local ns host_if ns_if
  ns="$(kw_netns)"
  host_if="kw${ns#so-kw-}h" ns_if="kw${ns#so-kw-}n"
  host_if="${host_if:0:15}" ns_if="${ns_if:0:15}"
  kw_netns_down
  # Another cluster's namespace left behind (a run killed before its `down`) would hold the
  # same host address on its veth: one cluster of this kind runs at a time, so it goes.
  local stale
  for stale in $(ip netns list | grep -o '^so-kw-[0-9a-f]*'); do
    log "deleting the network namespace $stale a stopped cluster left"
    ip netns del "$stale"
  done
  ip netns add "$ns"
  ip link add "$host_if" type veth peer name "$ns_if"
  ip link set "$ns_if" netns "$ns"
  ip addr add "$KW_CIDR_PREFIX.1/24" dev "$host_if"
  ip link set "$host_if" up
  ip -n "$ns" link set lo up
  ip -n "$ns" link set "$ns_if" up
  # Each pod's address is a /32 of its own (policy-server-pods.py), the network reached on the link.
  ip -n "$ns" route add "$KW_CIDR_PREFIX.0/24" dev "$ns_if"
  echo "$ns_if" >"$dir/netns-if"
}

kw_netns_down() {
  local ns
  ns="$(kw_netns)"
  ip netns del "$ns" 2>/dev/null || true # its veth end goes with it, and so the host's
  rm -f "$dir/netns-if"
}

# kw_backend_start: the pods' backends (control-plane/policy-server-pods.py, which follows the
# pods through every rollout), started or resumed; waits until each pod's answers /readiness.
kw_backend_start() {
  rm -f "$dir/backends-paused"
  if [ ! -f "$dir/pids/policy-server-pods.pid" ] || ! kill -0 "$(cat "$dir/pids/policy-server-pods.pid")" 2>/dev/null; then
    local backend
    if [ -n "${POLICY_SERVER:-}" ]; then
      backend=(env KUBECONFIG="$dir/kubeconfig-pod" "$POLICY_SERVER" --policies-download-dir "$dir/downloads"
        --sigstore-cache-dir "$dir/sigstore" --workers 2 --log-fmt json --ignore-kubernetes-connection-failure)
    else
      backend=(env KUBECONFIG="$dir/kubeconfig-pod" "$policy_host" serve --workers 2 --log "$dir/requests.jsonl")
    fi
    start policy-server-pods python3 "$root/control-plane/policy-server-pods.py" "$dir" "$(kw_netns)" \
      "$(cat "$dir/netns-if")" "$KW_NAMESPACE" "$KW_POLICY_SERVER" -- "${backend[@]}"
  fi
  wait_for 60 "the policy server's pods served" kw_pods_served ||
    die "the policy server's pods are not served: $(tail -5 "$dir/policy-server-pods.log")"
}

# kw_pods_served: every pod with an address has a backend answering /readiness.
kw_pods_served() {
  local ips ip
  ips="$(kubectl -n "$KW_NAMESPACE" get pods -l "kubewarden/policy-server=$KW_POLICY_SERVER" \
    -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}' | grep . | sort)" || return 1
  [ -n "$ips" ] && [ "$ips" = "$(sort "$dir/pod-ips" 2>/dev/null)" ] || return 1
  for ip in $ips; do
    curl -sf -m 2 "http://$ip:8081/readiness" >/dev/null || return 1
  done
}

# kw_backend_stop: every backend stopped (and kept so until kw_backend_start).
kw_backend_stop() {
  touch "$dir/backends-paused"
  wait_for 30 "the policy server's backends stopped" test ! -s "$dir/pod-ips" ||
    die "the backends did not stop: $(tail -5 "$dir/policy-server-pods.log")"
}
