#!/usr/bin/env bats
# The race through the real OLM v1 (scripts/cluster-olm.sh runs it twice, each on a cluster of
# its own: OLM_RACE_MODE=without, whose only policy webhook, e2e-tests/cluster/null-policy.yaml,
# selects none of OLM's objects, then OLM_RACE_MODE=with, under deploy/olm-v1.yaml).
#
# Two operator-controller processes run without leader election (two replicas at once, as
# during a rolling upgrade: each reconciles every extension), and each round creates two
# ClusterExtensions at the same moment, widgets-operator and gadgets-operator, whose bundles
# both ship the CRD widgets.example.com. Helm's ownership check is the client's: read, then
# write. The witness webhook holds every CRD CREATE for OLM_RACE_SLEEP seconds (the API server
# calls validating webhooks in parallel and commits when the last one answers), so both
# installers read "no such CRD" and both send their CREATE: one is stored, the other fails
# (AlreadyExists) and its release is recorded as failed. Its retries are upgrades of that
# failed release, which Helm checks against the release's own manifest (the CRD is in it), so
# no ownership check stops them; they patch the CRD to the loser's labels, annotations and
# owner reference. Without the policy the loser then reports Installed=True too, while the CRD
# names one of them (the two extensions' reconcilers hand it back and forth); with the policy
# every UPDATE that changes the CRD's owner is refused. (Some retries fail before admission:
# the API server refuses a patch that leaves two controller ownerReferences, and the two
# processes collide on the Helm release records of one extension. Those retry with backoff.)
#
# A round ends when both extensions report Installed=True at once (then the reconcilers go on
# handing the CRD back and forth, and each one's Installed may flap), or one does and the other
# is refused for good (the policy's refusal of its owner change, or Helm's ownership check when
# the CREATEs did not overlap), or after OLM_RACE_SETTLE seconds (60): how long the second
# extension takes to get through without the policy varies widely (the API server refuses
# most of its retries, which would leave the CRD two controller ownerReferences, and the two
# processes collide on its Helm release records), from about ten seconds to minutes.

load common

SETTLE="${OLM_RACE_SETTLE:-60}"

setup_file() {
  installer race-w race-installer
  installer race-g race-installer
}

# round_records W G: the witness's records of the round's extensions' writes of the CRD.
round_records() {
  witness ".name == \"$CRD\" and ([.object.labels[\"olm.operatorframework.io/owner-name\"], .oldObject.labels[\"olm.operatorframework.io/owner-name\"]] | any(. == \"$1\" or . == \"$2\"))"
}

# refusals FROM: the policy's refusals of an UPDATE of the CRD, in the backend's log after
# line FROM.
refusals() {
  tail -n +"$(($1 + 1))" "$BACKEND_LOG" |
    jq -s --arg n "$CRD" 'map(select(.name == $n and .operation == "UPDATE" and .verdict.allowed == false)) | length'
}

# releases EXTENSION: the extension's Helm release records (operator-controller keeps them in
# olmv1-system): version:status, oldest first.
releases() {
  kubectl get secrets -n olmv1-system -l "owner=operator-controller,name=$1,type=index" -o json |
    jq -r '[.items[].metadata.labels | {v: (.version | tonumber), s: .status}] | sort_by(.v) | map("v\(.v):\(.s)") | join(" ")'
}

# policy_refusal: the first error operator-controller logged that is the policy's refusal.
policy_refusal() {
  python3 - "$OLM_POLICY_WEBHOOK" "$OLM_SUITE_DIR"/logs/operator-controller-*.log <<'PY'
import json, re, sys
webhook = sys.argv[1]
for path in sys.argv[2:]:
    for line in open(path, errors="replace"):
        for m in re.finditer(r'err="((?:[^"\\]|\\.)*)"', line):
            text = json.loads('"' + m.group(1) + '"')
            if f'admission webhook "{webhook}" denied the request' in text:
                print(text)
                sys.exit(0)
PY
}

installed() { condition "$1" Installed | jq -r '.status // "-"'; }

# settle W G FROM START: waits for the end of the round (see above); prints how it ended and
# the two extensions' Installed status then.
settle() {
  local w="$1" g="$2" from="$3" start="$4" wi gi loser message
  while :; do
    wi="$(installed "$w")"
    gi="$(installed "$g")"
    if [ "$wi" = True ] && [ "$gi" = True ]; then
      echo "both $wi $gi"
      return
    fi
    if [ "$wi" = True ] || [ "$gi" = True ]; then
      if [ "$wi" = True ]; then loser="$g"; else loser="$w"; fi
      message="$(condition "$loser" Progressing | jq -r '.message // ""')"
      if [ "$(refusals "$from")" -gt 0 ] && [ $((SECONDS - start)) -ge 5 ]; then
        echo "policy $wi $gi"
        return
      fi
      if [[ "$message" == *"cannot be managed by operator-controller"* ]]; then
        echo "helm $wi $gi"
        return
      fi
    fi
    if [ $((SECONDS - start)) -ge "$SETTLE" ]; then
      echo "timeout $wi $gi"
      return
    fi
    sleep 0.5
  done
}

# gone: no CRD and no object the extensions installed is left.
gone() {
  ! kubectl get crd "$CRD" >/dev/null 2>&1 &&
    [ -z "$(kubectl get clusterrole,clusterrolebinding -l olm.operatorframework.io/owner-kind=ClusterExtension -o name)" ] &&
    [ -z "$(kubectl get deployment,serviceaccount -A -l olm.operatorframework.io/owner-kind=ClusterExtension -o name)" ]
}

# clean_round W G: the extensions, then what they installed (no garbage collector runs here).
# A reconcile already under way in either process may still write after its extension is
# gone (a CRD CREATE waits OLM_RACE_SLEEP seconds at the witness): delete until nothing is
# left for a second.
clean_round() {
  local attempt
  kubectl delete clusterextension "$1" "$2" --ignore-not-found --wait=true --timeout=90s >/dev/null
  sleep "${OLM_RACE_SLEEP:-2}"
  for attempt in 1 2 3 4 5; do
    kubectl delete crd "$CRD" --ignore-not-found --wait=true --timeout=60s >/dev/null
    kubectl delete clusterrole,clusterrolebinding -l olm.operatorframework.io/owner-kind=ClusterExtension \
      --ignore-not-found >/dev/null
    kubectl delete deployment,serviceaccount -A -l olm.operatorframework.io/owner-kind=ClusterExtension \
      --ignore-not-found >/dev/null
    sleep 1
    gone && return 0
  done
  echo "round clean-up: objects are left: $(kubectl get crd,clusterrole,clusterrolebinding,deployment,serviceaccount -A \
    -l olm.operatorframework.io/owner-kind=ClusterExtension -o name)"
  return 1
}

# plugin_finds CRD: the kind of kubectl single-owner's finding on the CRD (none: empty), from
# a scan of the whole cluster under deploy/all-tools.yaml (whose alias of OLM v1 and Helm reads
# the release annotations OLM v1's Helm applier writes), as a user would run it.
plugin_finds() {
  local out status=0
  out="$("$ROOT/target/host/kubectl-single_owner" owners --preset "$ROOT/deploy/all-tools.yaml" -o json 2>&1)" || status=$?
  # Exit 0 or 1 with the scan's JSON; anything else is reported as what it found, and fails.
  if [ "$status" -gt 1 ] || ! jq -e .findings >/dev/null 2>&1 <<<"$out"; then
    echo "the plugin could not run (exit $status): ${out:0:300}"
    return
  fi
  jq -r --arg crd "$1" '[.findings[] | select(.object.kind == "CustomResourceDefinition" and .object.name == $crd) | .kind] | unique | join(",")' <<<"$out"
}

@test "race, $OLM_RACE_MODE the policy ($OLM_PRESET): two operator-controllers, two extensions shipping one CRD created at once, $OLM_RACE_ROUNDS rounds" {
  local rounds="$OLM_RACE_ROUNDS" both=0 by_policy=0 by_helm=0 stuck=0 raced=0 splits=0
  local r w g start from end wi gi meta creates overlap sent refused line loser progressing message
  local two found plugin_expected=0 plugin_found=0 plugin_unstable=0
  local -a plugin_missed=() plugin_extra=()
  local records="$OLM_RUN_DIR/race-$OLM_RACE_MODE.rounds"
  : >"$records"
  gone || clean_round none none
  say "per round: Installed of the widgets-operator and gadgets-operator extensions; how the round ended; the stored CRD's owner labels, Helm annotations, ownerReferences; the CRD CREATEs (s from the first: start-end at the admission webhooks), and the owner-changing UPDATEs sent (refused by the policy)"
  for r in $(seq 1 "$rounds"); do
    w="w$r-$OLM_RACE_MODE"
    g="g$r-$OLM_RACE_MODE"
    from="$(wc -l <"$BACKEND_LOG")"
    start=$SECONDS
    # One apply, both at the same moment.
    run kubectl apply -f - <<<"$(jq -n --argjson a "$(extension "$w" widgets-operator 1.0.0 race-w race-installer)" \
      --argjson b "$(extension "$g" gadgets-operator 1.0.0 race-g race-installer)" '{apiVersion: "v1", kind: "List", items: [$a, $b]}')"
    assert_success
    read -r end wi gi <<<"$(settle "$w" "$g" "$from" "$start")"
    meta="$(owner_metadata customresourcedefinition "$CRD" 2>/dev/null || echo '{}')"
    # Whether the CRD's labels and its controller ownerReference (the owner the garbage
    # collector follows) name two extensions.
    split="$(kubectl get customresourcedefinition "$CRD" -o json 2>/dev/null | jq -r '
      (.metadata.labels["olm.operatorframework.io/owner-name"] // "") as $l |
      ([.metadata.ownerReferences[]? | select(.controller == true) | .name][0] // "") as $c |
      if $l != "" and $c != "" and $l != $c then "SPLIT: its labels name \($l), its controller \($c)"
      else "labels and controller name one extension" end' || echo "no CRD")"
    [[ "$split" == SPLIT* ]] && splits=$((splits + 1))
    # What kubectl single-owner finds on the CRD as the round left it: two owners exactly
    # when its labels name one extension and its controller or its Helm release another. Both
    # operator-controllers may still be rewriting the CRD: the scan counts only when the CRD's
    # resourceVersion is the same before and after it (a few tries).
    two=unstable found=""
    for _ in 1 2 3 4 5; do
      local before after crd
      before="$(kubectl get customresourcedefinition "$CRD" -o jsonpath='{.metadata.resourceVersion}' 2>/dev/null || true)"
      found="$(plugin_finds "$CRD")"
      crd="$(kubectl get customresourcedefinition "$CRD" -o json 2>/dev/null || echo '{}')"
      after="$(jq -r '.metadata.resourceVersion // ""' <<<"$crd")"
      if [ "$before" = "$after" ]; then
        two="$(jq -r '
          (.metadata.labels["olm.operatorframework.io/owner-name"] // "") as $l |
          ([.metadata.ownerReferences[]? | select(.controller == true) | .name][0] // "") as $c |
          (.metadata.annotations["meta.helm.sh/release-name"] // "") as $h |
          $l != "" and (($c != "" and $c != $l) or ($h != "" and $h != $l))' <<<"$crd")"
        break
      fi
      sleep 1
    done
    [ "$two" = unstable ] && plugin_unstable=$((plugin_unstable + 1))
    [ "$two" = true ] && plugin_expected=$((plugin_expected + 1))
    [ "$found" = two-owners ] && plugin_found=$((plugin_found + 1))
    [ "$two" = true ] && [ "$found" != two-owners ] && plugin_missed+=("round $r: $(jq -c "{labels: .metadata.labels, annotations: .metadata.annotations, ownerReferences: .metadata.ownerReferences}" <<<"$crd")")
    [ "$two" = false ] && [ -n "$found" ] && plugin_extra+=("round $r: $found on $meta")
    creates="$(round_records "$w" "$g" | jq -s -r 'map(select(.operation == "CREATE" and (.dryRun | not))) | sort_by(.start) |
      (.[0].start // 0) as $t0 | map("\(.object.labels["olm.operatorframework.io/owner-name"]) \(.start - $t0 | . * 100 | round / 100)-\(.end - $t0 | . * 100 | round / 100)") | join(", ")')"
    overlap="$(round_records "$w" "$g" | jq -s 'map(select(.operation == "CREATE" and (.dryRun | not))) | sort_by(.start) |
      if length >= 2 then .[1].start < .[0].end else false end')"
    [ "$overlap" = true ] && raced=$((raced + 1))
    sent="$(round_records "$w" "$g" | jq -s 'map(select(.operation == "UPDATE" and .object.labels["olm.operatorframework.io/owner-name"] != .oldObject.labels["olm.operatorframework.io/owner-name"])) | length')"
    refused="$(refusals "$from")"
    case "$end" in
      both) both=$((both + 1)); end="BOTH Installed=True" ;;
      policy) by_policy=$((by_policy + 1)); end="one installed, the other's owner change refused by the policy" ;;
      helm) by_helm=$((by_helm + 1)); end="one installed, the other refused by Helm's ownership check" ;;
      timeout)
        stuck=$((stuck + 1))
        if [ "$wi" = True ] || [ "$gi" = True ]; then
          end="one installed, the other still retrying after ${SETTLE} s"
        else
          end="neither installed after ${SETTLE} s"
        fi ;;
    esac
    line="round $r ($((SECONDS - start)) s): $w Installed=$wi, $g Installed=$gi: $end; CRD $meta ($split); CREATEs [$creates]; owner-changing UPDATEs $sent (refused $refused); kubectl single-owner: ${found:-no finding}"
    echo "$line" >>"$records"
    say "$line"
    say "  Helm release records: $w: $(releases "$w"); $g: $(releases "$g")"
    if [ "$wi" != True ] || [ "$gi" != True ]; then
      # What the extension left out sees.
      if [ "$wi" = True ]; then loser="$g"; else loser="$w"; fi
      progressing="$(condition "$loser" Progressing)"
      message="$(jq -r '.message // ""' <<<"$progressing")"
      echo "  $loser Progressing=$(jq -r '"\(.status) reason=\(.reason)"' <<<"$progressing"): $message" >>"$records"
      say "  $loser Progressing=$(jq -r '"\(.status) reason=\(.reason)"' <<<"$progressing"): ${message:0:400}"
    fi
    clean_round "$w" "$g"
  done
  echo "$both $rounds" >"$OLM_RUN_DIR/race-$OLM_RACE_MODE.count"
  line="kubectl single-owner owners (deploy/all-tools.yaml) after each round: the CRD found with two owners in $plugin_found of $rounds rounds, in each of the $plugin_expected whose CRD was left with two; missed: ${plugin_missed[*]:-none}; found where there were not two: ${plugin_extra[*]:-none}; rounds whose CRD was still being rewritten: $plugin_unstable"
  echo "$line" >>"$records"
  say "$line"
  assert_equal "${#plugin_missed[@]}" 0
  assert_equal "${#plugin_extra[@]}" 0
  # Through the policy, the plugin finds no CRD with two owners.
  [ "$OLM_RACE_MODE" = without ] || assert_equal "$plugin_found" 0
  line="$OLM_RACE_MODE the policy: $both of $rounds rounds both Installed=True ($raced rounds with both CRD CREATEs in flight at once; $splits rounds left the CRD's labels and controller naming two extensions); in the others, the second extension was refused by the policy in $by_policy, by Helm's ownership check in $by_helm, still retrying (other errors) in $stuck"
  echo "$line" >>"$records"
  say "$line"
  if [ "$OLM_RACE_MODE" = with ]; then
    # Through the policy, never two owners: nor labels and controller naming two.
    assert_equal "$both" 0
    assert_equal "$splits" 0
    # What operator-controller got back when the policy refused the second extension's owner
    # change (the two processes overwrite each other's conditions, so it is read from their
    # logs; the condition shows it between their other errors).
    message="$(policy_refusal)"
    if [ "$by_policy" -gt 0 ]; then
      refute [ -z "$message" ]
    fi
    if [ -n "$message" ]; then
      record race-refusal.txt "$message"
      say "the policy's refusal, as operator-controller reports it (${OLM_RUN_DIR#"$ROOT"/}/race-refusal.txt): $message"
    fi
  fi
}
