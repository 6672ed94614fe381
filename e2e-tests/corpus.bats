#!/usr/bin/env bats
# The lifecycle corpus (e2e-tests/corpus/): every preset in deploy/ against what every tool
# writes through its own lifecycle, through the built module and the host (kwctl run when it is
# installed, else policy-host), each write as the API server would send it, selected by the
# preset's rules, objectSelector and matchConditions first (policy-host selects). A tool's
# ordinary write must be accepted; a write over another owner's object refused (403) by the
# presets it names. The lookups a write makes are replayed as kwctl's recorded sessions.

load common

setup_file() {
  export CORPUS="$BATS_FILE_TMPDIR/corpus"
  python3 "$ROOT/e2e-tests/corpus/corpus.py" build "$CORPUS"
  mkdir -p "$CORPUS/settings"
}

# corpus PRESET: runs every case of the preset; fails listing each write answered wrongly.
corpus() {
  local preset="$1" settings requests=() failures=() line req session expect tool name out allowed code
  settings="$CORPUS/settings/$(tr / _ <<<"$preset").json"
  "$POLICY_HOST" verify-manifest "$ROOT/$preset" "$POLICY" | jq .settings >"$settings"
  mapfile -t cases < <(awk -F'\t' -v p="$preset" '$1 == p' "$CORPUS/cases.tsv")
  [ "${#cases[@]}" -gt 0 ] || fail "no case runs against $preset"
  for line in "${cases[@]}"; do requests+=(-r "$(cut -f4 <<<"$line")"); done
  declare -A sent=()
  while read -r verdict file rest; do
    [ "$verdict" = sent ] && sent["$file"]=1
  done < <("$POLICY_HOST" selects "$ROOT/$preset" "${requests[@]}")
  local accepted=0 refused=0 unseen=0
  for line in "${cases[@]}"; do
    IFS=$'\t' read -r _ tool name req session expect <<<"$line"
    if [ -z "${sent[$req]:-}" ]; then
      # Not sent to the policy: the API server lets the write through.
      [ "$expect" = accept ] || failures+=("$tool/$name: a write over another owner that $preset never sees")
      unseen=$((unseen + 1))
      continue
    fi
    out="$("$KWCTL" run --allow-context-aware --replay-host-capabilities-interactions "$session" \
      -r "$req" -s "$settings" "file://$POLICY" 2>/dev/null)" || { failures+=("$tool/$name: the host failed"); continue; }
    allowed="$(jq -r .allowed <<<"$out")"
    code="$(jq -r '.status.code // ""' <<<"$out")"
    if [ "$expect" = accept ] && [ "$allowed" != true ]; then
      failures+=("$tool/$name: a tool's own write refused: $(jq -r .status.message <<<"$out")")
    elif [ "$expect" = refuse ] && { [ "$allowed" != false ] || [ "$code" != 403 ]; }; then
      failures+=("$tool/$name: a second owner's write not refused with 403: $out")
    fi
    [ "$allowed" = true ] && accepted=$((accepted + 1)) || refused=$((refused + 1))
  done
  echo "$preset: ${#cases[@]} writes, $accepted accepted, $refused refused, $unseen not sent" >&3
  if [ "${#failures[@]}" -gt 0 ]; then
    printf '%s\n' "${failures[@]}"
    fail "$preset: ${#failures[@]} of ${#cases[@]} writes answered wrongly"
  fi
}

@test "the corpus holds together: every preset listed with its tools, every write cites its source" {
  run python3 "$ROOT/e2e-tests/corpus/corpus.py" check
  assert_success
  assert_output --partial "10 tools"
}

@test "corpus: deploy/olm-v1.yaml" { corpus deploy/olm-v1.yaml; }
@test "corpus: deploy/olm-v0.yaml" { corpus deploy/olm-v0.yaml; }
@test "corpus: deploy/helm.yaml" { corpus deploy/helm.yaml; }
@test "corpus: deploy/argocd.yaml" { corpus deploy/argocd.yaml; }
@test "corpus: deploy/argocd-label-tracking.yaml" { corpus deploy/argocd-label-tracking.yaml; }
@test "corpus: deploy/flux.yaml" { corpus deploy/flux.yaml; }
@test "corpus: deploy/applyset.yaml" { corpus deploy/applyset.yaml; }
@test "corpus: deploy/kapp.yaml" { corpus deploy/kapp.yaml; }
@test "corpus: deploy/timoni.yaml" { corpus deploy/timoni.yaml; }
@test "corpus: deploy/crossplane.yaml" { corpus deploy/crossplane.yaml; }
@test "corpus: deploy/all-tools.yaml" { corpus deploy/all-tools.yaml; }
@test "corpus: deploy/identity/olm-v1-operator.yaml" { corpus deploy/identity/olm-v1-operator.yaml; }
@test "corpus: deploy/identity/flux-tenants.yaml" { corpus deploy/identity/flux-tenants.yaml; }
@test "corpus: deploy/identity/argocd-impersonation.yaml" { corpus deploy/identity/argocd-impersonation.yaml; }
@test "corpus: deploy/identity/helm-per-install.yaml" { corpus deploy/identity/helm-per-install.yaml; }
@test "corpus: deploy/identity/helm-per-install-stamp.yaml" { corpus deploy/identity/helm-per-install-stamp.yaml; }

@test "every preset in deploy/ has a corpus test in this file" {
  local m
  while read -r m; do
    grep -qF "corpus $m;" "$BATS_TEST_FILENAME" || fail "$m has no test here"
  done < <(cd "$ROOT" && find deploy -name '*.yaml' ! -path 'deploy/rbac/*' | sort)
}
