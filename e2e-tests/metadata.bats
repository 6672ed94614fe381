#!/usr/bin/env bats
# The annotated module carries kwctl's metadata.

load common

@test "annotate stores metadata.yml, the protocol version and the README as usage" {
  run --separate-stderr "$POLICY_HOST" inspect "$POLICY"
  assert_success
  assert_line 'protocolVersion: v1'
  assert_line 'mutating: false'
  assert_line 'executionMode: kubewarden-wapc'
  assert_output --partial 'io.kubewarden.policy.usage: '
  assert_output --partial 'io.kubewarden.policy.title: single-owner'
}

@test "the metadata section is a wasm custom section of JSON" {
  run wasm-objdump -h "$POLICY"
  assert_success
  assert_output --partial '"io.kubewarden.metadata"'
}

@test "inspect refuses a module that was not annotated" {
  run --separate-stderr "$POLICY_HOST" inspect "$ROOT/policy.wasm"
  assert_failure
  [[ "$stderr" == *"has no Kubewarden metadata"* ]]
}

version_of() {
  case "$1" in
    cargo) sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1 ;;
    metadata) sed -n 's/^ *io.kubewarden.policy.version: *//p' "$ROOT/metadata.yml" ;;
    artifacthub) sed -n 's/^version: *//p' "$ROOT/artifacthub-pkg.yml" ;;
  esac
}

@test "the versions of Cargo.toml, metadata.yml, artifacthub-pkg.yml and the module agree" {
  local v
  v="$(version_of cargo)"
  [ -n "$v" ]
  assert_equal "$(version_of metadata)" "$v"
  assert_equal "$(version_of artifacthub)" "$v"
  run --separate-stderr "$POLICY_HOST" inspect "$POLICY"
  assert_line "  io.kubewarden.policy.version: $v"
}

@test "the committed artifacthub-pkg.yml is what metadata.yml generates" {
  run --separate-stderr "$POLICY_HOST" scaffold-artifacthub -m "$ROOT/metadata.yml" \
    --questions-path "$ROOT/questions-ui.yml" --previous "$ROOT/artifacthub-pkg.yml"
  assert_success
  diff -u "$ROOT/artifacthub-pkg.yml" <(echo "$output") || fail "artifacthub-pkg.yml is out of date: run make artifacthub-pkg.yml"
}

@test "questions-ui.yml asks for every setting, and only those" {
  local asked
  asked="$(sed -n 's/^ *variable: *//p' "$ROOT/questions-ui.yml" | sort | tr '\n' ' ')"
  assert_equal "$asked" "allowAdoption allowOrphaning clusterScopedOwnerKinds ownerAnnotations ownerKindLabel ownerLabels ownerNamespaceLabel "
}

@test "every deploy manifest checks out and its settings validate with the module" {
  local count=0
  for manifest in "$ROOT"/deploy/*.yaml; do
    count=$((count + 1))
    run --separate-stderr "$POLICY_HOST" verify-manifest "$manifest" "$POLICY"
    assert_success
    assert_equal "$(jq -r .mode <<<"$output")" protect
    assert_equal "$(jq -r .failurePolicy <<<"$output")" Fail
    # Only owned objects reach the policy.
    assert_equal "$(jq '(.objectSelector != null) or ([.matchConditions[]? | select(.name != "not-break-glass")] | length > 0)' <<<"$output")" true
    assert_equal "$(jq -r '[.matchConditions[]? | select(.name == "not-break-glass")] | length' <<<"$output")" 1
  done
  assert_equal "$count" 4
}

@test "a manifest with invalid settings is refused" {
  sed 's/ownerKindLabel: ""/ownerKindLabel: "bad key"/' "$ROOT/deploy/argocd.yaml" >"$BATS_TEST_TMPDIR/bad.yaml"
  run --separate-stderr "$POLICY_HOST" verify-manifest "$BATS_TEST_TMPDIR/bad.yaml" "$POLICY"
  assert_failure
  [[ "$stderr" == *'spec.settings are not valid: ownerKindLabel "bad key"'* ]] || fail "$stderr"
}
