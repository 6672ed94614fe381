#!/usr/bin/env bats
# Settings validation, as kwctl runs it before evaluating.

load common

refused() {
  run --separate-stderr "$KWCTL" run -r "$FIXTURES/crd-owner-change.json" --settings-json "$1" "file://$POLICY"
  assert_failure
  [[ "$stderr$output" == *"Provided settings are not valid"* ]] || fail "no 'Provided settings are not valid': $stderr"
  [[ "$stderr$output" == *"$2"* ]] || fail "the message lacks '$2': $stderr"
}

@test "an unknown key (a typo) is refused, naming it" {
  refused '{"ownerLabel": ["a"]}' 'unknown field `ownerLabel`'
}

@test "no owner keys at all is refused" {
  refused '{"ownerLabels": [], "ownerAnnotations": []}' 'no owner keys'
}

@test "a key that is not a qualified name is refused" {
  refused '{"ownerLabels": ["owner name"]}' 'ownerLabels[0] "owner name"'
  refused '{"ownerAnnotations": ["Example.com/x"]}' 'is not a DNS subdomain'
  # The prefix's labels: none empty, none starting or ending with '-'.
  refused '{"ownerAnnotations": ["example..com/x"]}' 'prefix "example..com" is not a DNS subdomain'
  refused '{"ownerAnnotations": ["example.-com/x"]}' 'prefix "example.-com" is not a DNS subdomain'
  refused '{"ownerAnnotations": ["example-.com/x"]}' 'prefix "example-.com" is not a DNS subdomain'
  refused '{"ownerAnnotations": ["example.com./x"]}' 'prefix "example.com." is not a DNS subdomain'
}

@test "a qualified name with '-' and digits inside its prefix's labels is accepted" {
  evaluate crd-owner-change.json --settings-json '{"ownerLabels": ["my-org.ex4mple.com/owner"], "ownerKindLabel": ""}'
  assert_quiet_accept
}

@test "a duplicate key is refused" {
  refused '{"ownerLabels": ["a", "a"]}' 'ownerLabels[1] "a" is listed twice'
}

@test "an empty owner kind is refused" {
  refused '{"clusterScopedOwnerKinds": [""]}' 'clusterScopedOwnerKinds[0] is empty'
}

@test "a wrongly typed value is refused" {
  refused '{"allowAdoption": "no"}' 'invalid type: string "no", expected a boolean'
}

@test "YAML settings files are read, {} means the OLM v1 defaults" {
  evaluate crd-owner-change.json --settings-json '{}'
  assert_rejected
  evaluate clusterrole-helm-release-change.json -s "$SETTINGS/helm.yaml"
  assert_rejected
}

# policy-server 1.31 serves each request on a fresh instance, so what the policy caches of its
# settings never survives a request there: they must be read anew on every one.
@test "(policy-host bench --fresh-instance) on a fresh instance per request, as policy-server serves them, the settings still apply" {
  fresh() {
    run --separate-stderr "$POLICY_HOST" bench --fresh-instance --json -r "$FIXTURES/crd-adopt.json" \
      "$@" --warm-up-time 0.01 --measurement-time 0.05 --num-samples 2 "$POLICY"
    assert_success
    jq -r '.accepted' <<<"$output"
  }
  assert_equal "$(fresh)" true
  assert_equal "$(fresh -s "$SETTINGS/strict.json")" false
  assert_equal "$(fresh --settings-json '{"allowAdoption": false}')" false
}
