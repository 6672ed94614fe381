#!/usr/bin/env bats
# Input handling through the built module: large objects, and malformed requests that the
# host can still read as JSON (raw bytes are tried in hostile.bats).

load common

setup_file() {
  [ -f "$SHARED_DATA/crd-prometheuses.monitoring.coreos.com.json" ] || {
    echo "missing $SHARED_DATA (the shared test data beside the checkout)" >&2
    return 1
  }
  python3 "$ROOT/scripts/make-requests.py" "$BATS_FILE_TMPDIR/large"
}

@test "a 1 MB ConfigMap owner change is rejected, the same owner accepted" {
  local req="$BATS_FILE_TMPDIR/large/configmap-1mb-reject.json"
  [ "$(stat -c %s "$req")" -gt 1000000 ]
  evaluate "$req"
  assert_rejected
  assert_message_contains 'ConfigMap "big-config" in namespace "widgets" is owned by [olm.operatorframework.io/owner-name=ext-a]' \
    '[olm.operatorframework.io/owner-name=ext-b]'
  evaluate "$BATS_FILE_TMPDIR/large/configmap-1mb-accept.json"
  assert_quiet_accept
}

@test "a CRD as the API server sends it, with managedFields that name the owner keys, is judged by its labels" {
  local req="$BATS_FILE_TMPDIR/large/crd-managed-reject.json"
  grep -q '"f:olm.operatorframework.io/owner-name":{}' "$req"
  evaluate "$req"
  assert_rejected
  assert_message_contains 'CustomResourceDefinition "widgets.example.com" is owned by [olm.operatorframework.io/owner-name=ext-a]' \
    '[olm.operatorframework.io/owner-name=ext-b]'
  evaluate "$BATS_FILE_TMPDIR/large/crd-managed-accept.json"
  assert_quiet_accept
}

@test "the real prometheuses.monitoring.coreos.com CRD: owner change rejected, same owner accepted" {
  evaluate "$BATS_FILE_TMPDIR/large/crd-prometheus-reject.json"
  assert_rejected
  assert_message_contains 'CustomResourceDefinition "prometheuses.monitoring.coreos.com" is owned by'
  evaluate "$BATS_FILE_TMPDIR/large/crd-prometheus-accept.json"
  assert_quiet_accept
}

@test "a 4 MB field-rich CRD is judged by its labels" {
  evaluate "$BATS_FILE_TMPDIR/large/crd-synthetic-4mb-reject.json"
  assert_rejected
  evaluate "$BATS_FILE_TMPDIR/large/crd-synthetic-4mb-accept.json"
  assert_quiet_accept
}

# kwctl and policy-server parse the request with serde_json, which refuses nesting deeper
# than 128 levels before any module runs; the API server itself sends such objects (a CRD
# schema nested 100 levels deep is about 200 levels of JSON). So the deep payload goes
# straight to the guest, as the hostile table's payloads do, whichever host the suite runs.
@test "(policy-host call: raw payload, deeper than kwctl parses) a schema nested 100 levels deep is judged by its labels" {
  local payload="$BATS_TEST_TMPDIR/payload.json"
  for outcome in reject accept; do
    printf '{"request":%s,"settings":{}}' "$(cat "$BATS_FILE_TMPDIR/large/crd-nested-100-$outcome.json")" >"$payload"
    run --separate-stderr "$POLICY_HOST" call validate -p "$payload" "$POLICY"
    assert_success
    case "$outcome" in
      reject)
        assert_equal "$(jq -r .accepted <<<"$output")" false
        [[ "$(jq -r .message <<<"$output")" == *'"deep.example.com" is owned by [olm.operatorframework.io/owner-name=ext-a]'* ]] || fail "$output"
        ;;
      accept) assert_equal "$(jq -c '[.accepted, .warnings]' <<<"$output")" '[true,null]' ;;
    esac
  done
}

@test "labels that are not a map are unreadable (400), saying what was wrong" {
  evaluate malformed-labels-not-a-map.json
  assert_unreadable
  assert_message_contains 'metadata.labels must be a map of strings to strings, not an array'
}

@test "a label value that is a number or null is unreadable (400)" {
  evaluate malformed-label-value-number.json
  assert_unreadable
  assert_message_contains 'metadata.labels "olm.operatorframework.io/owner-name" must be a string, not a number'
  evaluate malformed-label-value-null.json
  assert_unreadable
  assert_message_contains 'must be a string, not null'
}

@test "annotations or metadata of the wrong type are unreadable (400)" {
  evaluate malformed-annotations-string.json
  assert_unreadable
  assert_message_contains 'metadata.annotations must be a map of strings to strings, not a string'
  evaluate malformed-metadata-not-object.json
  assert_unreadable
  assert_message_contains 'metadata must be a JSON object, not a string'
}

@test "an unknown operation is unreadable (400)" {
  evaluate malformed-unknown-operation.json
  assert_unreadable
  assert_message_contains 'unknown operation "PATCH"'
}

@test "Kubewarden 1.38 caps a policy's memory at 256 MiB: the largest request costs the module 5 MiB" {
  # 4 MB requests, above the API server's 3 MiB; every preset's settings, the owner change refused.
  local m req mib
  for m in olm-v1 all-tools; do
    "$POLICY_HOST" verify-manifest "$ROOT/deploy/$m.yaml" "$POLICY" | jq -c .settings >"$BATS_TEST_TMPDIR/$m.json"
    for req in crd-synthetic-4mb-reject configmap-4mb-reject; do
      run --separate-stderr "$POLICY_HOST" bench -r "$BATS_FILE_TMPDIR/large/$req.json" -s "$BATS_TEST_TMPDIR/$m.json" \
        --warm-up-time 0.1 --measurement-time 0.2 --num-samples 3 --json "$POLICY"
      assert_success
      mib="$(jq '.memory_bytes / 1048576' <<<"$output")"
      echo "# $m, $req: the module's linear memory $mib MiB" >&3
      python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 16 else 1)' "$mib" ||
        fail "$req under $m: $mib MiB (the 1.38 cap is 256 MiB; 5 MiB was measured)"
    done
  done
}
