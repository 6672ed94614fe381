# Shared helpers of the suites that run the real OLM v1 (operator-controller and catalogd)
# against the policy through a real API server. scripts/cluster-olm.sh brings the cluster, OLM
# v1, the catalog and the witness webhook up for each suite and sets:
#   OLM_RUN_DIR (records every suite writes), OLM_SUITE, OLM_SUITE_DIR (its logs), OLM_PRESET
#   (the policy's manifest), OLM_POLICY_WEBHOOK (its webhook's name), WITNESS_LOG (every write of an
#   owned object, with its writer: e2e-tests/cluster-olm/witness-webhook.py), OLM_RACE_MODE,
#   OLM_RACE_ROUNDS.
load ../cluster/common

[ -n "${OLM_SUITE_DIR:-}" ] || {
  echo "run through scripts/cluster-olm.sh (make cluster-olm): it brings OLM v1 up" >&2
  exit 1
}

CRD=widgets.example.com
# The applier operator-controller installs with: boxcutter with the BoxcutterRuntime feature
# gate (OPERATOR_CONTROLLER_FLAGS), else Helm's (the default).
APPLIER=helm
[[ "${OPERATOR_CONTROLLER_FLAGS:-}" == *BoxcutterRuntime=true* ]] && APPLIER=boxcutter
# How long operator-controller may take to install or upgrade an extension (seconds).
INSTALL_TIMEOUT="${OLM_INSTALL_TIMEOUT:-120}"

# say TEXT...: a line in the test's output, passed or failed (bats prints fd 3 as it comes).
say() { echo "# $*" >&3; }

# extension NAME PACKAGE VERSION NAMESPACE SERVICE-ACCOUNT: a ClusterExtension manifest
# (olm.operatorframework.io/v1), installed from the catalog.
extension() {
  jq -n --arg n "$1" --arg p "$2" --arg v "$3" --arg ns "$4" --arg sa "$5" '{
    apiVersion: "olm.operatorframework.io/v1", kind: "ClusterExtension", metadata: {name: $n},
    spec: {namespace: $ns, serviceAccount: {name: $sa},
      source: {sourceType: "Catalog", catalog: {packageName: $p, version: $v}}}}'
}

# installer NAMESPACE SERVICE-ACCOUNT: the namespace an extension installs into and the
# service account it names, bound to cluster-admin (for simplicity).
installer() {
  ensure namespace "$1"
  ensure serviceaccount "$2" -n "$1"
  ensure clusterrolebinding "$1-$2" --clusterrole cluster-admin --serviceaccount "$1:$2"
}

# condition NAME TYPE: the extension's condition TYPE, as JSON ({} when absent).
condition() {
  kubectl get clusterextension "$1" -o json 2>/dev/null |
    jq -c --arg t "$2" '[.status.conditions // [] | .[] | select(.type == $t)] | first // {}'
}

# installed_version NAME: status.install.bundle.version, when Installed=True.
installed_version() {
  kubectl get clusterextension "$1" -o json 2>/dev/null | jq -r '
    if ([.status.conditions // [] | .[] | select(.type == "Installed" and .status == "True")] | length) > 0
    then .status.install.bundle.version // "" else "" end'
}

# conditions NAME: the extension's conditions, one line each (for failure output).
conditions() {
  kubectl get clusterextension "$1" -o json 2>/dev/null |
    jq -r '.status.conditions // [] | .[] | "\(.type)=\(.status) reason=\(.reason) message=\(.message)"'
}

# wait_installed NAME VERSION [SECONDS]: until the extension reports Installed=True at
# VERSION; on a timeout, its conditions and the end of operator-controller's log, and failure.
wait_installed() {
  local name="$1" version="$2" deadline=$((SECONDS + ${3:-$INSTALL_TIMEOUT}))
  until [ "$(installed_version "$name")" = "$version" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "ClusterExtension $name is not Installed=True at $version after ${3:-$INSTALL_TIMEOUT} s:"
      conditions "$name"
      echo "--- operator-controller-1:"
      tail -n 30 "$OLM_SUITE_DIR/logs/operator-controller-1.log"
      return 1
    fi
    sleep 0.5
  done
}

# wait_retrying NAME [SECONDS]: until the extension reports Progressing=True, reason Retrying,
# with a message (a failed install that operator-controller retries with backoff).
wait_retrying() {
  local name="$1" deadline=$((SECONDS + ${2:-$INSTALL_TIMEOUT}))
  until [ "$(condition "$name" Progressing | jq -r 'select(.status == "True" and .reason == "Retrying" and (.message // "") != "") | "yes"')" = yes ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "ClusterExtension $name never reported Progressing=True reason Retrying:"
      conditions "$name"
      return 1
    fi
    sleep 0.5
  done
}

# owner_metadata KIND NAME [NAMESPACE]: the owner labels, Helm's annotations, boxcutter's
# revision annotation and the owner references of a stored object, as one JSON line.
owner_metadata() {
  kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -c '{
    labels: (.metadata.labels // {} | with_entries(select(.key | startswith("olm.operatorframework.io/owner")))),
    helm: (.metadata.annotations // {} | with_entries(select(.key | startswith("meta.helm.sh/")))),
    revision: .metadata.annotations["olm.operatorframework.io/revision"],
    ownerReferences: [.metadata.ownerReferences // [] | .[] | "\(.kind)/\(.name)\(if .controller then " (controller)" else "" end)"]}'
}

# assert_owned KIND NAME NAMESPACE EXTENSION EXTENSION-NAMESPACE [REVISION]: the object
# carries OLM v1's owner labels naming the extension, and what the applier adds: the Helm
# applier installs an extension as a Helm release named after it, in spec.namespace (Helm's
# release annotations, a controller reference to the extension); boxcutter as revisions
# (ClusterObjectSet <extension>-<n>: the revision annotation n, REVISION when given, and a
# controller reference to that set).
assert_owned() {
  local meta revision
  meta="$(owner_metadata "$1" "$2" "$3")"
  say "$1 $2${3:+ -n $3}: $meta"
  assert_equal "$(jq -c .labels <<<"$meta")" \
    "{\"olm.operatorframework.io/owner-kind\":\"ClusterExtension\",\"olm.operatorframework.io/owner-name\":\"$4\"}"
  case "$APPLIER" in
    helm)
      assert_equal "$(jq -c .helm <<<"$meta")" \
        "{\"meta.helm.sh/release-name\":\"$4\",\"meta.helm.sh/release-namespace\":\"$5\"}"
      assert_equal "$(jq -c .ownerReferences <<<"$meta")" "[\"ClusterExtension/$4 (controller)\"]" ;;
    boxcutter)
      revision="$(jq -r '.revision // ""' <<<"$meta")"
      [[ "$revision" =~ ^[1-9][0-9]*$ ]] || fail "no revision annotation of boxcutter's: $meta"
      [ -z "${6:-}" ] || assert_equal "$revision" "$6"
      assert_equal "$(jq -c '[.ownerReferences[] | select(endswith("(controller)"))]' <<<"$meta")" \
        "[\"ClusterObjectSet/$4-$revision (controller)\"]" ;;
  esac
}

# witness QUERY: the witness webhook's records (one JSON line per write of an owned object)
# that the jq filter QUERY selects.
witness() { jq -c "select($1)" "$WITNESS_LOG"; }

# refused: the policy backend's refusals, but of the probes control-plane/cluster.sh and
# scripts/cluster-olm.sh send (dry runs that carry several tools' owner keys at once).
refused() { jq -c 'select(.verdict.allowed == false and (.name | test("probe$") | not))' "$BACKEND_LOG"; }

# judged NAME OPERATION: the policy backend's records of OPERATION on objects named NAME.
judged() { jq -c --arg n "$1" --arg o "$2" 'select(.name == $n and .operation == $o)' "$BACKEND_LOG"; }

# record FILE TEXT: TEXT into the run's records (OLM_RUN_DIR/FILE).
record() { printf '%s\n' "$2" >"$OLM_RUN_DIR/$1"; }

# upgrade_widgets [REVISION]: the extension widgets (widgets-operator 1.0.0, in widgets-system)
# upgraded to 1.1.0 by spec.source.catalog.version: Installed=True at 1.1.0, the CRD has
# 1.1.0's field, the owner is unchanged (with boxcutter, at REVISION when given), and the
# policy refused nothing. The API server sends the policy only the writes that change an owner
# marker (the preset's generated matchConditions): every UPDATE of the CRD the witness saw
# change its owner labels or controller reference (boxcutter's move to the new revision's
# ClusterObjectSet) reached the policy; Helm's same-owner UPDATEs need not.
upgrade_widgets() {
  run kubectl patch clusterextension widgets --type merge -p '{"spec":{"source":{"catalog":{"version":"1.1.0"}}}}'
  assert_success
  wait_installed widgets 1.1.0
  say "widgets: $(condition widgets Installed); status.install.bundle: $(kubectl get clusterextension widgets -o jsonpath='{.status.install.bundle}')"
  assert_equal "$(kubectl get crd "$CRD" -o json | jq -r '.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties | has("color")')" true
  assert_equal "$(kubectl get crd "$CRD" -o json | jq -r '[.spec.versions[0].additionalPrinterColumns[].name] | join(",")')" Size,Color
  assert_owned customresourcedefinition "$CRD" "" widgets widgets-system "$1"
  assert_owned deployment widgets-operator-controller-manager widgets-system widgets widgets-system "$1"
  needs_request_log
  local written changed sent
  written="$(witness ".name == \"$CRD\" and .operation == \"UPDATE\"" | wc -l)"
  changed="$(witness ".name == \"$CRD\" and .operation == \"UPDATE\" and (.object.labels != .oldObject.labels or .object.controller != .oldObject.controller)" | wc -l)"
  sent="$(judged "$CRD" UPDATE | wc -l)"
  say "the CRD: $written UPDATEs written (dry runs included), $changed of them changed an owner marker, $sent reached the policy"
  [ "$written" -gt 0 ] || fail "the witness saw no UPDATE of the CRD"
  [ "$sent" -ge "$changed" ] || fail "$changed UPDATEs of the CRD changed an owner marker, but only $sent reached the policy"
  run judged "$CRD" UPDATE
  refute_output --partial '"allowed":false'
  run refused
  assert_output ""
}

# second_extension_refused [REVISION]: a second extension, gadgets (gadgets-operator 1.1.0, in
# gadgets-system), shipping the CRD of widgets-operator 1.1.0 is not installed: Progressing=True
# reason Retrying, with Helm's ownership check's message or the policy's (recorded in
# OLM_RUN_DIR/second-extension-OLM_SUITE.txt), and the CRD stays widgets' (at REVISION).
second_extension_refused() {
  local progressing message source file
  # 1.1.0 ships the CRD as widgets-operator 1.1.0 does, so OLM's CRD upgrade-safety check passes
  # it: what stops it is an ownership check.
  apply "$(extension gadgets gadgets-operator 1.1.0 gadgets-system gadgets-installer)"
  assert_success
  wait_retrying gadgets
  # operator-controller retries with backoff: the condition holds, and it never installs.
  sleep 5
  progressing="$(condition gadgets Progressing)"
  assert_equal "$(jq -r '.status + " " + .reason' <<<"$progressing")" "True Retrying"
  refute [ "$(jq -r .status <<<"$(condition gadgets Installed)")" = True ]
  message="$(jq -r .message <<<"$progressing")"
  if [[ "$message" == *"admission webhook \"$OLM_POLICY_WEBHOOK\" denied the request"* ]]; then
    source="the policy ($OLM_POLICY_WEBHOOK)"
  elif [[ "$message" == *"failed to get release state using server-side dry-run: CustomResourceDefinition '$CRD' already exists in namespace '' and cannot be managed by operator-controller"* ]] ||
    [[ "$message" == *"exists and cannot be imported into the current release"* ]]; then
    # Helm's install refuses an existing object whose meta.helm.sh annotations name another
    # release ("... exists and cannot be imported into the current release: invalid ownership
    # metadata"), in the dry run operator-controller's Helm applier starts with, and
    # operator-controller rewrites that message (internal/operator-controller/action/error).
    source="Helm's own ownership check (in operator-controller's Helm applier, which rewrites Helm's message), before any write: the policy saw none"
  else
    fail "neither Helm's ownership check nor the policy: $message"
  fi
  file="second-extension-${OLM_SUITE}.txt"
  record "$file" "$(printf 'preset: %s\nsource: %s\nInstalled: %s\nProgressing: %s\nmessage:\n%s' \
    "$OLM_PRESET" "$source" "$(condition gadgets Installed)" "$(jq -c 'del(.message)' <<<"$progressing")" "$message")"
  say "gadgets Installed: $(condition gadgets Installed | jq -c '{status, reason}')"
  say "gadgets Progressing: $(jq -c '{status, reason}' <<<"$progressing")"
  say "the message users see ($source), in ${OLM_RUN_DIR#"$ROOT"/}/$file:"
  say "$message"
  # The CRD is still the first extension's, and no write of the second one's reached it.
  assert_owned customresourcedefinition "$CRD" "" widgets widgets-system "$1"
  run witness ".name == \"$CRD\" and .object.labels[\"olm.operatorframework.io/owner-name\"] == \"gadgets\""
  if [[ "$source" == Helm* ]]; then
    assert_output ""
  fi
}
