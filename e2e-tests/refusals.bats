#!/usr/bin/env bats
# README's "When a write is refused" table, row by row, against the built module: each row's
# example (an e2e fixture, with its settings) must still be answered as the row says, and its
# message must still start with the row's text.

load common

# The rows between the markers, one per line: answer, message start, example (each cell with
# its Markdown code spans unwrapped).
rows() {
  sed -n '/^<!-- refusals:begin -->$/,/^<!-- refusals:end -->$/p' "$ROOT/README.md" |
    grep '^| ' | tail -n +2 | grep -v '^|---'
}

@test "README: every row of the refusal table is what the module answers for its example" {
  local count=0 failures=0
  while IFS= read -r row; do
    count=$((count + 1))
    local answer start example fixture settings
    answer="$(awk -F' \\| ' '{print $1}' <<<"$row" | sed 's/^| //')"
    start="$(awk -F' \\| ' '{print $2}' <<<"$row" | sed 's/^`//; s/`$//')"
    example="$(awk -F' \\| ' '{print $3}' <<<"$row")"
    fixture="$(sed -n 's/^`\([^`]*\)`.*/\1/p' <<<"$example")"
    settings="$(sed -n 's/^`[^`]*` with `\([^`]*\)`$/\1/p' <<<"$example")"
    local args=(-r "$FIXTURES/$fixture")
    case "$settings" in
      "") ;;
      "{"*) args+=(--settings-json "$settings") ;;
      identity/* | all-tools.yaml)
        # A preset's settings, as the ClusterAdmissionPolicy carries them.
        "$POLICY_HOST" verify-manifest "$ROOT/deploy/$settings" "$POLICY" | jq .settings >"$BATS_TEST_TMPDIR/preset.json"
        args+=(-s "$BATS_TEST_TMPDIR/preset.json") ;;
      *) args+=(-s "$SETTINGS/$settings") ;;
    esac
    [ -f "$FIXTURES/$fixture" ] || { echo "FAIL row $count: no fixture '$fixture'" >&3; failures=$((failures + 1)); continue; }
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
    elif [ "$answer" = settings ] && [[ "$text" != *"$start"* ]]; then
      echo "FAIL row $count ($fixture): the error lacks '$start': $text" >&3
      failures=$((failures + 1))
    elif [ "$answer" != settings ] && [[ "$text" != "$start"* ]]; then
      echo "FAIL row $count ($fixture): the message does not start with '$start': $text" >&3
      failures=$((failures + 1))
    fi
  done < <(rows)
  [ "$count" -ge 20 ] || fail "only $count rows were read"
  [ "$failures" -eq 0 ] || fail "$failures of $count rows do not match the module"
}

@test "README: the refusal table names every rule's refusal and every warning the rules give" {
  # Each outcome of the rules (src/owner.rs) that refuses or warns has a row; a new rule
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
    'is finished'; do
    grep -qF -- "$phrase" <<<"$table" || fail "no row for '$phrase'"
  done
  # And the rules give no refusal or warning beyond those: one per Transition that is not an
  # acceptance, plus the four checks of the new object.
  local outcomes
  outcomes="$(grep -cE '^\s+Transition::[A-Za-z]+( \{[^}]*\})?( if [^=]*)? => Verdict::(reject|warn)\(' "$ROOT/src/same_owner.rs")"
  [ "$outcomes" -eq 8 ] || fail "src/same_owner.rs judges $outcomes transitions with a refusal or warning; the table knows 8"
  # Across tools: README lists each answer of src/cross_tool.rs by its phrase; the four of
  # adoption and orphaning are the rows above.
  local listed phrase
  listed="$(sed -n '/^<!-- across:begin -->$/,/^<!-- across:end -->$/p' "$ROOT/README.md" | grep -c '^- ')"
  while IFS= read -r phrase; do
    grep -qF -- "$phrase" "$ROOT/src/cross_tool.rs" || fail "README lists '$phrase', which src/cross_tool.rs does not say"
  done < <(sed -n '/^<!-- across:begin -->$/,/^<!-- across:end -->$/p' "$ROOT/README.md" | sed -n 's/^- [^`]*`\([^`]*\)`.*/\1/p')
  outcomes="$(grep -cE 'Verdict::(reject|warn)\(' "$ROOT/src/cross_tool.rs")"
  [ "$outcomes" -eq $((listed + 4)) ] ||
    fail "src/cross_tool.rs answers with $outcomes refusals or warnings; README lists $listed, and adoption and orphaning are 4"
}
