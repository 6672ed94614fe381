#!/usr/bin/env bash
# `make cluster-olm`: the real OLM v1 (operator-controller and catalogd) against the policy,
# through a real kube-apiserver. For each suite it brings a control plane up with
# control-plane/cluster.sh (etcd, the API server, the webhook backend and the webhooks of the
# suite's ClusterAdmissionPolicy manifests) and OLM v1's CRDs, runs catalogd and
# operator-controller beside it as they run in a pod (their service-account token at
# /var/run/secrets/kubernetes.io/serviceaccount, in a private mount namespace), serves a
# file-based catalog and registry+v1 bundles (scripts/olm-images.py) from a local registry,
# registers the witness webhook (e2e-tests/cluster-olm/witness-webhook.py: who wrote what),
# runs the suite's bats file (e2e-tests/cluster-olm/), and takes it all down again.
#
# Suites (all by default, in this order):
#   olm-v1     install, upgrade, a second extension shipping the same CRD: deploy/olm-v1.yaml
#   all-tools  the same under deploy/all-tools.yaml
#   identity   deploy/identity/olm-v1-operator.yaml: the extension's installer writes, a human
#              or another extension's installer cannot
#   migrate    an extension installed with the Helm applier, then operator-controller restarted
#              with the BoxcutterRuntime gate: the migration to boxcutter and an upgrade after
#              it, under deploy/olm-v1.yaml and deploy/all-tools.yaml (needs the ClusterObjectSet
#              CRD in OLM_CRDS; skipped, saying so, without it)
#   race       two operator-controllers without leader election, two extensions shipping one
#              CRD created at once, the witness holding each CRD CREATE (OLM_RACE_ROUNDS
#              rounds): without the policy (race-without: e2e-tests/cluster/null-policy.yaml,
#              whose webhook selects none of OLM's objects) and with deploy/olm-v1.yaml
#              (race-with), each on a cluster of its own, the two at the same time
#              (OLM_RACE_PARALLEL=0: one after the other); race-without or race-with alone
#              runs that half
#
# usage: scripts/cluster-olm.sh [--hold] [SUITE...]
#   --hold: bring the first suite's cluster up with OLM v1, print how to use it, and keep it
#   up until interrupted (no tests run)
# Environment: OPERATOR_CONTROLLER, CATALOGD (paths of the binaries; unset: the suite skips,
# exit 0), KUBE_APISERVER (1.28 or newer; unset or older: it skips; it never builds Debian's
# 1.20 for this), POLICY_HOST, POLICY (as control-plane/cluster.sh), OLM_RACE_ROUNDS (10),
# OLM_RACE_SETTLE (seconds a race round may last, 60), OLM_RACE_SLEEP (seconds the witness
# holds a CRD CREATE in the race, 2), OLM_REQUIRE_RACE=1 (fail when no round shows the race
# without the policy), OLM_RUN_DIR (target/cluster-olm: logs, the conditions users see, the
# race's per-round records), OLM_CRDS (the CRD files applied first, space-separated: OLM v1's
# standard CRDs, ../shared/data/olmv1-crds.yaml, by default; the boxcutter applier needs the
# experimental ClusterExtension and ClusterObjectSet CRDs of the same operator-controller
# source), OPERATOR_CONTROLLER_FLAGS (more flags for every operator-controller, e.g.
# --feature-gates=BoxcutterRuntime=true).
# Needs root (unshare -m and a tmpfs on /run for the token files), docker-registry (Debian's
# package, installed when missing), openssl, jq, curl, bats.
set -euo pipefail
# The emulation's webhooks (control-plane/cluster.sh, WEBHOOKS): the OLM suites were written
# and run against them, with OLM's own binaries, which no registry serves; they have not been
# run with the real Kubewarden controller.
export WEBHOOKS=emulation
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

log() { echo "cluster-olm: $*" >&2; }
die() { log "$*"; exit 1; }
skip() { echo "cluster-olm: skipped: $*"; exit 0; }

# A child runs one suite for its parent (the halves of the race, at the same time), with the
# parent's run directory, registry and certificates (OLM_PARENT_RUN, OLM_REGISTRY).
child="${OLM_PARENT_RUN:-}"

if [ -z "$child" ]; then
  # --- What the suite needs, else one line and exit 0 (CI has no OLM v1 binaries).
  [ -n "${OPERATOR_CONTROLLER:-}" ] ||
    skip "OPERATOR_CONTROLLER is not set (the path of OLM v1's operator-controller binary; CATALOGD, catalogd's)"
  [ -n "${CATALOGD:-}" ] ||
    skip "CATALOGD is not set (the path of OLM v1's catalogd binary; OPERATOR_CONTROLLER, operator-controller's)"
  [ -n "${KUBE_APISERVER:-}" ] ||
    skip "KUBE_APISERVER is not set (OLM v1's CRDs need a kube-apiserver 1.28 or newer; the one scripts/kube-apiserver/build.sh builds is 1.20)"
  for bin in "$OPERATOR_CONTROLLER" "$CATALOGD" "$KUBE_APISERVER"; do
    [ -x "$bin" ] || die "$bin is not an executable"
  done
  apiserver_version="$("$KUBE_APISERVER" --version 2>/dev/null | awk '{print $2}')"
  apiserver_minor="$(sed -n 's/^v1\.\([0-9][0-9]*\)\..*/\1/p' <<<"$apiserver_version")"
  [ -n "$apiserver_minor" ] || die "cannot read the version of $KUBE_APISERVER ('$apiserver_version')"
  [ "$apiserver_minor" -ge 28 ] ||
    skip "KUBE_APISERVER is Kubernetes $apiserver_version; OLM v1's CRDs need 1.28 or newer"
  [ "$(id -u)" -eq 0 ] ||
    skip "not root: operator-controller and catalogd read their token from /var/run/secrets/kubernetes.io/serviceaccount, which this suite mounts in a private mount namespace (unshare -m), as root"
fi
crd_files=()
for f in ${OLM_CRDS:-"$root/../shared/data/olmv1-crds.yaml"}; do
  [ -f "$f" ] || die "no CRD file $f (OLM_CRDS; by default ../shared/data/olmv1-crds.yaml, from the repository root)"
  crd_files+=(--apply "$(realpath "$f")")
done
read -r -a controller_flags <<<"${OPERATOR_CONTROLLER_FLAGS:-}"

hold=""
if [ "${1:-}" = --hold ]; then
  hold=1
  shift
fi
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(olm-v1 all-tools identity migrate race)
for s in "${suites[@]}"; do
  case "$s" in olm-v1 | all-tools | identity | migrate | race | race-without | race-with) ;;
    *) die "unknown suite $s (olm-v1, all-tools, identity, migrate, race; race-without or race-with: half the race)" ;; esac
done

run="$(realpath -m "${child:-${OLM_RUN_DIR:-$root/target/cluster-olm}}")"
export KUBE_APISERVER
rounds="${OLM_RACE_ROUNDS:-10}"
race_sleep="${OLM_RACE_SLEEP:-2}"
certs="$run/certs"
started_at=$SECONDS

# --- Processes: each started in the background, its output in a log, its PID in $run/pids.
# shellcheck source=control-plane/processes.bash
source "$root/control-plane/processes.bash"

# start NAME LOG COMMAND...: COMMAND in the background, its output in LOG.
start() {
  local name="$1" logfile="$2"
  shift 2
  start_in "$run/pids" "$name" "$logfile" "$@"
}

# stop PATTERN...: the processes this script started whose names match (globs of pid files).
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
suite_name=""
tails_shown=""
# tails: the last lines of every log of the current suite (on failure; once).
tails() {
  local f
  [ -n "$suite_dir" ] && [ -z "$tails_shown" ] || return 0
  tails_shown=1
  for f in "$suite_dir"/logs/*.log "$suite_dir"/cluster/apiserver-1.log "$suite_dir"/cluster/backend-1.log; do
    [ -s "$f" ] || continue
    echo "----- last 25 lines of ${f#"$root"/}" >&2
    tail -n 25 "$f" >&2
  done
}

children=()
cleanup() {
  local rc=$? c d dirs
  trap - EXIT
  [ "$rc" -eq 0 ] || tails
  # The children (process groups of their own: setsid) take their clusters down on TERM.
  for c in "${children[@]}"; do
    kill -TERM -- "-$c" 2>/dev/null || true
  done
  for c in "${children[@]}"; do
    for _ in $(seq 1 100); do
      kill -0 "$c" 2>/dev/null || break
      sleep 0.1
    done
  done
  if [ -n "$child" ]; then
    [ -z "$suite_name" ] || stop "$suite_name-*"
    dirs=("$suite_dir")
  else
    stop '*'
    dirs=("$run"/*)
  fi
  for d in "${dirs[@]}"; do
    [ -n "$d" ] && [ -d "$d/cluster/pids" ] || continue
    CLUSTER_DIR="$d/cluster" "$root/control-plane/cluster.sh" down >/dev/null 2>&1 || true
  done
  exit "$rc"
}

if [ -z "$child" ]; then
  rm -rf "$run"
  mkdir -p "$run/pids" "$run/logs"
fi
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$child" ]; then
  log "operator-controller: $("$OPERATOR_CONTROLLER" version 2>&1 | head -1)${OPERATOR_CONTROLLER_FLAGS:+ (flags: $OPERATOR_CONTROLLER_FLAGS)}"
  log "catalogd: $("$CATALOGD" version 2>&1 | head -1)"
  log "kube-apiserver: $apiserver_version ($KUBE_APISERVER)"

  # --- Tools: docker-registry (Debian's), bats with its helpers, jq, openssl, etcd.
  "$root/scripts/setup.sh" cluster >&2
  if ! command -v docker-registry >/dev/null; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends docker-registry >&2 ||
      { "${sudo[@]}" apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends docker-registry >&2; }
  fi
  [ -d /usr/lib/bats/bats-assert ] || "$root/scripts/setup.sh" test >&2

  # --- Certificates: one CA for catalogd's catalog server and the witness webhook.
  mkdir -p "$certs/cas"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=cluster-olm-test-ca" \
    -keyout "$certs/ca.key" -out "$certs/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$certs/serving.key" \
    -out "$certs/serving.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$certs/serving.ext"
  openssl x509 -req -in "$certs/serving.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -CAcreateserial \
    -days 2 -extfile "$certs/serving.ext" -out "$certs/serving.crt" 2>/dev/null
  cp "$certs/ca.crt" "$certs/cas/ca.crt"

  # --- The registry, and the images in it.
  read -r registry_port <<<"$(free_ports 1)"
  registry="127.0.0.1:$registry_port"
  mkdir -p "$run/registry/data"
  cat >"$run/registry/config.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $run/registry/data}, delete: {enabled: true}}
http: {addr: $registry}
EOF
  start registry "$run/logs/registry.log" docker-registry serve "$run/registry/config.yml"
  wait_for 30 "registry $registry" curl -sf "http://$registry/v2/" ||
    die "the registry did not start: $(tail -5 "$run/logs/registry.log")"
  python3 "$root/scripts/olm-images.py" --registry "$registry" --out "$run/images.json" >/dev/null
  log "pushed $(jq -r 'to_entries | map(.value.ref) | join(", ")' "$run/images.json")"

  # containers/image (operator-controller's and catalogd's pulls): the registry is plain HTTP,
  # and no signature is required (the policy they fall back to when none is installed).
  mkdir -p "$run/containers"
  cat >"$run/containers/registries.conf" <<EOF
[[registry]]
location = "$registry"
insecure = true
EOF
  echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$run/containers/policy.json"
else
  registry="$OLM_REGISTRY"
fi

# --- OLM v1 beside a control plane.
# in_pod NAME SERVICE-ACCOUNT DIR COMMAND...: COMMAND as a pod of OLM v1's runs: in a mount
# namespace of its own, with a tmpfs on /run (/var/run's target) holding the service account's
# token, the cluster's CA and the namespace, and KUBERNETES_SERVICE_HOST/PORT set (client-go's
# in-cluster configuration). Its log: $suite_dir/logs/NAME.log.
in_pod() {
  local name="$1" sa="$2" dir="$3" url host port runpath
  shift 3
  mkdir -p "$dir/serviceaccount" "$dir/tmp" "$dir/home" "$dir/cache"
  kubectl create token "$sa" -n olmv1-system --duration 6h >"$dir/serviceaccount/token"
  cp "$APISERVER_CA" "$dir/serviceaccount/ca.crt"
  printf olmv1-system >"$dir/serviceaccount/namespace"
  url="${APISERVER_URLS%%,*}"
  host="${url#https://}"
  port="${host##*:}"
  host="${host%:*}"
  runpath="$(readlink -f /var/run)"
  start "$suite_name-$name" "$suite_dir/logs/$name.log" env -u KUBECONFIG \
    KUBERNETES_SERVICE_HOST="$host" KUBERNETES_SERVICE_PORT="$port" \
    CONTAINERS_REGISTRIES_CONF="$run/containers/registries.conf" \
    CONTAINERS_POLICY_JSON="$run/containers/policy.json" \
    HOME="$dir/home" TMPDIR="$dir/tmp" \
    unshare --mount --propagation private -- sh -c '
      mount -t tmpfs -o mode=0755 tmpfs "$1" &&
      mkdir -p "$1/secrets/kubernetes.io/serviceaccount" &&
      cp "$2/token" "$2/ca.crt" "$2/namespace" "$1/secrets/kubernetes.io/serviceaccount/" &&
      shift 2 && exec "$@"' sh "$runpath" "$dir/serviceaccount" "$@"
}

# controller_up N FLAGS...: operator-controller N, with FLAGS, until it is ready.
controller_up() {
  local i="$1" probe
  shift
  read -r probe <<<"$(free_ports 1)"
  in_pod "operator-controller-$i" operator-controller-controller-manager "$suite_dir/olm/operator-controller-$i" \
    "$OPERATOR_CONTROLLER" --health-probe-bind-address "127.0.0.1:$probe" \
    --cache-path "$suite_dir/olm/operator-controller-$i/cache" --catalogd-cas-dir "$certs/cas" \
    --system-namespace olmv1-system "$@"
  wait_for 60 "$suite_name: operator-controller $i${*:+ ($*)}" curl -sf "http://127.0.0.1:$probe/readyz" ||
    die "operator-controller $i did not become ready"
}

# olm_up CONTROLLERS LEADER-ELECT: the namespace and service accounts of OLM v1 (bound to
# cluster-admin), catalogd, CONTROLLERS operator-controllers, the ClusterCatalog, served.
olm_up() {
  local controllers="$1" leader="$2" i ports probe sa flags=()
  kubectl create namespace olmv1-system >/dev/null
  for sa in operator-controller-controller-manager catalogd-controller-manager; do
    kubectl create serviceaccount "$sa" -n olmv1-system >/dev/null
    kubectl create clusterrolebinding "$sa" --clusterrole cluster-admin --serviceaccount "olmv1-system:$sa" >/dev/null
  done
  [ "$leader" = true ] && flags+=(--leader-elect)

  read -r -a ports <<<"$(free_ports 4)"
  in_pod catalogd catalogd-controller-manager "$suite_dir/olm/catalogd" "$CATALOGD" \
    --health-probe-bind-address "127.0.0.1:${ports[0]}" --metrics-bind-address "127.0.0.1:${ports[1]}" \
    --catalogs-server-addr "127.0.0.1:${ports[2]}" --external-address "127.0.0.1:${ports[2]}" \
    --webhook-server-port "${ports[3]}" --tls-cert "$certs/serving.crt" --tls-key "$certs/serving.key" \
    --cache-dir "$suite_dir/olm/catalogd/cache" --system-namespace olmv1-system "${flags[@]}"
  wait_for 60 "$suite_name: catalogd" curl -sf "http://127.0.0.1:${ports[0]}/readyz" || die "catalogd did not become ready"

  for i in $(seq 1 "$controllers"); do
    controller_up "$i" "${flags[@]}" "${controller_flags[@]}"
  done

  kubectl apply -f - >/dev/null <<EOF
apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: test-catalog
  # What catalogd's mutating webhook adds (not registered here).
  labels: {olm.operatorframework.io/metadata.name: test-catalog}
spec:
  source:
    type: Image
    image: {ref: "$registry/catalog:latest"}
EOF
  wait_for 90 "$suite_name: ClusterCatalog test-catalog (Serving)" \
    kubectl wait --for condition=Serving=True --timeout 1s clustercatalog/test-catalog ||
    die "the ClusterCatalog is not served: $(kubectl get clustercatalog test-catalog -o jsonpath='{.status.conditions}')"
}

# available_standin: with the boxcutter applier, a revision rolls out only once its objects
# pass their availability probes (internal/operator-controller/applier/boxcutter.go: a
# Deployment's status is of its generation, status.updatedReplicas equals status.replicas and
# its condition Available is True), which kube-controller-manager and the kubelets make true;
# there are neither here. So every second each Deployment of an extension whose status is not
# that, for its generation, gets it, written
# to its status subresource (which the presets' rules, resources "*", do not send the policy).
available_standin() {
  local ns name replicas generation status
  while :; do
    kubectl get deployments -A -l olm.operatorframework.io/owner-name -o json 2>/dev/null | jq -r '.items[]
      | select(.status.observedGeneration != .metadata.generation
          or ([.status.conditions // [] | .[] | select(.type == "Available" and .status == "True")] | length == 0))
      | "\(.metadata.namespace) \(.metadata.name) \(.spec.replicas // 1) \(.metadata.generation)"' |
      while read -r ns name replicas generation; do
        status="$(jq -cn --argjson r "$replicas" --argjson g "$generation" '{status: {observedGeneration: $g,
          replicas: $r, updatedReplicas: $r, readyReplicas: $r, availableReplicas: $r, conditions: [
          {type: "Available", status: "True", reason: "MinimumReplicasAvailable", message: "stand-in for kube-controller-manager"},
          {type: "Progressing", status: "True", reason: "NewReplicaSetAvailable", message: "stand-in for kube-controller-manager"}]}}')"
        kubectl -n "$ns" patch deployment "$name" --subresource status --type merge -p "$status" || true
      done
    sleep 1
  done
}

# witness_up [SLEEP]: e2e-tests/cluster-olm/witness-webhook.py, registered for every write of
# an object with OLM v1's owner-name label (a ValidatingWebhookConfiguration whose name sorts
# before the policy's; the API server calls them in parallel); SLEEP: seconds it holds each
# CRD CREATE.
witness_up() {
  local port ca
  read -r port <<<"$(free_ports 1)"
  start "$suite_name-witness" "$suite_dir/logs/witness.log" python3 "$root/e2e-tests/cluster-olm/witness-webhook.py" \
    --port "$port" --cert "$certs/serving.crt" --key "$certs/serving.key" \
    --log "$suite_dir/witness.jsonl" --sleep-crd-create "${1:-0}"
  wait_for 30 "$suite_name: witness webhook" curl -sf --cacert "$certs/ca.crt" "https://127.0.0.1:$port/healthz" ||
    die "the witness webhook did not start"
  ca="$(base64 -w0 <"$certs/ca.crt")"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: 0-cluster-olm-witness
webhooks:
  - name: witness.cluster-olm.single-owner.test
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    timeoutSeconds: 10
    clientConfig: {url: "https://127.0.0.1:$port/validate", caBundle: "$ca"}
    rules:
      - {apiGroups: ["*"], apiVersions: ["*"], resources: ["*"], operations: [CREATE, UPDATE, DELETE], scope: "*"}
    objectSelector:
      matchExpressions: [{key: olm.operatorframework.io/owner-name, operator: Exists}]
EOF
  touch "$suite_dir/witness.jsonl"
  wait_for 30 "$suite_name: the witness webhook's registration" witness_probe ||
    die "the API server never called the witness webhook"
}

# witness_probe: a dry-run CREATE the witness selects reaches it (the API server's informer
# has the new configuration).
witness_probe() {
  local before
  before="$(wc -l <"$suite_dir/witness.jsonl")"
  kubectl create configmap cluster-olm-probe -n default --dry-run=client -o json |
    jq '.metadata.labels = {"olm.operatorframework.io/owner-name": "probe", "single-owner.kubewarden.io/latency": "null"}' |
    kubectl apply --dry-run=server -f - >/dev/null 2>&1 || true
  [ "$(wc -l <"$suite_dir/witness.jsonl")" -gt "$before" ]
}

# run_bats FILE WEBHOOK: the suite's bats file, with what it reads (OLM_*).
run_bats() {
  OLM_RUN_DIR="$run" OLM_SUITE="$suite_name" OLM_SUITE_DIR="$suite_dir" OLM_REGISTRY="$registry" \
    OLM_POLICY_WEBHOOK="$2" OLM_RACE_ROUNDS="$rounds" WITNESS_LOG="$suite_dir/witness.jsonl" \
    bats "$1"
}

# suite NAME BATS-FILE CONTROLLERS LEADER-ELECT WITNESS-SLEEP -- CLUSTER-ARGS...: a cluster,
# OLM v1, the witness, the bats file, and everything down again. The bats file reads OLM_*.
suite() {
  local name="$1" file="$2" controllers="$3" leader="$4" sleep="$5" t0=$SECONDS rc=0 webhook
  shift 6
  suite_name="$name"
  suite_dir="$run/$name"
  mkdir -p "$suite_dir/logs" "$suite_dir/olm"
  log "== $name: cluster up ($*)"
  CLUSTER_DIR="$suite_dir/cluster" "$root/control-plane/cluster.sh" up "${crd_files[@]}" "$@" 2>"$suite_dir/logs/cluster-up.log" ||
    die "control-plane/cluster.sh up failed: $(cat "$suite_dir/logs/cluster-up.log")"
  # shellcheck disable=SC1091
  source "$suite_dir/cluster/env"
  olm_up "$controllers" "$leader"
  if [[ " ${controller_flags[*]} " == *BoxcutterRuntime=true* ]]; then
    start "$name-available-standin" "$suite_dir/logs/available-standin.log" \
      bash -c "$(declare -f available_standin); available_standin"
  fi
  witness_up "$sleep"
  webhook="$(jq -r '[.items[].webhooks[].name] | first' "$suite_dir/cluster/webhooks.json")"
  if [ -n "$hold" ]; then
    # --hold: the cluster stays up for a human until this script is interrupted.
    {
      echo "export OLM_RUN_DIR=$run OLM_SUITE=$name OLM_SUITE_DIR=$suite_dir OLM_REGISTRY=$registry"
      echo "export OLM_POLICY_WEBHOOK=$webhook OLM_PRESET=${OLM_PRESET:-} OLM_RACE_MODE=${OLM_RACE_MODE:-}"
      echo "export OLM_RACE_ROUNDS=$rounds WITNESS_LOG=$suite_dir/witness.jsonl"
    } >"$suite_dir/olm-env"
    log "== $name is up: source $suite_dir/cluster/env; source $suite_dir/olm-env; then kubectl, or bats ${file#"$root"/}. Interrupt this script to take it down."
    while :; do
      sleep 3600 &
      wait $! || true
    done
  fi
  log "== $name: bats ${file#"$root"/} (set up in $((SECONDS - t0)) s)"
  run_bats "$file" "$webhook" || rc=$?
  if [ "$rc" -eq 0 ] && [ -n "${OLM_MIGRATE_TO:-}" ]; then
    # The move to boxcutter: operator-controller restarted with the gate, as a cluster's
    # administrator turns it on, then the second half of the suite.
    log "== $name: operator-controller restarted with --feature-gates=BoxcutterRuntime=true"
    stop "$name-operator-controller-1"
    controller_up 1 --leader-elect --feature-gates=BoxcutterRuntime=true
    start "$name-available-standin" "$suite_dir/logs/available-standin.log" \
      bash -c "$(declare -f available_standin); available_standin"
    log "== $name: bats ${OLM_MIGRATE_TO#"$root"/}"
    OPERATOR_CONTROLLER_FLAGS=--feature-gates=BoxcutterRuntime=true run_bats "$OLM_MIGRATE_TO" "$webhook" || rc=$?
  fi
  [ "$rc" -eq 0 ] || tails
  stop "$name-*"
  CLUSTER_DIR="$suite_dir/cluster" "$root/control-plane/cluster.sh" down 2>/dev/null
  [ "$rc" -eq 0 ] || die "$name failed"
  log "== $name: passed in $((SECONDS - t0)) s"
  suite_dir=""
}

# "Without the policy": null-policy.yaml's webhook, in the same backend, selects only objects
# labelled single-owner.kubewarden.io/latency=null (none of OLM's); the null module serves it
# when one is built (make cluster-latency builds it), else the policy's module, which that
# selector never sends a request of OLM's.
null_module="$root/target/null-annotated.wasm"
race_half() {
  local module_for=()
  case "$1" in
    race-without)
      [ -f "$null_module" ] && module_for=("single-owner-null=file://$null_module")
      MODULE_FOR="${module_for[*]}" OLM_RACE_MODE=without OLM_PRESET=e2e-tests/cluster/null-policy.yaml \
        suite race-without "$root/e2e-tests/cluster-olm/race.bats" 2 false "$race_sleep" -- \
        --probe "$root/e2e-tests/cluster-olm/null-probe.yaml" "$root/e2e-tests/cluster/null-policy.yaml" ;;
    race-with)
      OLM_RACE_MODE=with OLM_PRESET=deploy/olm-v1.yaml \
        suite race-with "$root/e2e-tests/cluster-olm/race.bats" 2 false "$race_sleep" -- "$root/deploy/olm-v1.yaml" ;;
  esac
}

# race_parallel: race-without and race-with, each in a child (this script again, in a session
# of its own), at the same time; their output once both have ended.
race_parallel() {
  local half pids=() rc=0 i=0
  log "== race: race-without and race-with at the same time ($rounds rounds each); their output follows when both end"
  for half in race-without race-with; do
    OLM_PARENT_RUN="$run" OLM_REGISTRY="$registry" setsid bash "$0" "$half" >"$run/logs/$half.out" 2>&1 </dev/null &
    pids+=($!)
    children+=($!)
  done
  for half in race-without race-with; do
    wait "${pids[$i]}" || rc=1
    echo "----- $half" >&2
    cat "$run/logs/$half.out" >&2
    i=$((i + 1))
  done
  children=()
  [ "$rc" -eq 0 ] || die "the race failed"
}

if [ -n "$child" ]; then
  race_half "${suites[0]}"
  exit 0
fi

passed=() skipped=()
for s in "${suites[@]}"; do
  case "$s" in
    olm-v1)
      OLM_PRESET=deploy/olm-v1.yaml suite olm-v1 "$root/e2e-tests/cluster-olm/install.bats" 1 true 0 -- \
        "$root/deploy/olm-v1.yaml" ;;
    all-tools)
      OLM_PRESET=deploy/all-tools.yaml suite all-tools "$root/e2e-tests/cluster-olm/install.bats" 1 true 0 -- \
        "$root/deploy/all-tools.yaml" ;;
    identity)
      OLM_PRESET=deploy/identity/olm-v1-operator.yaml suite identity "$root/e2e-tests/cluster-olm/identity.bats" 1 true 0 -- \
        "$root/deploy/identity/olm-v1-operator.yaml" ;;
    migrate)
      # From the Helm applier to boxcutter on a running cluster (operator-controller's
      # BoxcutterStorageMigrator), under each preset; needs the ClusterObjectSet CRD.
      if ! grep -qs 'name: clusterobjectsets.olm.operatorframework.io' ${OLM_CRDS:-/dev/null}; then
        echo "cluster-olm: migrate skipped: OLM_CRDS does not name the ClusterObjectSet CRD (the experimental CRDs of the operator-controller source)" | tee -a "$run/summary.txt"
        skipped+=(migrate)
        continue
      fi
      # It starts with the Helm applier, whatever OPERATOR_CONTROLLER_FLAGS say.
      saved_flags=("${controller_flags[@]}")
      controller_flags=()
      for preset in olm-v1 all-tools; do
        OLM_PRESET=deploy/$preset.yaml OLM_MIGRATE_TO="$root/e2e-tests/cluster-olm/migrate-boxcutter.bats" \
          OPERATOR_CONTROLLER_FLAGS="" \
          suite "migrate-$preset" "$root/e2e-tests/cluster-olm/migrate-helm.bats" 1 true 0 -- "$root/deploy/$preset.yaml"
      done
      controller_flags=("${saved_flags[@]}") ;;
    race-without | race-with) race_half "$s" ;;
    race)
      if [ "${OLM_RACE_PARALLEL:-1}" = 1 ] && [ -z "$hold" ]; then
        race_parallel
      else
        race_half race-without
        race_half race-with
      fi
      read -r n_without r_without <"$run/race-without.count"
      read -r n_with r_with <"$run/race-with.count"
      echo "cluster-olm race: without the policy $n_without of $r_without rounds both Installed=True; with deploy/olm-v1.yaml $n_with of $r_with" |
        tee -a "$run/summary.txt"
      if [ "${OLM_REQUIRE_RACE:-}" = 1 ] && [ "$n_without" -eq 0 ]; then
        die "OLM_REQUIRE_RACE=1: no round showed the race without the policy"
      fi
      ;;
  esac
  passed+=("$s")
done

echo "cluster-olm: passed (${passed[*]:-none})${skipped[*]:+, skipped (${skipped[*]})} in $((SECONDS - started_at)) s; records in ${run#"$root"/}"
[ -f "$run/summary.txt" ] && cat "$run/summary.txt"
exit 0
