#!/usr/bin/env bats
# No write the module refuses goes unsent: every shipped preset's selection (its rules,
# objectSelector and matchConditions, evaluated as the API server does: policy-host selects)
# against every write of the lifecycle corpus and every e2e fixture, each also judged by the
# built module with the preset's settings and every lookup failing (so that it refuses all it
# could refuse, whatever a cluster answers). A write the module refuses that the preset does
# not send would pass the API server unjudged: `selects --judge` prints it as a false skip and
# fails. The generated marker transitions are the property test of policy-host/src/proof.rs.

load common

setup_file() {
  export CORPUS="$BATS_FILE_TMPDIR/corpus"
  python3 "$ROOT/e2e-tests/corpus/corpus.py" build "$CORPUS"
}

# The requests: every corpus write, and every fixture but the hostile ones (malformed-*: an
# object no API server sends, whose metadata fails its validation before admission).
requests() {
  local f
  for f in "$CORPUS"/*/*.json "$FIXTURES"/*.json; do
    case "$(basename "$f")" in malformed-*) continue ;; esac
    printf '%s\n' -r "$f"
  done
}

# no_false_skips PRESET
no_false_skips() {
  local args
  mapfile -t args < <(requests)
  [ "${#args[@]}" -gt 200 ] || fail "only ${#args[@]} arguments: the corpus did not build"
  run --separate-stderr "$POLICY_HOST" selects "$ROOT/$1" --judge "$POLICY" "${args[@]}"
  if [ "$status" -ne 0 ]; then
    grep '^false skip' <<<"$output" || true
    fail "$1: $stderr"
  fi
  local sent unsent
  sent="$(grep -c '^sent ' <<<"$output" || true)"
  unsent="$(grep -c '^not sent ' <<<"$output" || true)"
  echo "$1: $((${#args[@]} / 2)) writes, $sent sent, $unsent not sent, none refused among those" >&3
}

@test "skips: deploy/olm-v1.yaml" { no_false_skips deploy/olm-v1.yaml; }
@test "skips: deploy/olm-v0.yaml" { no_false_skips deploy/olm-v0.yaml; }
@test "skips: deploy/helm.yaml" { no_false_skips deploy/helm.yaml; }
@test "skips: deploy/argocd.yaml" { no_false_skips deploy/argocd.yaml; }
@test "skips: deploy/argocd-label-tracking.yaml" { no_false_skips deploy/argocd-label-tracking.yaml; }
@test "skips: deploy/flux.yaml" { no_false_skips deploy/flux.yaml; }
@test "skips: deploy/applyset.yaml" { no_false_skips deploy/applyset.yaml; }
@test "skips: deploy/kapp.yaml" { no_false_skips deploy/kapp.yaml; }
@test "skips: deploy/timoni.yaml" { no_false_skips deploy/timoni.yaml; }
@test "skips: deploy/crossplane.yaml" { no_false_skips deploy/crossplane.yaml; }
@test "skips: deploy/all-tools.yaml" { no_false_skips deploy/all-tools.yaml; }
@test "skips: deploy/identity/olm-v1-operator.yaml" { no_false_skips deploy/identity/olm-v1-operator.yaml; }
@test "skips: deploy/identity/flux-tenants.yaml" { no_false_skips deploy/identity/flux-tenants.yaml; }
@test "skips: deploy/identity/argocd-impersonation.yaml" { no_false_skips deploy/identity/argocd-impersonation.yaml; }
@test "skips: deploy/identity/helm-per-install.yaml" { no_false_skips deploy/identity/helm-per-install.yaml; }
@test "skips: deploy/identity/helm-per-install-stamp.yaml" { no_false_skips deploy/identity/helm-per-install-stamp.yaml; }

@test "every preset in deploy/ has a test in this file" {
  local m
  while read -r m; do
    grep -qF "no_false_skips $m;" "$BATS_TEST_FILENAME" || fail "$m has no test here"
  done < <(cd "$ROOT" && find deploy -name '*.yaml' ! -path 'deploy/rbac/*' | sort)
}

@test "selects --judge finds a false skip: a preset whose selection misses a key its settings read" {
  # deploy/flux.yaml as it was before its condition was generated: selected by one of its two
  # owner keys. A write that changes only the other key's value is refused and was not sent.
  local manifest="$BATS_TEST_TMPDIR/flux-by-one-key.yaml"
  python3 - "$ROOT/deploy/flux.yaml" "$manifest" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc["spec"]["objectSelector"] = {"matchExpressions": [
    {"key": "kustomize.toolkit.fluxcd.io/name", "operator": "Exists"}]}
doc["spec"]["matchConditions"] = [c for c in doc["spec"]["matchConditions"] if c["name"] != "ownership-change"]
yaml.safe_dump(doc, open(sys.argv[2], "w"))
PY
  local request="$BATS_TEST_TMPDIR/namespace-label-change.json"
  jq -n '{uid: "u", kind: {group: "", version: "v1", kind: "ConfigMap"},
    resource: {group: "", version: "v1", resource: "configmaps"}, name: "x", namespace: "apps",
    operation: "UPDATE", userInfo: {username: "alice"},
    object: {metadata: {name: "x", namespace: "apps", labels: {"kustomize.toolkit.fluxcd.io/namespace": "b"}}},
    oldObject: {metadata: {name: "x", namespace: "apps", labels: {"kustomize.toolkit.fluxcd.io/namespace": "a"}}}}' >"$request"
  run --separate-stderr "$POLICY_HOST" selects "$manifest" --judge "$POLICY" -r "$request"
  assert_failure
  assert_line --partial "false skip $request: ConfigMap \"x\" in namespace \"apps\" is owned by"
  run --separate-stderr "$POLICY_HOST" selects "$ROOT/deploy/flux.yaml" --judge "$POLICY" -r "$request"
  assert_success
  assert_output "sent $request"
}
