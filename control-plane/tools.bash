# What the real tools' start scripts share (flux.sh, argocd.sh, crossplane.sh): the account a
# tool's processes run as, and the git server tools reconcile from; the suites take their
# kubeconfigs from here too (e2e-tests/cluster/common.bash). Sourced after processes.bash (the
# git server needs it); KUBECONFIG names the cluster.

# tool_account NAMESPACE SERVICE-ACCOUNT FILE: the namespace and its service account, bound to
# cluster-admin (as the tools' own installs bind their controllers), and FILE its kubeconfig
# (kubeconfig_as); prints FILE.
tool_account() {
  kubectl create namespace "$1" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl -n "$1" create serviceaccount "$2" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl create clusterrolebinding "$1-$2" --clusterrole cluster-admin \
    --serviceaccount "$1:$2" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubeconfig_as "$@"
}

# kubeconfig_as NAMESPACE SERVICE-ACCOUNT FILE: FILE a kubeconfig of the current cluster that
# authenticates as the service account, with a token from `kubectl create token` (in a pod the
# kubelet mounts one), its context's namespace NAMESPACE; prints FILE.
kubeconfig_as() {
  local server ca
  server="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
  ca="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')"
  cat >"$3" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", certificate-authority: "$ca"}}]
users: [{name: $1-$2, user: {token: "$(kubectl create token "$2" -n "$1" --duration 24h)"}}]
contexts: [{name: local, context: {cluster: local, user: $1-$2, namespace: $1}}]
current-context: local
KUBECONFIG
  echo "$3"
}

# git_server_start PIDDIR ROOT PORT: control-plane/git-server.py serving the bare repositories
# in ROOT on 127.0.0.1:PORT, its log beside its PID file; waits until it answers (any answer:
# with no repository yet, a 404).
git_server_start() {
  start_in "$1" git-server "$1/../git-server.log" python3 "$root/control-plane/git-server.py" "$2" "$3"
  wait_for 20 "git server" curl -s -o /dev/null "http://127.0.0.1:$3/"
}
