# Shared helpers of the suites that run the real OLM v0 (olm-operator and catalog-operator)
# against the policy through a real API server. scripts/cluster-olm-v0.sh brings the cluster,
# OLM v0, the catalog (test-catalog in olm) and the witness webhook up for each suite and sets:
#   OLM_RUN_DIR (records), OLM_SUITE, OLM_SUITE_DIR (its logs), OLM_PRESET (the policy's
#   manifest), OLM_POLICY_WEBHOOK (its webhook's name), OLM_LOOKUPS (yes: deploy/rbac/lookups.yaml
#   is applied), WITNESS_LOG (every write of OLM's service account or of an object labelled
#   olm.owner: control-plane/witness.py), OLM_USER (OLM's service account's name).
load ../cluster/common
# Under policy-server too the verdicts are recorded: scripts/cluster-olm-v0.sh turns its debug
# log into policy-host serve's records (verdicts.py).
needs_request_log() { :; }

[ -n "${OLM_SUITE_DIR:-}" ] || {
  echo "run through scripts/cluster-olm-v0.sh (make cluster-olm-v0): it brings OLM v0 up" >&2
  exit 1
}

# How long OLM may take to resolve, install or upgrade (seconds).
TIMEOUT="${OLM_V0_TIMEOUT:-180}"
NS=widgets-system

say() { echo "# $*" >&3; }

# record FILE TEXT: TEXT appended to the run's records (OLM_RUN_DIR/FILE).
record() { printf '%s\n' "$2" >>"$OLM_RUN_DIR/$1"; }

# operator_group NAMESPACE: the namespace and an OperatorGroup targeting it (OwnNamespace).
operator_group() {
  ensure namespace "$1"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: $1, namespace: $1}
spec: {targetNamespaces: [$1]}
EOF
}

# subscribe NAMESPACE PACKAGE CHANNEL APPROVAL [STARTING-CSV]: a Subscription named PACKAGE.
subscribe() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: $2, namespace: $1}
spec:
  name: $2
  channel: $3
  source: test-catalog
  sourceNamespace: olm
  installPlanApproval: $4
${5:+  startingCSV: $5}
EOF
}

# plan_for NAMESPACE CSV: the newest InstallPlan that installs CSV (empty when none).
# (catalog-operator may create two for one resolution, seconds apart; the Subscription
# references the newer.)
plan_for() {
  kubectl get installplans -n "$1" -o json | jq -r --arg c "$2" \
    '[.items[] | select(.spec.clusterServiceVersionNames | index($c))] | sort_by(.metadata.creationTimestamp) | last | .metadata.name // empty'
}

# approve NAMESPACE CSV [SECONDS]: waits for an InstallPlan of CSV, then (2 s later, for a
# duplicate) approves every InstallPlan of CSV; prints the newest.
approve() {
  local plan p nudge=$((SECONDS + 30)) deadline=$((SECONDS + ${3:-$TIMEOUT}))
  until plan="$(plan_for "$1" "$2")" && [ -n "$plan" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "no InstallPlan for $2 in $1:"; subscription_state "$1"; return 1; }
    if [ "$SECONDS" -ge "$nudge" ] && kubectl get subscriptions -n "$1" -o json |
      jq -e '[.items[].status.conditions // [] | .[] | select(.type == "ResolutionFailed" and .status == "True")] | length > 0' >/dev/null; then
      # A resolution that ran while the replaced CSV still existed failed
      # (ConstraintsNotSatisfiable: "... exists and is not referenced by a subscription"), and
      # catalog-operator does not resolve again on that CSV's deletion (its resync: 15 min).
      # A change to the Subscriptions has it resolve again.
      record nudges.txt "$OLM_SUITE: no InstallPlan for $2 30 s on, a resolution failed: $(kubectl get subscriptions -n "$1" -o json | jq -r '[.items[].status.conditions // [] | .[] | select(.type == "ResolutionFailed") | .message] | first' | cut -c1-300); the Subscriptions annotated"
      kubectl annotate subscriptions -n "$1" --all --overwrite single-owner.test/resolve="$SECONDS" >/dev/null
      nudge=$((SECONDS + 30))
    fi
    sleep 1
  done
  sleep 2
  for p in $(kubectl get installplans -n "$1" -o json | jq -r --arg c "$2" \
    '.items[] | select((.spec.clusterServiceVersionNames | index($c)) and (.spec.approved | not)) | .metadata.name'); do
    kubectl patch installplan "$p" -n "$1" --type merge -p '{"spec":{"approved":true}}' >/dev/null
  done
  plan_for "$1" "$2"
}

phase() { kubectl get csv "$2" -n "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true; }

# csv_status NAMESPACE CSV: phase, reason and message of the CSV, one line.
csv_status() {
  kubectl get csv "$2" -n "$1" -o json 2>/dev/null |
    jq -r '"phase=\(.status.phase) reason=\(.status.reason) message=\(.status.message)"' || echo "no CSV $2"
}

# subscription_state NAMESPACE: each Subscription's state, CSVs and conditions; each InstallPlan's phase.
subscription_state() {
  kubectl get subscriptions -n "$1" -o json | jq -r '.items[] | "Subscription \(.metadata.name): state=\(.status.state) currentCSV=\(.status.currentCSV) installedCSV=\(.status.installedCSV)",
    (.status.conditions // [] | .[] | "  \(.type)=\(.status) \(.reason // "") \(.message // "")")'
  kubectl get installplans -n "$1" -o json | jq -r '.items[] | "InstallPlan \(.metadata.name) \(.spec.clusterServiceVersionNames) approved=\(.spec.approved) phase=\(.status.phase)",
    (.status.conditions // [] | .[] | "  \(.type)=\(.status) \(.reason // "") \(.message // "")")'
}

# wait_phase NAMESPACE CSV PHASE [SECONDS]: until the CSV is in PHASE.
wait_phase() {
  local deadline=$((SECONDS + ${4:-$TIMEOUT}))
  until [ "$(phase "$1" "$2")" = "$3" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "CSV $2 is not $3 after ${4:-$TIMEOUT} s: $(csv_status "$1" "$2")"
      subscription_state "$1"
      echo "--- olm-operator:"
      tail -n 15 "$OLM_SUITE_DIR/logs/olm-operator.log"
      echo "--- catalog-operator:"
      tail -n 15 "$OLM_SUITE_DIR/logs/catalog-operator.log"
      return 1
    fi
    sleep 1
  done
}

# wait_gone NAMESPACE CSV [SECONDS]: until the CSV no longer exists.
wait_gone() {
  local deadline=$((SECONDS + ${3:-$TIMEOUT}))
  while kubectl get csv "$2" -n "$1" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "CSV $2 still exists: $(csv_status "$1" "$2")"; return 1; }
    sleep 1
  done
}

# owner KIND NAME [NAMESPACE]: OLM's owner labels and the owner references of a stored object,
# one JSON line.
owner() {
  kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -c '{
    labels: (.metadata.labels // {} | with_entries(select(.key | startswith("olm.owner")))),
    ownerReferences: [.metadata.ownerReferences // [] | .[] | "\(.kind)/\(.name)\(if .controller then " (controller)" else "" end)"]}'
}

# assert_owner KIND NAME NAMESPACE CSV [CSV-NAMESPACE]: the object's olm.owner is CSV, and,
# when CSV-NAMESPACE is given, olm.owner.namespace and olm.owner.kind name it as a CSV's.
assert_owner() {
  local meta
  meta="$(owner "$1" "$2" "$3")"
  say "$1 $2${3:+ -n $3}: $meta"
  assert_equal "$(jq -r '.labels["olm.owner"] // ""' <<<"$meta")" "$4"
  if [ -n "${5:-}" ]; then
    assert_equal "$(jq -r '.labels["olm.owner.namespace"] // ""' <<<"$meta")" "$5"
    assert_equal "$(jq -r '.labels["olm.owner.kind"] // ""' <<<"$meta")" ClusterServiceVersion
  fi
}

# The policy backend's records (policy-host serve's log), but of the probes.
judged_all() { jq -c 'select(.name | test("probe$") | not)' "$BACKEND_LOG"; }
# mark: the backend log's and the witness log's lengths now (for since/witnessed_since).
mark() {
  MARK_BACKEND="$(wc -l <"$BACKEND_LOG")"
  MARK_WITNESS="$(wc -l <"$WITNESS_LOG")"
}
# since: the backend's records after the mark, but of the probes.
since() { tail -n +"$((MARK_BACKEND + 1))" "$BACKEND_LOG" | jq -c 'select(.name | test("probe$") | not)'; }
# witnessed_since [FILTER]: the witness's records after the mark (not dry runs) that FILTER selects.
witnessed_since() { tail -n +"$((MARK_WITNESS + 1))" "$WITNESS_LOG" | jq -c "select((.dryRun | not) and (${1:-true}))"; }
# refused_since: the policy's refusals after the mark.
refused_since() { since | jq -c 'select(.verdict.allowed == false)'; }
# counts: "N judged, M refused" after the mark.
counts() { since | jq -rs '"\(length) judged, \(map(select(.verdict.allowed == false)) | length) refused"'; }

# assert_none_refused: the policy refused no write since the mark (its log names the object).
assert_none_refused() {
  needs_request_log
  run refused_since
  assert_output ""
}

# verdicts: one line per write the policy judged since the mark: operation kind/name, the
# verdict.
verdicts() {
  since | jq -r '"\(.operation) \(.kind) \(.namespace)/\(.name): \(if .verdict.allowed then "allowed" else "REFUSED (\(.verdict.code))" end)"'
}

# moves: the witness's records since the mark of an UPDATE that changed olm.owner, one line each.
moves() {
  witnessed_since '.operation == "UPDATE" and (.object.labels["olm.owner"] // "") != (.oldObject.labels["olm.owner"] // "")' |
    jq -r '"\(.kind) \(.namespace)/\(.name): olm.owner \(.oldObject.labels["olm.owner"] // "-") -> \(.object.labels["olm.owner"] // "-") (by \(.user))"'
}

# remove_operator NAMESPACE PACKAGE CSV...: what a user does to uninstall (the Subscription,
# the CSVs), then what the garbage collector would delete, which does not run here: the
# InstallPlans and every object labelled olm.owner=CSV (as the admin: not judged, DELETE).
remove_operator() {
  local ns="$1" pkg="$2" csv kind
  shift 2
  kubectl delete subscription "$pkg" -n "$ns" --ignore-not-found --wait=false >/dev/null
  for csv in "$@"; do
    kubectl delete csv "$csv" -n "$ns" --ignore-not-found --wait=false >/dev/null
  done
  for csv in "$@"; do
    kubectl wait --for=delete "csv/$csv" -n "$ns" --timeout 60s >/dev/null 2>&1 || true
    for kind in deployments roles rolebindings serviceaccounts services; do
      kubectl delete "$kind" -n "$ns" -l "olm.owner=$csv" --ignore-not-found >/dev/null
    done
    for kind in clusterroles clusterrolebindings; do
      kubectl delete "$kind" -l "olm.owner=$csv" --ignore-not-found >/dev/null
    done
  done
  for csv in "$@"; do
    kubectl get installplans -n "$ns" -o json | jq -r --arg c "$csv" \
      '.items[] | select(.spec.clusterServiceVersionNames | index($c)) | .metadata.name' |
      xargs -r kubectl delete installplan -n "$ns" --ignore-not-found >/dev/null
  done
}
