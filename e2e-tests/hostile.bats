#!/usr/bin/env bats
# Hostile inputs, through the built module: every input gets a clean answer (no trap, no
# error that policy-server would turn into a 500), and what cannot be read is rejected (400;
# a rule's refusal is 403).
# Raw payloads the API server would never send go straight to the guest (`policy-host call`).

load common

setup_file() {
  python3 "$ROOT/e2e-tests/hostile/make-cases.py" "$BATS_FILE_TMPDIR/cases"
}

@test "the hostile-input table: each case gets its expected answer and message, in bounded memory" {
  local failures=0 count=0
  while IFS=$'\t' read -r name function expected code fragment; do
    count=$((count + 1))
    local answer payload="$BATS_FILE_TMPDIR/cases/$name.bin" log="$BATS_FILE_TMPDIR/stderr"
    if ! answer="$("$POLICY_HOST" call "$function" -p "$payload" "$POLICY" 2>"$log")"; then
      echo "FAIL $name: the guest trapped or erred: $(cat "$log")" >&3
      failures=$((failures + 1))
      continue
    fi
    # Bounded memory: the payload, its copy, and a little more; never a tree of the object.
    local memory limit
    memory="$(sed -n 's/^guest linear memory: \([0-9]*\) bytes$/\1/p' "$log")"
    limit=$((2 * $(stat -c %s "$payload") + 2 * 1024 * 1024))
    if [ -z "$memory" ] || [ "$memory" -gt "$limit" ]; then
      echo "FAIL $name: guest memory ${memory:-unknown} bytes, more than $limit" >&3
      failures=$((failures + 1))
    fi
    local got message
    case "$function" in
      validate) got="$(jq -r 'if .accepted then "accept" else "reject" end' <<<"$answer")" ;;
      validate_settings) got="$(jq -r 'if .valid then "valid" else "invalid" end' <<<"$answer")" ;;
    esac
    message="$(jq -r '.message // ""' <<<"$answer")"
    if [ "$got" != "$expected" ]; then
      echo "FAIL $name: expected $expected, got $got: ${message:0:300}" >&3
      failures=$((failures + 1))
    elif [[ "$expected" =~ ^(reject|invalid)$ && ( -z "$message" || "$message" != *"$fragment"* ) ]]; then
      echo "FAIL $name: the message lacks '$fragment': ${message:0:300}" >&3
      failures=$((failures + 1))
    elif [ "$function" = validate ] && [ "$(jq -r '.code // "null"' <<<"$answer")" != "$code" ]; then
      echo "FAIL $name: expected code $code, got $(jq -c .code <<<"$answer")" >&3
      failures=$((failures + 1))
    fi
  done <"$BATS_FILE_TMPDIR/cases/cases.tsv"
  [ "$count" -ge 45 ] || fail "only $count cases were read"
  [ "$failures" -eq 0 ] || fail "$failures of $count hostile cases failed"
}

@test "a guest trap is reported as policy-server does: allowed false, code 500" {
  wat2wasm "$FIXTURES/trap.wat" -o "$BATS_TEST_TMPDIR/trap.wasm"
  run --separate-stderr "$POLICY_HOST" run -r "$FIXTURES/crd-owner-change.json" "$BATS_TEST_TMPDIR/trap.wasm"
  assert_success
  assert_equal "$(jq -r .allowed <<<"$output")" false
  assert_equal "$(jq -r .status.code <<<"$output")" 500
  [[ "$(jq -r .status.message <<<"$output")" == "internal server error: "* ]] || fail "$output"
  run --separate-stderr "$POLICY_HOST" call validate -p /dev/null "$BATS_TEST_TMPDIR/trap.wasm"
  assert_failure
  [[ "$stderr" == *"the guest trapped or returned an error"* ]]
}

# The host's side of a request (`bench --end-to-end`) costs what it costs in policy-server only
# with policy-server's allocator: with glibc's, it moved by a tenth with the heap's layout.
@test "(policy-host) the host allocates as policy-server 1.31 does: jemalloc, with its configuration" {
  MALLOC_CONF=stats_print:true run --separate-stderr "$POLICY_HOST" run \
    -r "$FIXTURES/crd-owner-change.json" "$POLICY"
  assert_success
  for opt in 'background_thread: true' 'tcache_max: 4096' 'dirty_decay_ms: 5000' \
    'muzzy_decay_ms: 5000' 'abort_conf: true' 'prof: true' 'prof_active: false' 'lg_prof_sample: 19'; do
    grep -q "^  opt\.$opt" <<<"$stderr" || fail "jemalloc's opt.$opt not in: ${stderr:0:400}"
  done
}

@test "no state leaks across 100,000 evaluations on one instance, memory stays flat" {
  # With the identity and stamping presets' settings too: a bound, an unbound and an exempt
  # writer, a DELETE read through, and stamped objects.
  local olm_operator stamp
  olm_operator="$("$POLICY_HOST" verify-manifest "$ROOT/deploy/identity/olm-v1-operator.yaml" "$POLICY" | jq -c .settings)"
  stamp="$("$POLICY_HOST" verify-manifest "$ROOT/deploy/identity/helm-per-install-stamp.yaml" "$POLICY" | jq -c .settings)"
  run --separate-stderr "$POLICY_HOST" soak -n 100000 \
    -r "$FIXTURES/crd-owner-change.json" -r "$FIXTURES/crd-same-owner-update.json" \
    -r "$FIXTURES/crd-adopt.json" -r "$FIXTURES/crd-orphan.json" \
    -r "$FIXTURES/malformed-labels-not-a-map.json" -r "$FIXTURES/clusterrole-helm-release-change.json" \
    -r "$FIXTURES/crd-edit-by-hook.json" -r "$FIXTURES/crd-delete-by-hook.json" \
    -r "$FIXTURES/job-hook-create-by-release.json" \
    --settings-json '{}' --settings-json '{"allowAdoption": false, "allowOrphaning": false}' \
    --settings-json '{"ownerLabels": [], "ownerAnnotations": ["meta.helm.sh/release-name"], "ownerKindLabel": ""}' \
    --settings-json "$olm_operator" --settings-json "$stamp" \
    "$POLICY"
  assert_success
  echo "$output" >&3
  assert_line --partial 'call 1: guest linear memory'
  assert_line --partial 'call 10000: guest linear memory'
  assert_line --partial 'call 100000: guest linear memory'
  assert_output --partial 'every answer equal to a fresh instance'
}
