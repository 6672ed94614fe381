# Shared helpers of the e2e suites: every test runs the built, annotated module.
bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
FIXTURES="$ROOT/e2e-tests/fixtures"
SETTINGS="$ROOT/e2e-tests/settings"
POLICY="${POLICY:-$ROOT/annotated-policy.wasm}"
POLICY_HOST="$ROOT/target/host/policy-host"
# The same suite runs with the real kwctl when it is installed.
KWCTL="${KWCTL:-$(command -v kwctl || echo "$POLICY_HOST")}"
SHARED_DATA="$ROOT/../shared/data"

# evaluate FIXTURE [kwctl run flags...]: runs the policy on a request; the AdmissionResponse
# lands in $output.
evaluate() {
  local request="$1"
  shift
  [[ "$request" == /* ]] || request="$FIXTURES/$request"
  run --separate-stderr "$KWCTL" run -r "$request" "$@" "file://$POLICY"
  assert_success
}

allowed() { jq -r '.allowed' <<<"$output"; }
message() { jq -r '.status.message // ""' <<<"$output"; }
warnings() { jq -r '(.warnings // []) | join("\n")' <<<"$output"; }

assert_accepted() {
  assert_equal "$(allowed)" true
  assert_equal "$(message)" ""
}

# assert_accepted_without_warnings: accepted, and nothing said.
assert_quiet_accept() {
  assert_accepted
  assert_equal "$(warnings)" ""
}

code() { jq -r '.status.code // "none"' <<<"$output"; }

# assert_refused_with_code CODE: not allowed, no warnings, a message, and the HTTP status CODE.
assert_refused_with_code() {
  assert_equal "$(allowed)" false
  assert_equal "$(warnings)" ""
  [ -n "$(message)" ] || fail "a rejection must carry a message: $output"
  [ "$(code)" = "$1" ] || fail "expected status code $1, got $(code): $output"
}

# assert_rejected: a rule refuses the write: 403 Forbidden, as PodSecurity answers.
assert_rejected() { assert_refused_with_code 403; }

# assert_unreadable: the request cannot be read: 400 Bad Request.
assert_unreadable() { assert_refused_with_code 400; }

# assert_message_contains TEXT...: each TEXT is part of the rejection message.
assert_message_contains() {
  local m
  m="$(message)"
  for text in "$@"; do
    [[ "$m" == *"$text"* ]] || fail "message lacks '$text': $m"
  done
}

assert_warning_contains() {
  local w
  w="$(warnings)"
  [ "$(jq '(.warnings // []) | length' <<<"$output")" = 1 ] || fail "expected one warning: $output"
  for text in "$@"; do
    [[ "$w" == *"$text"* ]] || fail "warning lacks '$text': $w"
  done
}
