#!/usr/bin/env bats
# The refusal table of docs/refusals.md ("Every answer"), row by row, against the built module:
# each row's example (an e2e fixture, or a write of the lifecycle corpus, with its settings)
# must still be answered as the row says, and its message must still start with the row's text
# (and hold each part after a ` ... `, in order). README's answers met most are rows of it.

load common

DOC="$ROOT/docs/refusals.md"

setup_file() {
  # The lifecycle corpus's writes (e2e-tests/corpus/), as rows name them: corpus/TOOL/WRITE.json.
  python3 "$ROOT/e2e-tests/corpus/corpus.py" build "$BATS_FILE_TMPDIR/corpus"
}

# The rows between the markers, one per line: answer, message start, example (each cell with
# its Markdown code spans unwrapped).
rows() {
  sed -n '/^<!-- refusals:begin -->$/,/^<!-- refusals:end -->$/p' "$DOC" |
    grep '^| ' | tail -n +2 | grep -v '^|---'
}

# The answers across tools, listed by their phrase.
across() {
  sed -n '/^<!-- across:begin -->$/,/^<!-- across:end -->$/p' "$DOC"
}

# says TEXT EXPECTED [prefix]: whether TEXT holds each ` ... `-separated part of EXPECTED, in
# order (the first at its start, with `prefix`).
says() {
  local text="$1" rest="$2" part at=0
  while :; do
    part="${rest%% ... *}"
    if [ "$at" -eq 0 ] && [ "${3:-}" = prefix ]; then
      [[ "$text" == "$part"* ]] || return 1
    else
      [[ "$text" == *"$part"* ]] || return 1
    fi
    text="${text#*"$part"}"
    at=1
    [[ "$rest" == *" ... "* ]] || return 0
    rest="${rest#* ... }"
  done
}

@test "docs/refusals.md: every row of the refusal table is what the module answers for its example" {
  local count=0 failures=0
  while IFS= read -r row; do
    count=$((count + 1))
    local answer start example fixture settings granted request
    answer="$(awk -F' \\| ' '{print $1}' <<<"$row" | sed 's/^| //')"
    start="$(awk -F' \\| ' '{print $2}' <<<"$row" | sed 's/^`//; s/`$//')"
    example="$(awk -F' \\| ' '{print $3}' <<<"$row")"
    # `FIXTURE`, then ` with `SETTINGS``, then `, lookups not granted`.
    local form='^`([^`]+)`( with `([^`]+)`)?(, lookups not granted)?$'
    [[ "$example" =~ $form ]] ||
      { echo "FAIL row $count: the example '$example' is not \`FIXTURE\` [with \`SETTINGS\`] [, lookups not granted]" >&3; failures=$((failures + 1)); continue; }
    fixture="${BASH_REMATCH[1]}" settings="${BASH_REMATCH[3]}" granted="${BASH_REMATCH[4]:+no}"
    case "$fixture" in
      corpus/*) request="$BATS_FILE_TMPDIR/$fixture" ;;
      *) request="$FIXTURES/$fixture" ;;
    esac
    local args=(-r "$request")
    case "$settings" in
      "") ;;
      "{"*) args+=(--settings-json "$settings") ;;
      deploy/*)
        # A preset's settings, as the ClusterAdmissionPolicy carries them.
        "$POLICY_HOST" verify-manifest "$ROOT/$settings" "$POLICY" | jq .settings >"$BATS_TEST_TMPDIR/preset.json"
        args+=(-s "$BATS_TEST_TMPDIR/preset.json") ;;
      *) args+=(-s "$SETTINGS/$settings") ;;
    esac
    # The lookups the write makes are answered as recorded (kwctl's session), unless the row
    # is about a lookup the policy is not granted.
    if [ -z "$granted" ] && [ -f "${request%.json}.session.yml" ]; then
      args+=(--allow-context-aware --replay-host-capabilities-interactions "${request%.json}.session.yml")
    fi
    [ -f "$request" ] || { echo "FAIL row $count: no fixture '$fixture'" >&3; failures=$((failures + 1)); continue; }
    run --separate-stderr "$KWCTL" run "${args[@]}" "file://$POLICY"
    local got text
    case "$answer" in
      settings)
        [ "$status" -ne 0 ] || { echo "FAIL row $count: settings accepted" >&3; failures=$((failures + 1)); continue; }
        text="$stderr" ;;
      warning)
        got="$(jq -r 'if .allowed then "warning" else "refused" end' <<<"$output")"
        text="$(jq -r '.warnings[0] // ""' <<<"$output")" ;;
      *)
        got="$(jq -r '.status.code // "none"' <<<"$output")"
        text="$(jq -r '.status.message // ""' <<<"$output")" ;;
    esac
    if [ "$answer" != settings ] && [ "$got" != "$answer" ]; then
      echo "FAIL row $count ($fixture): answered $got, the table says $answer" >&3
      failures=$((failures + 1))
    elif [ "$answer" = settings ] && ! says "$text" "$start"; then
      echo "FAIL row $count ($fixture): the error lacks '$start': $text" >&3
      failures=$((failures + 1))
    elif [ "$answer" != settings ] && ! says "$text" "$start" prefix; then
      echo "FAIL row $count ($fixture): the message does not start with '$start': $text" >&3
      failures=$((failures + 1))
    fi
  done < <(rows)
  [ "$count" -ge 30 ] || fail "only $count rows were read"
  [ "$failures" -eq 0 ] || fail "$failures of $count rows do not match the module"
}

@test "docs/refusals.md: the refusal table names every rule's refusal and every warning the rules give" {
  # Each outcome of the rules (src/rules/same_owner.rs) that refuses or warns has a row; a new rule
  # without a row fails here.
  local table
  table="$(rows)"
  for phrase in 'would change its owner to' 'which handed it over to' 'and this UPDATE would write revision' \
    'keeps the owner but drops the' 'which is not a revision' 'which does not name a successor' \
    'has no owner, and this UPDATE would give it the owner' 'but orphaning is disabled' \
    'is not a cluster-scoped owner kind' 'is owned by a namespaced owner' 'adopted by owner' \
    'orphaned: it no longer has owner' 'handed over from owner' 'cannot be read' 'unknown operation' \
    'Provided settings are not valid' 'may not create it: only writers bound to owner' \
    'may not change it: only writers bound to owner' 'may not delete it' \
    'would be created with the owners of two tools' 'and this UPDATE would give it a second owner' \
    'keys of aliased tools are one owner on an object created with them all' \
    'the successor its owner named in single-owner.kubewarden.io/handover-to: remove the former owner' \
    'is finished' ', which manages its owner ' \
    "The new owner does not replace the current one by olm-v0's upgrade rule (its replacement chain: " \
    "Whether the new owner replaces the current one by olm-v0's upgrade rule could not be checked, and the policy refuses what it cannot check: " \
    "The owner's installer could not be looked up, and the policy refuses what it cannot check: " \
    "carries the keys of two tools that one tool's rule relates, and whether they name one owner cannot be decided: "; do
    grep -qF -- "$phrase" <<<"$table" || fail "no row for '$phrase'"
  done
  # And the rules give no refusal or warning beyond those: one per Transition that is not an
  # acceptance, plus the four checks of the new object.
  local outcomes
  outcomes="$(grep -cE '^\s+Transition::[A-Za-z]+( \{[^}]*\})?( if [^=]*)? => Verdict::(reject|warn)\(' "$ROOT/src/rules/same_owner.rs")"
  [ "$outcomes" -eq 8 ] || fail "src/rules/same_owner.rs judges $outcomes transitions with a refusal or warning; the table knows 8"
  # Across tools: docs/refusals.md lists each answer of src/rules/cross_tool.rs by its phrase; the
  # four of adoption and orphaning are the rows above.
  local listed phrase
  listed="$(across | grep -c '^- ')"
  while IFS= read -r phrase; do
    grep -qF -- "$phrase" "$ROOT/src/rules/cross_tool.rs" || fail "docs/refusals.md lists '$phrase', which src/rules/cross_tool.rs does not say"
  done < <(across | sed -n 's/^- [^`]*`\([^`]*\)`.*/\1/p')
  outcomes="$(grep -cE 'Verdict::(reject|warn)\(' "$ROOT/src/rules/cross_tool.rs")"
  [ "$outcomes" -eq $((listed + 4)) ] ||
    fail "src/rules/cross_tool.rs answers with $outcomes refusals or warnings; docs/refusals.md lists $listed, and adoption and orphaning are 4"
}

@test "README: each answer met most quotes a row of docs/refusals.md's table" {
  # README's short list (between its markers) names each answer by a part of its message: a
  # row of the checked table must hold it (each part between ` ... `, in order).
  local count=0 phrase row found
  while IFS= read -r phrase; do
    count=$((count + 1))
    found=
    while IFS= read -r row; do
      says "$(awk -F' \\| ' '{print $2}' <<<"$row")" "$phrase" && { found=1; break; }
    done < <(rows)
    [ -n "$found" ] || fail "README quotes '$phrase', which no row of docs/refusals.md's table holds"
  done < <(sed -n '/^<!-- answers:begin -->$/,/^<!-- answers:end -->$/p' "$ROOT/README.md" |
    sed -n 's/^| [^|`]*`\([^`]*\)`.*/\1/p')
  [ "$count" -ge 5 ] || fail "README's list of answers met most has $count entries"
}
