# The control plane of the plugin's suites (owners.bats, corpus.bats): etcd and a kube-apiserver
# of their own on free loopback ports (not control-plane/cluster.sh's, so a suite runs beside another
# suite's cluster), with one token user per USER:GROUP. Sourced; the caller defines `log`.
# shellcheck source=control-plane/processes.bash
source "$ROOT/control-plane/processes.bash"
PLUGIN="${PLUGIN:-$ROOT/target/host/kubectl-single_owner}"

# apiserver_binary: $KUBE_APISERVER, else the one control-plane/build.sh builds (once per
# machine); none (no Go to build it with): nothing, and the suite skips.
apiserver_binary() {
  "$ROOT/control-plane/build.sh" kube-apiserver 2>/dev/null
}

# control_plane_up APISERVER DIR NAMESPACE USER:GROUP...: starts etcd and APISERVER (RBAC on,
# token users), waits until both are ready, and writes DIR/kubeconfig-USER for each user, its
# context's namespace NAMESPACE.
control_plane_up() {
  local apiserver="$1" dir="$2" namespace="$3" c user group token etcd_port port admin_token=""
  shift 3
  mkdir -p "$dir/pids" "$dir/certs"
  c="$dir/certs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=single-owner-test-ca" -keyout "$c/ca.key" -out "$c/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=apiserver" -keyout "$c/apiserver.key" -out "$c/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$c/apiserver.ext"
  openssl x509 -req -in "$c/apiserver.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 1 \
    -extfile "$c/apiserver.ext" -out "$c/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
  : >"$dir/tokens.csv"
  for user in "$@"; do
    group="${user#*:}" user="${user%%:*}"
    token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    [ -n "$admin_token" ] || admin_token="$token"
    printf '%s,%s,%s-uid,%s\n' "$token" "$user" "$user" "$group" >>"$dir/tokens.csv"
    printf '%s' "$token" >"$dir/token-$user"
  done
  etcd_port="$(free_port)"
  start_in "$dir/pids" etcd "$dir/etcd.log" etcd --name single-owner-test --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$(free_port)" --log-level error
  wait_for 30 etcd curl -sf "http://127.0.0.1:$etcd_port/health" || { tail -5 "$dir/etcd.log" >&2; return 1; }
  port="$(free_port)"
  start_in "$dir/pids" apiserver "$dir/apiserver.log" "$apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
    --secure-port "$port" --tls-cert-file "$c/apiserver.crt" --tls-private-key-file "$c/apiserver.key" \
    --client-ca-file "$c/ca.crt" --token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$c/sa.pub" \
    --service-account-signing-key-file "$c/sa.key" --service-cluster-ip-range 10.96.0.0/16
  wait_for 90 kube-apiserver curl -sf --cacert "$c/ca.crt" -H "Authorization: Bearer $admin_token" \
    "https://127.0.0.1:$port/readyz" || { tail -5 "$dir/apiserver.log" >&2; return 1; }
  for user in "$@"; do
    user="${user%%:*}"
    cat >"$dir/kubeconfig-$user" <<EOC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$port", certificate-authority: "$c/ca.crt"}
users:
- name: $user
  user: {token: "$(cat "$dir/token-$user")"}
contexts:
- name: $user
  context: {cluster: local, user: $user, namespace: $namespace}
current-context: $user
EOC
  done
}

# plugin_suite_up NAMESPACE USER:GROUP...: a suite's setup_file: without a kube-apiserver or
# etcd, sets SKIP_ALL (every test skips, saying why); without the plugin, fails; else starts the
# control plane in $BATS_FILE_TMPDIR/cluster and exports KUBECONFIG, the first user's.
plugin_suite_up() {
  local apiserver dir="$BATS_FILE_TMPDIR/cluster" first="${2%%:*}"
  apiserver="$(apiserver_binary || true)"
  if [ -z "$apiserver" ] || ! command -v etcd >/dev/null; then
    export SKIP_ALL="no kube-apiserver (set KUBE_APISERVER) or no etcd"
    return 0
  fi
  [ -x "$PLUGIN" ] || { echo "no plugin at $PLUGIN (make kubectl-plugin)" >&2; return 1; }
  control_plane_up "$apiserver" "$dir" "$@"
  export KUBECONFIG="$dir/kubeconfig-$first"
}

# control_plane_down DIR: stops what control_plane_up started.
control_plane_down() {
  local f
  for f in "$1"/pids/apiserver.pid "$1"/pids/etcd.pid; do
    [ -f "$f" ] && stop_pid_file "$f"
  done
  return 0
}
