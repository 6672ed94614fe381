#!/usr/bin/env bash
# The witness webhook (control-plane/witness.py) on the cluster control-plane/cluster.sh runs,
# registered for every write (CREATE, UPDATE, DELETE of any resource but events, dry runs too)
# of the given users: what a real tool sent, recorded for e2e-tests/corpus/witnessed.py. It
# allows everything (failurePolicy Ignore) and sits beside the policy's webhook.
#
# usage: control-plane/witness.sh up TOOL USERNAME...   (records: $CLUSTER_DIR/witness-TOOL.jsonl)
#          a USERNAME ~REGEX stands for every username REGEX matches (CEL's matches: RE2)
#        control-plane/witness.sh down TOOL
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cluster="$(realpath -m "${CLUSTER_DIR:-$root/target/cluster}")"
log() { echo "witness: $*" >&2; }
# shellcheck source=control-plane/processes.bash
source "$root/control-plane/processes.bash"

verb="${1:?usage: witness.sh up TOOL USERNAME... | down TOOL}" tool="${2:?usage: witness.sh up TOOL USERNAME... | down TOOL}"
shift 2
# shellcheck disable=SC1091
source "$cluster/env"
mkdir -p "$cluster/pids"
records="$cluster/witness-$tool.jsonl"

down() {
  kubectl delete validatingwebhookconfiguration "0-witness-$tool" --ignore-not-found >/dev/null
  [ -f "$cluster/pids/witness-$tool.pid" ] && stop_pid_file "$cluster/pids/witness-$tool.pid"
  return 0
}

up() {
  [ $# -gt 0 ] || { log "no username to witness"; exit 2; }
  down
  local port user names=() patterns=() users
  port="$(free_port)"
  # The backend's serving certificate (127.0.0.1) and the cluster's CA (control-plane/cluster.sh).
  start_in "$cluster/pids" "witness-$tool" "$cluster/witness-$tool.log" python3 "$root/control-plane/witness.py" \
    --port "$port" --cert "$cluster/certs/backend.crt" --key "$cluster/certs/backend.key" --log "$records"
  wait_for 30 "witness of $tool" curl -sf --cacert "$cluster/certs/ca.crt" "https://127.0.0.1:$port/healthz"
  for user in "$@"; do
    if [[ "$user" == "~"* ]]; then patterns+=("request.userInfo.username.matches('${user#\~}')"); else names+=("'$user'"); fi
  done
  users="request.userInfo.username in [$(IFS=,; echo "${names[*]}")]"
  for user in "${patterns[@]}"; do users+=" || $user"; done
  kubectl apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: 0-witness-$tool
webhooks:
  - name: $tool.witness.single-owner.test
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    timeoutSeconds: 5
    clientConfig: {url: "https://127.0.0.1:$port/validate", caBundle: "$(base64 -w0 <"$cluster/certs/ca.crt")"}
    rules:
      - {apiGroups: ["*"], apiVersions: ["*"], resources: ["*"], operations: [CREATE, UPDATE, DELETE], scope: "*"}
    matchConditions:
      - name: the-tool
        expression: "request.resource.resource != 'events' && ($users)"
YAML
  touch "$records"
  # Registered once the API server calls it: a dry-run write as the first username (who may
  # write ConfigMaps in default) reaches it.
  probe() {
    kubectl create configmap witness-probe -n default --dry-run=server --as "$1" >/dev/null 2>&1 || true
    grep -q '"name": "witness-probe"' "$records"
  }
  wait_for 30 "the registration of the witness of $tool" probe "${names[0]//\'/}"
  log "up for $tool ($*): $records"
}

case "$verb" in
  up) up "$@" ;;
  down) down ;;
  *) log "unknown verb $verb (up, down)"; exit 2 ;;
esac
