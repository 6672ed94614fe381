#!/usr/bin/env bats
# `policy-host serve`, policy-server's HTTP contract, without an API server: AdmissionReviews
# posted to /validate/<policy id> are answered as `kwctl run` (and policy-host run) answers the
# same request with the same settings. With POLICY_SERVER=path (a local build; CI has none),
# the real policy-server is started on the same policies.yml and must answer the same.

load common

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Policy ids and their settings files (e2e-tests/settings, or the settings of a preset in
# deploy/identity/, written to the file's tmpdir), as policies.yml names them; `:mutate` lets
# the policy mutate (allowedToMutate: true, a ClusterAdmissionPolicy with mutating: true).
# `stamp-denied` is the stamping preset served as a validating policy: its patches are refused.
POLICIES=(olm:"" helm:helm.yaml handover:olm-handover.yaml strict:strict.json confined:olm-confined.yaml
  tenants:@flux-tenants.yaml operator:@olm-v1-operator.yaml stamp:@helm-per-install-stamp.yaml:mutate
  stamp-denied:@helm-per-install-stamp.yaml)

# settings_of FILE: the settings file of a POLICIES entry.
settings_of() {
  case "$1" in
    @*) echo "$BATS_FILE_TMPDIR/${1#@}.json" ;;
    *) echo "$SETTINGS/$1" ;;
  esac
}

# start_backend NAME COMMAND...: in the background, without bats' descriptors; PID in NAME.pid.
start_backend() {
  local name="$1"
  shift
  "$@" </dev/null >"$BATS_FILE_TMPDIR/$name.log" 2>&1 3>&- &
  echo $! >"$BATS_FILE_TMPDIR/$name.pid"
}

wait_ready() {
  for _ in $(seq 1 150); do
    curl -sf "http://127.0.0.1:$1/readiness" >/dev/null && return 0
    sleep 0.2
  done
  return 1
}

setup_file() {
  local policies="$BATS_FILE_TMPDIR/policies.yml" entry id file preset mutate
  : >"$policies"
  for preset in "$ROOT"/deploy/identity/*.yaml; do
    "$POLICY_HOST" verify-manifest "$preset" "$POLICY" | jq .settings >"$BATS_FILE_TMPDIR/$(basename "$preset").json"
  done
  for entry in "${POLICIES[@]}"; do
    IFS=: read -r id file mutate <<<"$entry"
    {
      echo "$id:"
      echo "  module: file://$POLICY"
      echo "  allowedToMutate: $([ "$mutate" = mutate ] && echo true || echo false)"
      # What kubewarden-controller 1.36 writes for a ClusterAdmissionPolicy (1.31 ignores it).
      echo '  hostCapabilities: ["*"]'
      if [ -n "$file" ]; then
        echo "  settings:"
        # YAML or JSON (which is YAML), nested under the key.
        sed 's/^/    /' "$(settings_of "$file")"
      fi
    } >>"$policies"
  done
  # The identity preset's settings without hostCapabilities: policy-server 1.36 grants none.
  printf 'ungranted:\n  module: file://%s\n  settings:\n' "$POLICY" >>"$policies"
  sed 's/^/    /' "$BATS_FILE_TMPDIR/olm-v1-operator.yaml.json" >>"$policies"
  export SERVE_PORT SERVE_READY
  SERVE_PORT="$(free_port)"
  SERVE_READY="$(free_port)"
  start_backend serve "$POLICY_HOST" serve --policies "$policies" --port "$SERVE_PORT" \
    --readiness-probe-port "$SERVE_READY" --log "$BATS_FILE_TMPDIR/requests.jsonl"
  wait_ready "$SERVE_READY" || { cat "$BATS_FILE_TMPDIR/serve.log" >&2; return 1; }
  if [ -n "${POLICY_SERVER:-}" ]; then
    export PS_PORT PS_READY
    PS_PORT="$(free_port)"
    PS_READY="$(free_port)"
    start_backend policy-server "$POLICY_SERVER" --policies "$policies" --addr 127.0.0.1 \
      --port "$PS_PORT" --readiness-probe-port "$PS_READY" \
      --policies-download-dir "$BATS_FILE_TMPDIR/downloads" --sigstore-cache-dir "$BATS_FILE_TMPDIR/sigstore" \
      --workers 2 --log-fmt json --ignore-kubernetes-connection-failure
    wait_ready "$PS_READY" || { tail -20 "$BATS_FILE_TMPDIR/policy-server.log" >&2; return 1; }
  fi
}

teardown_file() {
  for pid in "$BATS_FILE_TMPDIR"/*.pid; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null
  done
  return 0
}

# as_review FIXTURE: the fixture as the AdmissionReview the API server sends (one line; the
# same bytes go to every host, so that positions in messages agree).
as_review() {
  local out="$BATS_TEST_TMPDIR/$(basename "$1")"
  jq -c '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: (if .request then .request else . end)}' "$1" >"$out"
  echo "$out"
}

# review PORT ID REVIEW: the answer's response, normalised for comparison.
review() {
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary "@$3" "http://127.0.0.1:$1/validate/$2" |
    jq -c '.response | {uid, allowed, code: .status.code, message: .status.message, warnings: (.warnings // []), patchType, patch}'
}

@test "(policy-host serve) answers every fixture's AdmissionReview as policy-host run answers the request" {
  local count=0 entry id file mutate fixture expected got
  for entry in "${POLICIES[@]}"; do
    IFS=: read -r id file mutate <<<"$entry"
    # kwctl run lets every policy mutate; the one served without leave is compared apart.
    [ "$id" != stamp-denied ] || continue
    for fixture in "$FIXTURES"/*.json; do
      count=$((count + 1))
      local settings=()
      [ -z "$file" ] || settings=(-s "$(settings_of "$file")")
      local request
      request="$(as_review "$fixture")"
      expected="$("$POLICY_HOST" run -r "$request" "${settings[@]}" "$POLICY" |
        jq -c '{uid, allowed, code: .status.code, message: .status.message, warnings: (.warnings // []), patchType, patch}')"
      got="$(review "$SERVE_PORT" "$id" "$request")"
      [ "$got" = "$expected" ] || fail "$id $(basename "$fixture"): serve $got, run $expected"
    done
  done
  [ "$count" -ge 200 ] || fail "only $count reviews"
  # One log line per review, naming the policy and the verdict.
  assert_equal "$(wc -l <"$BATS_FILE_TMPDIR/requests.jsonl")" "$count"
  assert_equal "$(jq -s '[.[] | select(.policy == "olm" and .name == "widgets.example.com" and .verdict.code == 403)] | length > 0' "$BATS_FILE_TMPDIR/requests.jsonl")" true
}

@test "(policy-host serve) a stamping policy served as a validating one has its patch refused, as policy-server does" {
  local request
  request="$(as_review "$FIXTURES/job-hook-create-by-release.json")"
  run review "$SERVE_PORT" stamp "$request"
  assert_equal "$(jq -r '[.allowed, .patchType] | @tsv' <<<"$output")" "$(printf 'true\tJSONPatch')"
  run review "$SERVE_PORT" stamp-denied "$request"
  assert_equal "$(jq -r .allowed <<<"$output")" false
  assert_equal "$(jq -r .message <<<"$output")" "Request rejected by policy stamp-denied. The policy attempted to mutate the request, but it is currently configured to not allow mutations."
  assert_equal "$(jq -r '.patch // "none"' <<<"$output")" none
  # A request it does not stamp goes through.
  run review "$SERVE_PORT" stamp-denied "$(as_review "$FIXTURES/crd-create-ext-a.json")"
  assert_equal "$(jq -r .allowed <<<"$output")" true
}

@test "(policy-host serve) an unknown policy id is 404, a GET is 405, a body that is not a review 400" {
  run curl -s -o /dev/null -w '%{http_code}' -X POST --data '{}' "http://127.0.0.1:$SERVE_PORT/validate/nope"
  assert_output 404
  run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SERVE_PORT/validate/olm"
  assert_output 405
  run curl -s -o /dev/null -w '%{http_code}' -X POST --data 'not json' "http://127.0.0.1:$SERVE_PORT/validate/olm"
  assert_output 400
}

# policy-server 1.36 (from 1.35) grants a policy the host capabilities its policies.yml entry
# lists, none when it lists none; 1.31 grants all, and refuses the kind instead, which it was
# not granted either (no contextAwareResources).
@test "(policy-host serve) a policy without hostCapabilities may call no host capability, as policy-server 1.36 grants it" {
  local request
  request="$(as_review "$FIXTURES/crd-delete-by-hook.json")"
  run review "$SERVE_PORT" ungranted "$request"
  local ungranted="$output"
  assert_equal "$(jq -c '[.allowed, .code]' <<<"$output")" '[false,403]'
  [[ "$(jq -r .message <<<"$output")" == *"failed: Host error: Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported. Grant the policy the host capabilities kubernetes/get_resource and kubernetes/list_resources_all"* ]] ||
    fail "$output"
  # Granted, the same request is refused for what it is: the kind was not granted.
  run review "$SERVE_PORT" operator "$request"
  [[ "$(jq -r .message <<<"$output")" == *"Policy has not been granted access to Kubernetes olm.operatorframework.io/v1/ClusterExtension resources"* ]] || fail "$output"
  if [ -n "${POLICY_SERVER:-}" ]; then
    local b
    b="$(review "$PS_PORT" ungranted "$request")"
    case "$("$POLICY_SERVER" --version 2>/dev/null)" in
      *" 1.3"[5-9]* | *" 1.4"*) assert_equal "$b" "$ungranted" ;;
      *) [[ "$b" == *"has not been granted access to Kubernetes olm.operatorframework.io/v1/ClusterExtension resources"* ]] || fail "policy-server: $b" ;;
    esac
  fi
}

@test "(policy-host serve) refuses an invalid hostCapabilities pattern at start-up, as policy-server 1.36 does" {
  printf 'bad:\n  module: file://%s\n  hostCapabilities: ["kubernetes"]\n' "$POLICY" >"$BATS_TEST_TMPDIR/policies.yml"
  run --separate-stderr "$POLICY_HOST" serve --policies "$BATS_TEST_TMPDIR/policies.yml" --port "$(free_port)" \
    --readiness-probe-port "$(free_port)"
  assert_failure
  [[ "$stderr" == *"invalid hostCapabilities pattern for policy bad"*"'kubernetes/*'"* ]] || fail "$stderr"
}

@test "(policy-host serve) refuses to start on invalid settings, with the module's message, as policy-server does" {
  printf 'bad:\n  module: file://%s\n  settings: {ownerLabel: [x]}\n' "$POLICY" >"$BATS_TEST_TMPDIR/policies.yml"
  run --separate-stderr "$POLICY_HOST" serve --policies "$BATS_TEST_TMPDIR/policies.yml" --port "$(free_port)" \
    --readiness-probe-port "$(free_port)"
  assert_failure
  [[ "$stderr" == *"policy bad: Provided settings are not valid: settings cannot be read: unknown field \`ownerLabel\`"* ]] || fail "$stderr"
}

@test "(policy-host serve) monitor mode allows what it would refuse, and logs the verdict" {
  local port ready
  port="$(free_port)"
  ready="$(free_port)"
  printf 'watch:\n  module: file://%s\n  policyMode: monitor\n' "$POLICY" >"$BATS_TEST_TMPDIR/policies.yml"
  start_backend monitor "$POLICY_HOST" serve --policies "$BATS_TEST_TMPDIR/policies.yml" --port "$port" \
    --readiness-probe-port "$ready" --log "$BATS_TEST_TMPDIR/log.jsonl"
  wait_ready "$ready"
  run review "$port" watch "$(as_review "$FIXTURES/crd-owner-change.json")"
  kill "$(cat "$BATS_FILE_TMPDIR/monitor.pid")"
  assert_equal "$(jq -c '[.allowed, .code]' <<<"$output")" '[true,null]'
  assert_equal "$(jq -c '[.verdict.allowed, .verdict.code, .monitor]' "$BATS_TEST_TMPDIR/log.jsonl")" '[false,403,true]'
}

@test "(policy-host serve) /audit/<id> answers the audit scanner with the module's verdict, in monitor mode too" {
  local port ready
  port="$(free_port)"
  ready="$(free_port)"
  printf 'watch:\n  module: file://%s\n  policyMode: monitor\n' "$POLICY" >"$BATS_TEST_TMPDIR/policies.yml"
  start_backend audit "$POLICY_HOST" serve --policies "$BATS_TEST_TMPDIR/policies.yml" --port "$port" \
    --readiness-probe-port "$ready" --log "$BATS_TEST_TMPDIR/log.jsonl"
  wait_ready "$ready"
  run curl -sf -X POST -H 'Content-Type: application/json' \
    --data-binary "@$(as_review "$FIXTURES/crd-owner-change.json")" "http://127.0.0.1:$port/audit/watch"
  kill "$(cat "$BATS_FILE_TMPDIR/audit.pid")"
  assert_success
  assert_equal "$(jq -c '[.response.allowed, .response.status.code]' <<<"$output")" '[false,403]'
  assert_equal "$(jq -r .origin "$BATS_TEST_TMPDIR/log.jsonl")" audit
}

# A waPC guest that answers validate_settings (an operation name of 17 bytes) and spins for
# ever in validate (8 bytes): what a policy past its time budget looks like to the host.
spinning_module() {
  cat >"$BATS_TEST_TMPDIR/spin.wat" <<'EOW'
(module
  (import "wapc" "__guest_response" (func $response (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"valid\":true}")
  (func (export "wapc_init"))
  (func (export "__guest_call") (param $operation i32) (param $payload i32) (result i32)
    (if (i32.eq (local.get $operation) (i32.const 8))
      (then (loop $spin (br $spin))))
    (call $response (i32.const 16) (i32.const 14))
    (i32.const 1)))
EOW
  wat2wasm "$BATS_TEST_TMPDIR/spin.wat" -o "$BATS_TEST_TMPDIR/spin.wasm"
}

@test "(policy-host serve) an evaluation past --policy-timeout (2 s by default) is refused with code 500, as policy-server does" {
  command -v wat2wasm >/dev/null || skip "wat2wasm (wabt) is not installed: scripts/setup.sh test"
  spinning_module
  local port ready start elapsed
  port="$(free_port)"
  ready="$(free_port)"
  printf 'spin:\n  module: file://%s\n' "$BATS_TEST_TMPDIR/spin.wasm" >"$BATS_TEST_TMPDIR/policies.yml"
  start_backend spin "$POLICY_HOST" serve --policies "$BATS_TEST_TMPDIR/policies.yml" --port "$port" \
    --readiness-probe-port "$ready"
  wait_ready "$ready" || { cat "$BATS_FILE_TMPDIR/spin.log"; fail "not ready"; }
  start=$(date +%s%N)
  run curl -s -m 10 -X POST -H 'Content-Type: application/json' \
    --data-binary "@$(as_review "$FIXTURES/crd-owner-change.json")" "http://127.0.0.1:$port/validate/spin"
  elapsed=$((($(date +%s%N) - start) / 1000000))
  kill "$(cat "$BATS_FILE_TMPDIR/spin.pid")"
  assert_success
  assert_equal "$(jq -c '[.response.allowed, .response.status.code]' <<<"$output")" '[false,500]'
  # Interrupted between 1 and 2 ticks of one second after it started; well within the
  # API server's 10 s webhook timeout.
  [ "$elapsed" -ge 900 ] && [ "$elapsed" -lt 3500 ] || fail "answered after $elapsed ms"
}

@test "(policy-server, local builds only) policy-server answers the same reviews as policy-host serve" {
  [ -n "${POLICY_SERVER:-}" ] || skip "POLICY_SERVER is not set (policy-server is not installable here; CI has none)"
  local entry id fixture a b count=0
  for entry in "${POLICIES[@]}"; do
    id="${entry%%:*}"
    for fixture in "$FIXTURES"/*.json; do
      count=$((count + 1))
      local request
      request="$(as_review "$fixture")"
      # policy-server parses the request and serializes it again for the module, so a
      # position in an unreadable request's message differs: compare without it.
      a="$(review "$SERVE_PORT" "$id" "$request" | sed -E 's/ at line [0-9]+ column [0-9]+//')"
      b="$(review "$PS_PORT" "$id" "$request" | sed -E 's/ at line [0-9]+ column [0-9]+//')"
      [ "$a" = "$b" ] || fail "$id $(basename "$fixture"): policy-host serve $a, policy-server $b"
    done
  done
  [ "$count" -ge 200 ] || fail "only $count reviews"
}

@test "(policy-host webhook) writes policies.yml as kubewarden-controller 1.36: every capability for a ClusterAdmissionPolicy, a namespaced policy's from its PolicyServer" {
  local dir="$BATS_TEST_TMPDIR"
  echo "CA" >"$dir/ca.pem"
  sed -e 's/^kind: ClusterAdmissionPolicy$/kind: AdmissionPolicy/' -e 's/^  name: single-owner-helm$/  name: team-helm\n  namespace: team-a/' \
    "$ROOT/deploy/helm.yaml" >"$dir/namespaced.yaml"
  grep -q '^kind: AdmissionPolicy$' "$dir/namespaced.yaml" && grep -q '^  namespace: team-a$' "$dir/namespaced.yaml" || fail "sed did not make an AdmissionPolicy"
  printf 'apiVersion: policies.kubewarden.io/v1\nkind: PolicyServer\nmetadata: {name: default}\nspec:\n  image: x\n  namespacedPoliciesCapabilities: ["oci/*"]\n' >"$dir/ps.yaml"
  run --separate-stderr "$POLICY_HOST" webhook "$ROOT/deploy/olm-v1.yaml" "$dir/namespaced.yaml" --url https://127.0.0.1:1 \
    --ca-file "$dir/ca.pem" --kubernetes-minor 36 --module "file://$POLICY" --policies-out "$dir/policies.yml" --policy-server "$dir/ps.yaml" \
    --kubewarden 1.36
  assert_success
  assert_equal "$(jq -r '[.items[].metadata.name] | join(" ")' <<<"$output")" "clusterwide-single-owner-olm-v1 namespaced-team-a-team-helm"
  assert_equal "$(jq -c '.items[1].webhooks[0].namespaceSelector' <<<"$output")" '{"matchLabels":{"kubernetes.io/metadata.name":"team-a"}}'
  assert_equal "$(python3 -c 'import json,sys,yaml; d=yaml.safe_load(open(sys.argv[1])); print(json.dumps({k: v["hostCapabilities"] for k, v in sorted(d.items())}))' "$dir/policies.yml")" \
    '{"clusterwide-single-owner-olm-v1": ["*"], "namespaced-team-a-team-helm": ["oci/*"]}'
  # Without the PolicyServer's list, the controller grants a namespaced policy everything.
  run --separate-stderr "$POLICY_HOST" webhook "$dir/namespaced.yaml" --url https://127.0.0.1:1 --ca-file "$dir/ca.pem" \
    --kubernetes-minor 36 --module "file://$POLICY" --policies-out "$dir/policies.yml"
  assert_success
  grep -q -- '- \*' "$dir/policies.yml" || grep -q "'\*'" "$dir/policies.yml" || fail "$(cat "$dir/policies.yml")"
  # A pattern policy-server would refuse is refused here.
  sed -i 's|\["oci/\*"\]|["oci"]|' "$dir/ps.yaml"
  run --separate-stderr "$POLICY_HOST" webhook "$dir/namespaced.yaml" --url https://127.0.0.1:1 --ca-file "$dir/ca.pem" \
    --kubernetes-minor 36 --policy-server "$dir/ps.yaml"
  assert_failure
  [[ "$stderr" == *"spec.namespacedPoliciesCapabilities"*"'oci/*'"* ]] || fail "$stderr"
}

@test "(policy-host webhook) names policies as kubewarden-controller 1.37.2 and later: kw.cap.<name>, kw.ap.<namespace>.<name>" {
  local dir="$BATS_TEST_TMPDIR"
  echo "CA" >"$dir/ca.pem"
  sed -e 's/^kind: ClusterAdmissionPolicy$/kind: AdmissionPolicy/' -e 's/^  name: single-owner-helm$/  name: team-helm\n  namespace: team-a/' \
    "$ROOT/deploy/helm.yaml" >"$dir/namespaced.yaml"
  for version in 1.37.2 1.38; do
    run --separate-stderr "$POLICY_HOST" webhook "$ROOT/deploy/olm-v1.yaml" "$dir/namespaced.yaml" --url https://127.0.0.1:1 \
      --ca-file "$dir/ca.pem" --kubernetes-minor 36 --module "file://$POLICY" --policies-out "$dir/policies.yml" --kubewarden "$version"
    assert_success
    assert_equal "$(jq -r '[.items[].metadata.name] | join(" ")' <<<"$output")" "kw.cap.single-owner-olm-v1 kw.ap.team-a.team-helm"
    assert_equal "$(jq -r '[.items[].webhooks[0].name] | join(" ")' <<<"$output")" \
      "kw.cap.single-owner-olm-v1.kubewarden.admission kw.ap.team-a.team-helm.kubewarden.admission"
    assert_equal "$(jq -r '.items[0].webhooks[0].clientConfig.url' <<<"$output")" "https://127.0.0.1:1/validate/kw.cap.single-owner-olm-v1"
    assert_equal "$(python3 -c 'import sys,yaml; print(" ".join(sorted(yaml.safe_load(open(sys.argv[1])))))' "$dir/policies.yml")" \
      "kw.ap.team-a.team-helm kw.cap.single-owner-olm-v1"
  done
  run --separate-stderr "$POLICY_HOST" webhook "$ROOT/deploy/olm-v1.yaml" --url https://127.0.0.1:1 --ca-file "$dir/ca.pem" \
    --kubernetes-minor 36 --module "file://$POLICY" --kubewarden 1.37.1
  assert_equal "$(jq -r '.items[0].metadata.name' <<<"$output")" clusterwide-single-owner-olm-v1
}
