#!/usr/bin/env bats
# The identity preset deploy/identity/olm-v1-operator.yaml with the writer the real
# operator-controller is (scripts/cluster-olm.sh brings a cluster up with it alone). Two kinds
# are in use, and the preset binds both:
# - OpenShift's downstream, and upstream before v1.11.0, write an extension's objects with a
#   TokenRequest token of the service account the extension names (spec.serviceAccount.name in
#   spec.namespace): the AdmissionReview's user is system:serviceaccount:<ns>:<name>, and the
#   policy looks the ClusterExtension up (the policy server, here policy-host serve with the
#   cluster's admin kubeconfig, reads ClusterExtensions) to find that installer;
# - upstream from v1.11.0 (PR 2770) writes as its own service account.
# The witness webhook records who wrote what; the suite asserts one of the two wrote every
# object, the same one throughout, and says which.

load common

# The writers the preset binds to every extension: its installer, or operator-controller's own
# account (in olmv1-system here, as upstream installs it).
INSTALLER=system:serviceaccount:ident-system:ident-installer
OWN_ACCOUNT=system:serviceaccount:olmv1-system:operator-controller-controller-manager

# The boxcutter applier's own records of an extension, its revisions (ClusterObjectSets and
# their Secrets in the system namespace, labelled with the owner too), which operator-controller
# writes as its own account whatever the extension's installer (applier/boxcutter.go).
REVISION_RECORDS='.kind == "ClusterObjectSet" or (.kind == "Secret" and .namespace == "olmv1-system")'

# assert_one_bound_writer RECORDS: the witness records of the extension's bundle objects name
# one writer, a bound one (its name in the run's records, OLM_RUN_DIR/identity-writer.txt, and
# compared with the writer an earlier test saw); boxcutter's revisions, operator-controller's
# own account.
assert_one_bound_writer() {
  local writer revisions
  revisions="$(jq -s -r "map(select($REVISION_RECORDS) | .user) | unique | join(\",\")" <<<"$1")"
  [ -z "$revisions" ] || assert_equal "$revisions" "$OWN_ACCOUNT"
  writer="$(jq -s -r "map(select(($REVISION_RECORDS) | not) | .user) | unique | join(\",\")" <<<"$1")"
  case "$writer" in
    "$INSTALLER") say "the writer: the extension's installer ($writer): OpenShift's downstream, or upstream before v1.11.0" ;;
    "$OWN_ACCOUNT") say "the writer: operator-controller's own account ($writer): upstream v1.11.0 or later" ;;
    *) fail "the extension's objects were written by '$writer', not by one writer the preset binds ($INSTALLER or $OWN_ACCOUNT)" ;;
  esac
  if [ -f "$OLM_RUN_DIR/identity-writer.txt" ]; then
    assert_equal "$writer" "$(cat "$OLM_RUN_DIR/identity-writer.txt")"
  else
    record identity-writer.txt "$writer"
  fi
}

setup_file() {
  installer ident-system ident-installer
  installer other-system other-installer
  # alice may edit the Deployments of ident-system: RBAC lets her, the policy does not. (A
  # Role of its own: the aggregated ClusterRole `edit` has no rules without
  # kube-controller-manager's aggregation controller.)
  ensure role deployment-editor --verb get,list,watch,update,patch --resource deployments -n ident-system
  ensure rolebinding alice-deployment-editor --role deployment-editor --user alice -n ident-system
}

@test "$OLM_PRESET: operator-controller installs widgets-operator 1.0.0 (Installed=True), every write of its objects by one writer the preset binds (the extension's installer, or operator-controller's own account)" {
  apply "$(extension widgets widgets-operator 1.0.0 ident-system ident-installer)"
  assert_success
  wait_installed widgets 1.0.0
  say "widgets: $(condition widgets Installed | jq -c '{status, reason, message}')"
  assert_owned customresourcedefinition "$CRD" "" widgets ident-system
  assert_owned deployment widgets-operator-controller-manager ident-system widgets ident-system
  # Who wrote the extension's objects (the witness sees each write of an owned object).
  run witness '.object.labels["olm.operatorframework.io/owner-name"] == "widgets" and (.dryRun | not)'
  refute_output ""
  say "writers of the extension's objects: $(jq -s -c 'group_by(.user) | map({user: .[0].user, writes: (map(.operation + " " + .kind) | unique)})' <<<"$output")"
  assert_one_bound_writer "$output"
  needs_request_log
  run refused
  assert_output ""
}

@test "$OLM_PRESET: the upgrade to 1.1.0 is written by the same writer and accepted" {
  run kubectl patch clusterextension widgets --type merge -p '{"spec":{"source":{"catalog":{"version":"1.1.0"}}}}'
  assert_success
  wait_installed widgets 1.1.0
  say "widgets: $(condition widgets Installed | jq -c '{status, reason, message}')"
  run witness '.operation == "UPDATE" and .object.labels["olm.operatorframework.io/owner-name"] == "widgets" and (.dryRun | not)'
  refute_output ""
  assert_one_bound_writer "$output"
  needs_request_log
  run refused
  assert_output ""
}

@test "$OLM_PRESET: a human (alice, whom RBAC lets edit the namespace) changing the extension's Deployment is refused, and nothing is stored" {
  local before
  before="$(kubectl get deployment widgets-operator-controller-manager -n ident-system -o json | jq -c '{labels: .metadata.labels, rv: .metadata.resourceVersion}')"
  # RBAC allows it: the refusal below is the policy's.
  run kubectl auth can-i patch deployments -n ident-system --as alice
  assert_output yes
  run --separate-stderr kubectl --as alice -n ident-system label deployment widgets-operator-controller-manager tuned-by=alice
  assert_forbidden "$OLM_POLICY_WEBHOOK" widgets-operator-controller-manager
  say "alice: $stderr"
  run --separate-stderr kubectl --as alice -n ident-system patch deployment widgets-operator-controller-manager --type json \
    -p '[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "registry.example/alice:latest"}]'
  assert_forbidden "$OLM_POLICY_WEBHOOK" widgets-operator-controller-manager
  assert_equal "$(kubectl get deployment widgets-operator-controller-manager -n ident-system -o json | jq -c '{labels: .metadata.labels, rv: .metadata.resourceVersion}')" "$before"
}

@test "$OLM_PRESET: another extension's installer cannot write this extension's CRD" {
  run --separate-stderr kubectl --as system:serviceaccount:other-system:other-installer label crd "$CRD" tuned-by=other --overwrite
  assert_forbidden "$OLM_POLICY_WEBHOOK" "$CRD"
  say "other-installer: $stderr"
  assert_owned customresourcedefinition "$CRD" "" widgets ident-system
}
