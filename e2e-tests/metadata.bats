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
