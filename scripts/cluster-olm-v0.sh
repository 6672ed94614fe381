#!/usr/bin/env bash
# `make cluster-olm-v0`: the real OLM v0 (olm-operator and catalog-operator, with opm serving a
# file-based catalog) against the policy, through a real kube-apiserver. For each suite it
# brings a control plane up with control-plane/cluster.sh (etcd, the API server, the webhook backend
# and the webhooks of the suite's ClusterAdmissionPolicy manifest), then OLM v0 beside it as
# local processes, as OLM's own deployment runs them (deploy/chart of
# operator-lifecycle-manager):
# - the 8 CRDs of deploy/chart/crds (OLM_CRDS_DIR; the CSV CRD applied server-side, 814 KB),
#   namespace olm, the service account olm-operator-serviceaccount bound to the chart's
#   ClusterRole system:controller:operator-lifecycle-manager (both operators run as it, with
#   its token: not as an admin), the OLMConfig cluster;
# - catalog-operator (`--kubeconfig ... --namespace olm`) and olm-operator (`--namespace olm`,
#   KUBECONFIG), each in a network namespace of its own (both bind :8080, which no flag
#   moves), reaching the API server (and the catalog) through
#   e2e-tests/cluster-olm-v0/netns.py;
# - `opm serve` of a catalog rendered from e2e-tests/cluster-olm-v0/bundles (bundles without an
#   image, their manifests inline: no unpack Job) and catalog/channels.yaml, and a grpc
#   CatalogSource test-catalog in olm whose spec.address names it (no registry pod);
# - a stand-in for kube-controller-manager that gives every Deployment OLM wrote the status
#   olm-operator waits for (observedGeneration, replicas, Available=True) after each spec
#   change (none runs here, nor a garbage collector: the suites clean up after themselves);
# - the policy backend run as the policy server's service account (kubewarden:
#   policy-server-default), with deploy/rbac/lookups.yaml applied (but in the lookups suite):
#   policy-host serve, or policy-server when POLICY_SERVER is given (its debug log turned into
#   the same verdict records by e2e-tests/cluster-olm-v0/verdicts.py);
# - the witness webhook (control-plane/witness.py): every write of OLM's service
#   account and of an object labelled olm.owner, with its labels, annotations and owner
#   references.
# Then it runs the suite's bats files (e2e-tests/cluster-olm-v0/) and takes it all down.
#
# Suites (all by default, in this order):
#   olm-v0     deploy/olm-v0.yaml: install and upgrades (replaces, skips, two steps while
#              replacing), a second operator shipping the first's ClusterRole or Deployment,
#              two operators shipping one CRD, uninstall
#   all-tools  the same under deploy/all-tools.yaml
#   lookups    deploy/olm-v0.yaml without deploy/rbac/lookups.yaml: the upgrade is refused
#              until the RBAC is applied; then a bundle ClusterRole not yet labelled olm.owner
#              taken by a second operator (unowned.bats)
#
# usage: scripts/cluster-olm-v0.sh [--hold] [SUITE...]
#   --hold: bring the first suite's cluster up with OLM v0, print how to use it, and keep it up
#   until interrupted (no tests run)
# Environment: OLM_OPERATOR, CATALOG_OPERATOR, OPM (paths of olm-operator's `olm`,
# catalog-operator's `catalog` and operator-registry's `opm` binaries; any unset: the suite
# skips, exit 0), KUBE_APISERVER (unset: it skips), OLM_CRDS_DIR (the directory of OLM's CRDs:
# deploy/chart/crds of the same source; by default ../crds beside the olm binary's directory,
# else it skips), POLICY_SERVER, POLICY_HOST, POLICY
# (as control-plane/cluster.sh), OLM_RUN_DIR (target/cluster-olm-v0: logs and records).
# Needs root (network namespaces), ip (iproute2), python3 with yaml, openssl, jq, curl, bats.
set -euo pipefail
# The emulation's webhooks (control-plane/cluster.sh, WEBHOOKS): the OLM suites were written
# and run against them, with OLM's own binaries, which no registry serves; they have not been
# run with the real Kubewarden controller.
export WEBHOOKS=emulation
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

log() { echo "cluster-olm-v0: $*" >&2; }
die() { log "$*"; exit 1; }
skip() { echo "cluster-olm-v0: skipped: $*"; exit 0; }

how="build them from github.com/operator-framework/operator-lifecycle-manager (cmd/olm, cmd/catalog) and operator-registry (cmd/opm), or OpenShift's operator-framework-olm, outside this repository"
[ -n "${OLM_OPERATOR:-}" ] || skip "OLM_OPERATOR is not set (the path of OLM v0's olm-operator binary, cmd/olm; also CATALOG_OPERATOR, OPM, OLM_CRDS_DIR: $how)"
[ -n "${CATALOG_OPERATOR:-}" ] || skip "CATALOG_OPERATOR is not set (the path of OLM v0's catalog-operator binary, cmd/catalog: $how)"
[ -n "${OPM:-}" ] || skip "OPM is not set (the path of operator-registry's opm binary, cmd/opm: $how)"
# OLM's CRDs: OLM_CRDS_DIR, else a crds/ directory beside the binaries' directory.
if [ -z "${OLM_CRDS_DIR:-}" ] && [ -d "$(dirname "$OLM_OPERATOR")/../crds" ]; then
  OLM_CRDS_DIR="$(realpath "$(dirname "$OLM_OPERATOR")/../crds")"
fi
[ -n "${OLM_CRDS_DIR:-}" ] || skip "OLM_CRDS_DIR is not set, and no crds/ beside $(dirname "$OLM_OPERATOR") (the directory of OLM v0's 8 CRDs: deploy/chart/crds of the source the binaries were built from)"
[ -n "${KUBE_APISERVER:-}" ] || skip "KUBE_APISERVER is not set (a kube-apiserver 1.30 or newer: the witness webhook selects by matchConditions)"
for bin in "$OLM_OPERATOR" "$CATALOG_OPERATOR" "$OPM" "$KUBE_APISERVER"; do
  [ -x "$bin" ] || die "$bin is not an executable"
done
[ "$(find "$OLM_CRDS_DIR" -maxdepth 1 -name '*.yaml' | wc -l)" -ge 8 ] || die "OLM_CRDS_DIR=$OLM_CRDS_DIR does not hold OLM's 8 CRD files"
apiserver_version="$("$KUBE_APISERVER" --version 2>/dev/null | awk '{print $2}')"
apiserver_minor="$(sed -n 's/^v1\.\([0-9][0-9]*\)\..*/\1/p' <<<"$apiserver_version")"
[ -n "$apiserver_minor" ] || die "cannot read the version of $KUBE_APISERVER ('$apiserver_version')"
[ "$apiserver_minor" -ge 30 ] || skip "KUBE_APISERVER is Kubernetes $apiserver_version; the suite needs 1.30 or newer (matchConditions)"
[ "$(id -u)" -eq 0 ] || skip "not root: olm-operator and catalog-operator run in network namespaces of their own (both bind :8080), which needs root"
command -v ip >/dev/null || skip "no ip (iproute2): the operators' network namespaces need it"

hold=""
if [ "${1:-}" = --hold ]; then
  hold=1
  shift
fi
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(olm-v0 all-tools lookups)
for s in "${suites[@]}"; do
  case "$s" in olm-v0 | all-tools | lookups) ;; *) die "unknown suite $s (olm-v0, all-tools, lookups)" ;; esac
done

run="$(realpath -m "${OLM_RUN_DIR:-$root/target/cluster-olm-v0}")"
export KUBE_APISERVER
certs="$run/certs"
started_at=$SECONDS
OLM_SA=olm-operator-serviceaccount
OLM_USER="system:serviceaccount:olm:$OLM_SA"
here="$root/e2e-tests/cluster-olm-v0"

# shellcheck source=control-plane/processes.bash
source "$root/control-plane/processes.bash"

start() {
  local name="$1" logfile="$2"
  shift 2
  start_in "$run/pids" "$name" "$logfile" "$@"
}
stop() {
  local pattern file
  for pattern in "$@"; do
    for file in "$run"/pids/$pattern.pid; do
      [ -f "$file" ] && stop_pid_file "$file"
    done
  done
  return 0
}

suite_dir=""
tails_shown=""
tails() {
  local f
  [ -n "$suite_dir" ] && [ -z "$tails_shown" ] || return 0
  tails_shown=1
  for f in "$suite_dir"/logs/*.log "$suite_dir"/cluster/backend-1.log; do
    [ -s "$f" ] || continue
    [ "$(basename "$f")" != opm.log ] || continue
    echo "----- last 10 lines of ${f#"$root"/}" >&2
    tail -n 10 "$f" | cut -c1-600 >&2
  done
}

cleanup() {
  local rc=$? d
  trap - EXIT
  [ "$rc" -eq 0 ] || tails
  stop '*'
  for d in "$run"/*/cluster; do
    [ -d "$d/pids" ] || continue
    CLUSTER_DIR="$d" "$root/control-plane/cluster.sh" down >/dev/null 2>&1 || true
  done
  exit "$rc"
}

rm -rf "$run"
mkdir -p "$run/pids" "$run/logs" "$run/bin"
trap cleanup EXIT
trap 'exit 130' INT TERM

log "olm-operator: $("$OLM_OPERATOR" --version 2>&1 | head -1 | tr -s ' ')"
log "catalog-operator: $("$CATALOG_OPERATOR" --version 2>&1 | head -1 | tr -s ' ')"
log "opm: $("$OPM" version 2>&1 | head -1 | cut -c1-120)"
log "kube-apiserver: $apiserver_version ($KUBE_APISERVER)"
"$root/scripts/setup.sh" cluster >&2
[ -d /usr/lib/bats/bats-assert ] || "$root/scripts/setup.sh" test >&2

# The module and the host as they are when the run starts (a rebuild during the run changes
# neither).
cp "$(realpath "${POLICY:-$root/annotated-policy.wasm}")" "$run/bin/annotated-policy.wasm"
cp "$(realpath "${POLICY_HOST:-$root/target/host/policy-host}")" "$run/bin/policy-host"
export POLICY="$run/bin/annotated-policy.wasm" POLICY_HOST="$run/bin/policy-host"

# --- Certificates: a CA and a serving certificate for the witness webhook.
mkdir -p "$certs"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=cluster-olm-v0-test-ca" \
  -keyout "$certs/ca.key" -out "$certs/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$certs/serving.key" \
  -out "$certs/serving.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$certs/serving.ext"
openssl x509 -req -in "$certs/serving.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -CAcreateserial \
  -days 2 -extfile "$certs/serving.ext" -out "$certs/serving.crt" 2>/dev/null

# --- The catalog: channels.yaml and each bundle rendered by opm (no image template: the
# bundle's image is "" and its manifests are olm.bundle.object properties).
mkdir -p "$run/catalog/test-catalog"
cp "$here/catalog/channels.yaml" "$run/catalog/test-catalog/"
for b in "$here"/bundles/*/; do
  "$OPM" render "$b" -o yaml >"$run/catalog/test-catalog/$(basename "$b").yaml" 2>>"$run/logs/opm-render.log" ||
    die "opm render $b failed: $(tail -3 "$run/logs/opm-render.log")"
done
"$OPM" validate "$run/catalog" >>"$run/logs/opm-render.log" 2>&1 || die "opm validate failed: $(tail -3 "$run/logs/opm-render.log")"
log "catalog rendered: $(ls "$here/bundles" | tr '\n' ' ')"

# kubeconfig_as FILE USER TOKEN: a kubeconfig for the first API server, as USER.
kubeconfig_as() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "${APISERVER_URLS%%,*}", certificate-authority: "$APISERVER_CA"}
users:
- name: $2
  user: {token: "$3"}
contexts:
- name: local
  context: {cluster: local, user: $2}
current-context: local
EOF
}

# backend_as_policy_server: the webhook backend restarted as the policy server's service
# account (kubewarden:policy-server-default), as it runs in a cluster: its lookups are then
# what RBAC grants that account (deploy/rbac/lookups.yaml), not an admin's. The same command
# as control-plane/cluster.sh's, with that kubeconfig.
backend_as_policy_server() {
  local ready token
  kubectl create namespace kubewarden >/dev/null
  kubectl create serviceaccount policy-server-default -n kubewarden >/dev/null
  token="$(kubectl create token policy-server-default -n kubewarden --duration 6h)"
  kubeconfig_as "$suite_dir/policy-server.kubeconfig" policy-server-default "$token"
  CLUSTER_DIR="$suite_dir/cluster" "$root/control-plane/cluster.sh" backend-stop
  read -ra ready <<<"$READINESS_PORTS"
  if [ -n "${POLICY_SERVER:-}" ]; then
    KUBECONFIG="$suite_dir/policy-server.kubeconfig" start_in "$CLUSTER_DIR/pids" backend-1 "$CLUSTER_DIR/backend-1.log" \
      "$POLICY_SERVER" --policies "$CLUSTER_DIR/policies.yml" --addr 127.0.0.1 \
      --port "$BACKEND_PORT" --readiness-probe-port "${ready[0]}" \
      --cert-file "$CLUSTER_DIR/certs/backend.crt" --key-file "$CLUSTER_DIR/certs/backend.key" \
      --policies-download-dir "$CLUSTER_DIR/downloads" --sigstore-cache-dir "$CLUSTER_DIR/sigstore" \
      --workers 2 --log-fmt json --log-level debug
    # Its debug log, as the verdict records the suites read (policy-host serve writes them).
    start_in "$CLUSTER_DIR/pids" verdicts "$CLUSTER_DIR/requests.jsonl" \
      python3 "$root/e2e-tests/cluster-olm-v0/verdicts.py" "$CLUSTER_DIR/backend-1.log"
  else
    KUBECONFIG="$suite_dir/policy-server.kubeconfig" start_in "$CLUSTER_DIR/pids" backend-1 "$CLUSTER_DIR/backend-1.log" \
      "$POLICY_HOST" serve --policies "$CLUSTER_DIR/policies.yml" --addr 127.0.0.1 \
      --port "$BACKEND_PORT" --readiness-probe-port "${ready[0]}" \
      --cert-file "$CLUSTER_DIR/certs/backend.crt" --key-file "$CLUSTER_DIR/certs/backend.key" \
      --workers 2 --log "$CLUSTER_DIR/requests.jsonl"
  fi
  wait_for 60 "webhook backend as kubewarden:policy-server-default" curl -sf "http://127.0.0.1:${ready[0]}/readiness" ||
    die "the backend did not become ready: $(tail -5 "$CLUSTER_DIR/backend-1.log")"
}

# available_standin: what kube-controller-manager and the kubelets would make true, which
# olm-operator waits for (pkg/controller/install/status_viewer.go): every second, each
# Deployment labelled olm.owner whose status is not of its generation, or not Available, gets
# observedGeneration, replicas and Available=True on its status subresource (which the presets'
# rules, resources "*", do not send the policy). A Deployment named NAMESPACE/NAME in the file
# $suite_dir/standin-hold is left as it is (the suites hold an upgrade in Installing).
available_standin() {
  local ns name replicas generation status
  while :; do
    kubectl get deployments -A -l olm.owner -o json 2>/dev/null | jq -r '.items[]
      | select(.status.observedGeneration != .metadata.generation
          or ([.status.conditions // [] | .[] | select(.type == "Available" and .status == "True")] | length == 0))
      | "\(.metadata.namespace) \(.metadata.name) \(.spec.replicas // 1) \(.metadata.generation)"' |
      while read -r ns name replicas generation; do
        grep -qsx "$ns/$name" "$SUITE_DIR/standin-hold" && continue
        status="$(jq -cn --argjson r "$replicas" --argjson g "$generation" '{status: {observedGeneration: $g,
          replicas: $r, updatedReplicas: $r, readyReplicas: $r, availableReplicas: $r, conditions: [
          {type: "Available", status: "True", reason: "MinimumReplicasAvailable", message: "stand-in for kube-controller-manager"},
          {type: "Progressing", status: "True", reason: "NewReplicaSetAvailable", message: "stand-in for kube-controller-manager"}]}}')"
        kubectl -n "$ns" patch deployment "$name" --subresource status --type merge -p "$status" >/dev/null &&
          echo "$(date +%T) $ns/$name generation $generation: Available" || true
      done
    sleep 1
  done
}

# witness_up: control-plane/witness.py, registered for every write (CREATE,
# UPDATE, DELETE; no subresource, no Event) of OLM's service account, and of any object
# labelled olm.owner (a ValidatingWebhookConfiguration whose name sorts before the policy's).
witness_up() {
  local port ca
  read -r port <<<"$(free_ports 1)"
  start "$suite_name-witness" "$suite_dir/logs/witness.log" python3 "$root/control-plane/witness.py" \
    --port "$port" --cert "$certs/serving.crt" --key "$certs/serving.key" --log "$suite_dir/witness.jsonl"
  wait_for 30 "$suite_name: witness webhook" curl -sf --cacert "$certs/ca.crt" "https://127.0.0.1:$port/healthz" ||
    die "the witness webhook did not start"
  ca="$(base64 -w0 <"$certs/ca.crt")"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: 0-cluster-olm-v0-witness
webhooks:
  - name: witness.cluster-olm-v0.single-owner.test
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    timeoutSeconds: 10
    clientConfig: {url: "https://127.0.0.1:$port/validate", caBundle: "$ca"}
    rules:
      - {apiGroups: ["*"], apiVersions: ["*"], resources: ["*"], operations: [CREATE, UPDATE, DELETE], scope: "*"}
    matchConditions:
      - name: olm-or-owned
        expression: >-
          request.resource.resource != 'events' && (request.userInfo.username == '$OLM_USER' ||
          (object != null && has(object.metadata.labels) && 'olm.owner' in object.metadata.labels) ||
          (oldObject != null && has(oldObject.metadata.labels) && 'olm.owner' in oldObject.metadata.labels))
EOF
  touch "$suite_dir/witness.jsonl"
  wait_for 30 "$suite_name: the witness webhook's registration" witness_probe ||
    die "the API server never called the witness webhook"
}
witness_probe() {
  local before
  before="$(wc -l <"$suite_dir/witness.jsonl")"
  kubectl create configmap cluster-olm-v0-probe -n default --dry-run=client -o json |
    jq '.metadata.labels = {"olm.owner": "probe"}' | kubectl apply --dry-run=server -f - >/dev/null 2>&1 || true
  [ "$(wc -l <"$suite_dir/witness.jsonl")" -gt "$before" ]
}

# olm_up: OLM v0's CRDs, namespace, account, RBAC, OLMConfig; opm serving the catalog; the
# CatalogSource; catalog-operator and olm-operator as that account, each in its own network
# namespace; the stand-in.
olm_up() {
  local f token api_port ports opm_port pprof_port
  for f in "$OLM_CRDS_DIR"/*.yaml; do
    kubectl apply --server-side --field-manager cluster-olm-v0 -f "$f" >/dev/null
  done
  kubectl wait --for condition=Established --timeout 60s crd --all >/dev/null
  kubectl create namespace olm >/dev/null
  kubectl create serviceaccount "$OLM_SA" -n olm >/dev/null
  # deploy/chart/templates/0000_50_olm_02-olm-operator.serviceaccount.yaml: both operators
  # run as this account, bound to this ClusterRole.
  kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:controller:operator-lifecycle-manager
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["watch", "list", "get", "create", "update", "patch", "delete", "deletecollection", "escalate", "bind"]
- nonResourceURLs: ["*"]
  verbs: ["*"]
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: olm-operator-binding-olm
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:controller:operator-lifecycle-manager
subjects:
- kind: ServiceAccount
  name: $OLM_SA
  namespace: olm
---
apiVersion: operators.coreos.com/v1
kind: OLMConfig
metadata:
  name: cluster
EOF
  token="$(kubectl create token "$OLM_SA" -n olm --duration 6h)"
  kubeconfig_as "$suite_dir/olm.kubeconfig" "$OLM_SA" "$token"

  read -r -a ports <<<"$(free_ports 2)"
  opm_port="${ports[0]}"
  pprof_port="${ports[1]}"
  # Its cache in a temporary directory of TMPDIR (--cache-dir wants a cache built beforehand).
  mkdir -p "$suite_dir/opm/tmp"
  start "$suite_name-opm" "$suite_dir/logs/opm.log" env TMPDIR="$suite_dir/opm/tmp" \
    "$OPM" serve "$run/catalog" -p "$opm_port" --pprof-addr "127.0.0.1:$pprof_port" \
    -t "$suite_dir/opm/termination.log"
  wait_for 60 "$suite_name: opm serve :$opm_port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$opm_port" ||
    die "opm serve did not start: $(tail -5 "$suite_dir/logs/opm.log")"

  kubectl apply -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: test-catalog
  namespace: olm
spec:
  sourceType: grpc
  address: 127.0.0.1:$opm_port
  displayName: single-owner-policy test catalog
EOF

  api_port="${APISERVER_URLS%%,*}"
  api_port="${api_port##*:}"
  start "$suite_name-catalog-operator" "$suite_dir/logs/catalog-operator.log" \
    python3 "$here/netns.py" --forward "$api_port" --forward "$opm_port" -- \
    "$CATALOG_OPERATOR" --kubeconfig "$suite_dir/olm.kubeconfig" --namespace olm --writeStatusName ""
  start "$suite_name-olm-operator" "$suite_dir/logs/olm-operator.log" \
    env KUBECONFIG="$suite_dir/olm.kubeconfig" OPERATOR_NAMESPACE=olm OPERATOR_NAME=olm-operator \
    python3 "$here/netns.py" --forward "$api_port" -- \
    "$OLM_OPERATOR" --namespace olm --writeStatusName ""
  wait_for 120 "$suite_name: CatalogSource test-catalog READY (catalog-operator)" \
    bash -c '[ "$(kubectl get catalogsource test-catalog -n olm -o jsonpath="{.status.connectionState.lastObservedState}")" = READY ]' ||
    die "the CatalogSource never became READY: $(kubectl get catalogsource test-catalog -n olm -o jsonpath='{.status}')"
  start "$suite_name-standin" "$suite_dir/logs/available-standin.log" \
    env SUITE_DIR="$suite_dir" bash -c "$(declare -f available_standin); available_standin"
}

# suite NAME PRESET LOOKUPS(yes|no) BATS-FILE...: a cluster, OLM v0, the witness, the bats
# files, and everything down again.
suite() {
  local name="$1" preset="$2" lookups="$3" t0=$SECONDS rc=0 webhook
  shift 3
  suite_name="$name"
  suite_dir="$run/$name"
  tails_shown=""
  mkdir -p "$suite_dir/logs"
  log "== $name: cluster up ($preset)"
  CLUSTER_DIR="$suite_dir/cluster" "$root/control-plane/cluster.sh" up "$root/$preset" 2>"$suite_dir/logs/cluster-up.log" ||
    die "control-plane/cluster.sh up failed: $(tail -20 "$suite_dir/logs/cluster-up.log")"
  # shellcheck disable=SC1091
  source "$suite_dir/cluster/env"
  backend_as_policy_server
  if [ "$lookups" = yes ]; then
    kubectl apply -f "$root/deploy/rbac/lookups.yaml" >/dev/null
  fi
  olm_up
  witness_up
  webhook="$(jq -r '[.items[].webhooks[].name] | first' "$suite_dir/cluster/webhooks.json")"
  {
    echo "export OLM_RUN_DIR=$run OLM_SUITE=$name OLM_SUITE_DIR=$suite_dir OLM_PRESET=$preset"
    echo "export OLM_POLICY_WEBHOOK=$webhook OLM_LOOKUPS=$lookups WITNESS_LOG=$suite_dir/witness.jsonl OLM_USER=$OLM_USER"
  } >"$suite_dir/olm-env"
  if [ -n "$hold" ]; then
    log "== $name is up: source $suite_dir/cluster/env; source $suite_dir/olm-env; then kubectl, or bats e2e-tests/cluster-olm-v0/<file>. Interrupt this script to take it down."
    while :; do
      sleep 3600 &
      wait $! || true
    done
  fi
  log "== $name: bats $* (set up in $((SECONDS - t0)) s)"
  local file
  for file in "$@"; do
    # shellcheck disable=SC1091
    (source "$suite_dir/olm-env" && bats "$here/$file") || rc=$?
  done
  [ "$rc" -eq 0 ] || tails
  stop "$name-*"
  CLUSTER_DIR="$suite_dir/cluster" "$root/control-plane/cluster.sh" down 2>/dev/null
  [ "$rc" -eq 0 ] || die "$name failed"
  log "== $name: passed in $((SECONDS - t0)) s"
  suite_dir=""
}

passed=()
for s in "${suites[@]}"; do
  case "$s" in
    olm-v0) suite olm-v0 deploy/olm-v0.yaml yes lifecycle.bats conflicts.bats crd.bats uninstall.bats ;;
    all-tools) suite all-tools deploy/all-tools.yaml yes lifecycle.bats conflicts.bats crd.bats uninstall.bats ;;
    lookups) suite lookups deploy/olm-v0.yaml no lookups.bats unowned.bats ;;
  esac
  passed+=("$s")
done

echo "cluster-olm-v0: passed (${passed[*]}) in $((SECONDS - started_at)) s; records in ${run#"$root"/}"
# The records the suites wrote (what OLM did, where users see the policy's messages, counts).
for f in "$run"/*.txt; do
  [ -f "$f" ] || continue
  echo "----- ${f#"$root"/}"
  cut -c1-400 "$f"
done
exit 0
