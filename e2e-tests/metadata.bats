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

# kwctl annotate 1.36 compares the host capabilities the module calls with metadata.yml's
# hostCapabilities and warns of each difference (1.31 does not look).
@test "annotate finds in the module exactly the host capabilities metadata.yml declares" {
  local annotators=("$POLICY_HOST")
  [[ "$(basename "$KWCTL")" == kwctl ]] && annotators+=("$KWCTL")
  for annotator in "${annotators[@]}"; do
    run --separate-stderr "$annotator" annotate -m "$ROOT/metadata.yml" -u "$ROOT/README.md" \
      -o "$BATS_TEST_TMPDIR/annotated.wasm" "$ROOT/policy.wasm"
    assert_success
    [[ "$stderr" != *"host capabilities used by the policy but not declared"* &&
      "$stderr" != *"host capabilities declared in metadata but not detected"* ]] || fail "$annotator: $stderr"
  done
  run --separate-stderr "$POLICY_HOST" inspect "$POLICY"
  assert_line '- kubernetes/get_resource'
  assert_line '- kubernetes/list_resources_all'
  # Without the declaration, and with one the module does not call: policy-host warns as kwctl 1.36 does.
  sed '/^hostCapabilities:$/,/^  - kubernetes\/list_resources_all$/d' "$ROOT/metadata.yml" >"$BATS_TEST_TMPDIR/undeclared.yml"
  ! grep -q hostCapabilities "$BATS_TEST_TMPDIR/undeclared.yml" || fail "sed left the declaration"
  run --separate-stderr "$POLICY_HOST" annotate -m "$BATS_TEST_TMPDIR/undeclared.yml" -o "$BATS_TEST_TMPDIR/a.wasm" "$ROOT/policy.wasm"
  assert_success
  [[ "$stderr" == *"host capabilities used by the policy but not declared in metadata: kubernetes/get_resource, kubernetes/list_resources_all"* ]] || fail "$stderr"
  sed 's|^  - kubernetes/list_resources_all$|&\n  - oci/v1/verify|' "$ROOT/metadata.yml" >"$BATS_TEST_TMPDIR/extra.yml"
  run --separate-stderr "$POLICY_HOST" annotate -m "$BATS_TEST_TMPDIR/extra.yml" -o "$BATS_TEST_TMPDIR/a.wasm" "$ROOT/policy.wasm"
  assert_success
  [[ "$stderr" == *"host capabilities declared in metadata but not detected in the policy: oci/v1/verify"* ]] || fail "$stderr"
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
  run --separate-stderr "$POLICY_HOST" scaffold artifacthub -m "$ROOT/metadata.yml" \
    -q "$ROOT/questions-ui.yml" --previous "$ROOT/artifacthub-pkg.yml"
  assert_success
  diff -u "$ROOT/artifacthub-pkg.yml" <(echo "$output") || fail "artifacthub-pkg.yml is out of date: run make artifacthub-pkg.yml"
}

# The release workflow runs `kwctl scaffold artifacthub`: with kwctl the output must be the
# committed file but for the header comment and createdAt; with policy-host, the same.
@test "scaffold artifacthub (kwctl or policy-host, same flags) writes the committed file but for header and createdAt" {
  local scaffold=("$POLICY_HOST" scaffold artifacthub)
  [[ "$(basename "$KWCTL")" == kwctl ]] && scaffold=("$KWCTL" scaffold artifacthub)
  run --separate-stderr "${scaffold[@]}" -m "$ROOT/metadata.yml" -q "$ROOT/questions-ui.yml" \
    --output "$BATS_TEST_TMPDIR/pkg.yml"
  assert_success
  # kwctl before 1.36 points its install line at kwctl's repository; 1.36 at the docs.
  strip() {
    grep -v -e '^#' -e '^createdAt: ' "$1" |
      sed 's|\[`kwctl`\](https://github.com/kubewarden/kwctl)|[kwctl](https://docs.kubewarden.io/howtos/install-kwctl)|'
  }
  diff -u <(strip "$ROOT/artifacthub-pkg.yml") <(strip "$BATS_TEST_TMPDIR/pkg.yml") || fail "${scaffold[0]} writes another package"
  grep -q '^  email: ' "$BATS_TEST_TMPDIR/pkg.yml" || fail "no maintainer email"
}

@test "scaffold artifacthub refuses an author that is not csv of \"name <email>\", with kwctl's message" {
  sed 's/^\(  io.kubewarden.policy.author:\).*/\1 single-owner-policy developers/' "$ROOT/metadata.yml" >"$BATS_TEST_TMPDIR/metadata.yml"
  run --separate-stderr "$POLICY_HOST" scaffold artifacthub -m "$BATS_TEST_TMPDIR/metadata.yml"
  assert_failure
  [[ "$stderr" == *'annotation "io.kubewarden.policy.author" in policy metadata is malformed, must be csv values of "name <email>"'* ]] || fail "$stderr"
}

@test "questions-ui.yml asks for every setting, and only those (the module's own list)" {
  local asked known
  asked="$(sed -n 's/^    variable: *//p' "$ROOT/questions-ui.yml" | sort | tr '\n' ' ')"
  # The module names every field it knows when it refuses an unknown one.
  printf '{"notASetting": 1}' >"$BATS_TEST_TMPDIR/settings.json"
  run --separate-stderr "$POLICY_HOST" call validate_settings -p "$BATS_TEST_TMPDIR/settings.json" "$POLICY"
  assert_success
  known="$(jq -r .message <<<"$output" | sed 's/.*expected one of //; s/ at line.*//' | tr -d '`' | tr ',' '\n' | tr -d ' ' | sort | tr '\n' ' ')"
  [ -n "$known" ] || fail "no field list in $output"
  assert_equal "$asked" "$known"
  # And the README documents each.
  for field in $known; do
    grep -q "^| \`$field\` |" "$ROOT/README.md" || fail "README.md has no settings row for $field"
  done
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
    # No bindings: the audit scanner's reports are the policy's answers.
    assert_equal "$(jq -r .backgroundAudit <<<"$output")" true
  done
  assert_equal "$count" 11
}

@test "verify-manifest refuses bindings with the background audit on, saying why" {
  local preset="$ROOT/deploy/identity/flux-tenants.yaml"
  sed 's/^  backgroundAudit: false$/  backgroundAudit: true/' "$preset" >"$BATS_TEST_TMPDIR/audited.yaml"
  sed '/^  backgroundAudit: false$/d' "$preset" >"$BATS_TEST_TMPDIR/default.yaml"
  # And with the bindings in a scheme of the several-tools form.
  sed 's/^  backgroundAudit: false$/  backgroundAudit: true/' "$ROOT/deploy/all-tools.yaml" >"$BATS_TEST_TMPDIR/schemes.yaml"
  sed -i 's|^      - name: argocd$|      - name: argocd\n        bindings: [{writers: {users: [alice]}, owner: {argocd.argoproj.io/tracking-id: "shop*"}}]|' "$BATS_TEST_TMPDIR/schemes.yaml"
  local manifest
  for manifest in audited default schemes; do
    run --separate-stderr "$POLICY_HOST" verify-manifest "$BATS_TEST_TMPDIR/$manifest.yaml" "$POLICY"
    assert_failure
    [[ "$stderr" == *"spec.backgroundAudit must be false with bindings: the audit scanner sends every object as written by one fixed identity"* ]] ||
      fail "$manifest: $stderr"
  done
}

@test "the real-Helm race's policy has deploy/helm.yaml's settings and matchConditions" {
  local preset race
  preset="$("$POLICY_HOST" verify-manifest "$ROOT/deploy/helm.yaml" "$POLICY")"
  race="$("$POLICY_HOST" verify-manifest "$ROOT/e2e-tests/cluster/race-helm-policy.yaml" "$POLICY")"
  assert_equal "$(jq -c .settings <<<"$race")" "$(jq -c .settings <<<"$preset")"
  assert_equal "$(jq -c '.matchConditions | map(select(.name == "ownership-change"))' <<<"$race")" \
    "$(jq -c '.matchConditions | map(select(.name == "ownership-change"))' <<<"$preset")"
  assert_equal "$(jq -c .rules <<<"$race")" "$(jq -c .rules <<<"$preset")"
}

# sends MANIFEST FIXTURE...: the API server sends each request to the policy (rules,
# objectSelector, matchConditions); sends_not: it does not.
sends() {
  local manifest="$ROOT/deploy/$1" fixture
  shift
  for fixture in "$@"; do
    run --separate-stderr "$POLICY_HOST" selects "$manifest" -r "$FIXTURES/$fixture"
    assert_success
    [[ "$output" == "sent "* ]] || fail "$manifest should send $fixture: $output"
  done
}
sends_not() {
  local manifest="$ROOT/deploy/$1" fixture
  shift
  for fixture in "$@"; do
    run --separate-stderr "$POLICY_HOST" selects "$manifest" -r "$FIXTURES/$fixture"
    assert_success
    [[ "$output" == "not sent "* ]] || fail "$manifest should not send $fixture: $output"
  done
}

@test "each manifest sends only its tool's ownership changes, and nothing from the break-glass group" {
  sends olm-v1.yaml crd-owner-change.json crd-adopt.json crd-orphan.json clusterrole-create-namespaced-owner.json \
    crd-status-owner-change.json crd-owner-kind-added.json deployment-revision-2-after-3.json
  # An ordinary write of an owned object (its markers as stored) stays in the API server.
  sends_not olm-v1.yaml crd-same-owner-update.json crd-unowned-update.json clusterrole-helm-release-change.json \
    deployment-argocd-app-change.json crd-delete.json
  sends helm.yaml clusterrole-helm-release-change.json clusterrole-helm-handover.json
  sends_not helm.yaml clusterrole-helm-same-release.json crd-owner-change.json deployment-argocd-app-change.json \
    deployment-flux-image-update.json
  sends argocd.yaml deployment-argocd-app-change.json deployment-argocd-instance-change.json
  sends_not argocd.yaml deployment-argocd-same-app.json deployment-chart-untracked.json deployment-argocd-break-glass.json \
    crd-owner-change.json clusterrole-helm-release-change.json
  sends argocd-label-tracking.yaml deployment-argocd-instance-change.json
  sends_not argocd-label-tracking.yaml deployment-chart-untracked.json crd-owner-change.json deployment-argocd-break-glass.json
  sends flux.yaml deployment-flux-kustomization-change.json
  sends_not flux.yaml deployment-flux-image-update.json crd-owner-change.json deployment-argocd-app-change.json
}

@test "every identity preset checks out: the validating ones route DELETE, the stamping one mutates" {
  local count=0 manifest spec
  for manifest in "$ROOT"/deploy/identity/*.yaml; do
    count=$((count + 1))
    run --separate-stderr "$POLICY_HOST" verify-manifest "$manifest" "$POLICY"
    assert_success
    spec="$output"
    assert_equal "$(jq -r .failurePolicy <<<"$spec")" Fail
    assert_equal "$(jq '.settings.bindings | length > 0' <<<"$spec")" true
    assert_equal "$(jq -r .backgroundAudit <<<"$spec")" false
    if [ "$(jq -r .mutating <<<"$spec")" = true ]; then
      assert_equal "$(jq -r .settings.stamp <<<"$spec")" true
      assert_equal "$(jq -c '[.rules[].operations[]] | unique' <<<"$spec")" '["CREATE","UPDATE"]'
    else
      assert_equal "$(jq -c '[.rules[].operations[]] | unique' <<<"$spec")" '["CREATE","DELETE","UPDATE"]'
      assert_equal "$(jq -r '[.matchConditions[]? | select(.name == "not-break-glass")] | length' <<<"$spec")" 1
    fi
    # Only owned objects, or only the bound writers' writes, reach the policy.
    assert_equal "$(jq '(.objectSelector != null) or ([.matchConditions[]? | select(.name != "not-break-glass")] | length > 0)' <<<"$spec")" true
  done
  assert_equal "$count" 5
}

@test "each identity preset sends its owners' writes, DELETE included, and the stamping one only its writers'" {
  sends identity/flux-tenants.yaml configmap-tenant-create-for-other.json configmap-tenant-edit-by-human.json configmap-tenant-delete-by-other.json
  sends_not identity/flux-tenants.yaml crd-edit-by-hook.json deployment-argocd-app-change.json
  sends identity/olm-v1-operator.yaml crd-edit-by-hook.json crd-delete-by-hook.json
  sends_not identity/olm-v1-operator.yaml configmap-tenant-delete-by-other.json
  sends identity/helm-per-install.yaml configmap-release-edit-by-other-release.json clusterrole-helm-release-change.json
  sends_not identity/helm-per-install.yaml configmap-tenant-edit-by-human.json
  sends identity/argocd-impersonation.yaml deployment-argocd-app-change.json
  sends identity/helm-per-install-stamp.yaml job-hook-create-by-release.json
  sends_not identity/helm-per-install-stamp.yaml crd-create-ext-a.json crd-delete-by-hook.json configmap-tenant-create-own.json
}

@test "a manifest with invalid settings is refused" {
  sed 's/ownerKindLabel: ""/ownerKindLabel: "bad key"/' "$ROOT/deploy/argocd.yaml" >"$BATS_TEST_TMPDIR/bad.yaml"
  run --separate-stderr "$POLICY_HOST" verify-manifest "$BATS_TEST_TMPDIR/bad.yaml" "$POLICY"
  assert_failure
  [[ "$stderr" == *'spec.settings are not valid: ownerKindLabel "bad key"'* ]] || fail "$stderr"
}

@test "verify-manifest refuses a generated matchCondition missing, stale or of other settings, and --write mends each" {
  local dir="$BATS_TEST_TMPDIR"
  # Missing: deploy/helm.yaml without it.
  python3 - "$ROOT/deploy/helm.yaml" "$dir/missing.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc["spec"]["matchConditions"] = [c for c in doc["spec"]["matchConditions"] if c["name"] != "ownership-change"]
yaml.safe_dump(doc, open(sys.argv[2], "w"))
PY
  # Stale: a key added to the settings, the condition left as it was.
  sed 's|^      - meta.helm.sh/release-namespace$|      - meta.helm.sh/release-namespace\n      - example.com/release|' \
    "$ROOT/deploy/helm.yaml" >"$dir/stale.yaml"
  grep -q example.com/release "$dir/stale.yaml"
  # Of other settings: the condition of a policy with bindings on one without.
  sed 's/- name: ownership-change$/- name: owned-object/' "$ROOT/deploy/flux.yaml" >"$dir/other.yaml"
  local manifest words
  for manifest in missing stale other; do
    case "$manifest" in
      missing) words='spec.matchConditions lacks "ownership-change", which these settings generate' ;;
      stale) words='spec.matchConditions "ownership-change" is not what these settings generate' ;;
      other) words='spec.matchConditions lacks "ownership-change"' ;;
    esac
    run --separate-stderr "$POLICY_HOST" verify-manifest "$dir/$manifest.yaml" "$POLICY"
    assert_failure
    [[ "$stderr" == *"$words"* ]] || fail "$manifest: $stderr"
    [[ "$stderr" == *"policy-host match-conditions --write MANIFEST MODULE"* ]] || fail "$manifest: $stderr"
    run --separate-stderr "$POLICY_HOST" match-conditions --manifest "$dir/$manifest.yaml" --write "$POLICY"
    assert_success
    run --separate-stderr "$POLICY_HOST" verify-manifest "$dir/$manifest.yaml" "$POLICY"
    assert_success
  done
  # A generated name its settings do not generate, beside the one they do.
  sed 's/- name: not-break-glass$/- name: owned-object/' "$ROOT/deploy/flux.yaml" >"$dir/stray.yaml"
  run --separate-stderr "$POLICY_HOST" verify-manifest "$dir/stray.yaml" "$POLICY"
  assert_failure
  [[ "$stderr" == *'spec.matchConditions "owned-object" is not one these settings generate'* ]] || fail "$stderr"
}

@test "match-conditions --write leaves every shipped manifest as it is, and prints a user's settings' conditions" {
  local m copy
  while read -r m; do
    copy="$BATS_TEST_TMPDIR/$(basename "$m")"
    cp "$ROOT/$m" "$copy"
    "$POLICY_HOST" match-conditions --manifest "$copy" --write "$POLICY"
    cmp "$ROOT/$m" "$copy" || fail "$m is not as its settings generate"
  done < <(cd "$ROOT" && { find deploy -name '*.yaml' ! -path 'deploy/rbac/*'; echo e2e-tests/cluster/race-helm-policy.yaml; } | sort)
  run --separate-stderr "$POLICY_HOST" match-conditions --settings-json \
    '{"ownerLabels": ["team"], "ownerKindLabel": "", "revisionAnnotation": ""}' "$POLICY"
  assert_success
  assert_line --index 0 "matchConditions:"
  assert_line --index 1 "  - name: ownership-change"
  assert_output --partial "['team'].exists(k, k in object.metadata.labels)"
  run --separate-stderr "$POLICY_HOST" match-conditions --settings-json '{"ownerLabels": []}' "$POLICY"
  assert_failure
  [[ "$stderr" == *"the settings are not valid"* ]] || fail "$stderr"
}

@test "docs/writers.md's binding example is the Flux tenants preset's settings, and valid" {
  # The preset with its settings replaced by the example (YAML read by policy-host): the yaml
  # block of docs/writers.md that names flux-tenants.yaml.
  local block
  block="$(awk '/^```yaml$/ { inside = 1; body = ""; next }
    inside && /^```$/ { inside = 0; if (body ~ /flux-tenants\.yaml/) { printf "%s", body; exit } next }
    inside { body = body $0 "\n" }' "$ROOT/docs/writers.md")"
  [ -n "$block" ] || fail "docs/writers.md has no yaml block naming flux-tenants.yaml"
  {
    sed '/^  settings:$/,$d' "$ROOT/deploy/identity/flux-tenants.yaml"
    sed 's/^/  /' <<<"$block"
  } >"$BATS_TEST_TMPDIR/readme.yaml"
  run --separate-stderr "$POLICY_HOST" verify-manifest "$BATS_TEST_TMPDIR/readme.yaml" "$POLICY"
  assert_success
  local example="$output"
  run --separate-stderr "$POLICY_HOST" verify-manifest "$ROOT/deploy/identity/flux-tenants.yaml" "$POLICY"
  assert_success
  assert_equal "$(jq -S -c .settings <<<"$example")" "$(jq -S -c .settings <<<"$output")"
}
