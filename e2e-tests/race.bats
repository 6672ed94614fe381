#!/usr/bin/env bats
# `policy-host race` over a real etcd: a run that tested nothing must not pass as "0 violations".

load common

@test "(policy-host race) a run whose writers made no attempt fails, saying so" {
  command -v etcd >/dev/null || fail "etcd is not installed (scripts/setup.sh race)"
  run --separate-stderr "$POLICY_HOST" race --scenario owners --mode admission --writes 0 --duration 5 "$POLICY"
  assert_failure
  [[ "$stderr" == *"the writers made 0 attempts and 0 commits: nothing was tested"* ]] || fail "$stderr"
}

@test "(policy-host race) a short run that writes passes and judges what it committed" {
  run --separate-stderr "$POLICY_HOST" race --scenario owners --mode admission --writers 2 --objects 2 --duration 2 "$POLICY"
  assert_success
  [[ "$output" == *"race: client-check violations 0, admission violations 0"* ]] || fail "$output"
  # The row has attempts and commits above zero.
  local row
  row="$(grep '^| owners | admission |' <<<"$output")"
  [ "$(cut -d'|' -f6 <<<"$row" | tr -d ' ')" -gt 0 ] || fail "no attempts: $row"
  [ "$(cut -d'|' -f7 <<<"$row" | tr -d ' ')" -gt 0 ] || fail "no commits: $row"
}
