#!/usr/bin/env bats
# Each rule through a real kube-apiserver: kubectl writes as users and tools do, the API server
# calls the webhooks that kubewarden-controller would make of deploy/*.yaml, the backend runs
# the built module. What kubectl prints is what a user sees.

load common

setup_file() {
  # A CRD whose custom resources the tests write (unowned itself), with a status subresource.
  kubectl apply -f - <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.e2e.example.com}
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
  kubectl wait --for condition=Established --timeout 30s crd/gadgets.e2e.example.com
}


@test "a second ClusterExtension relabelling a CRD is Forbidden, with the policy's message; the CRD keeps its owner" {
  local crd="things$BATS_TEST_NUMBER.e2e.example.com"
  apply "$(crd_manifest "$crd" ext-a)"
  assert_success
  run --separate-stderr kubectl label crd "$crd" "$OLM_NAME=ext-b" --overwrite
  assert_forbidden "$OLM_WEBHOOK" "CustomResourceDefinition \"$crd\" is owned by [$OLM_NAME=ext-a], and this UPDATE would change its owner to [$OLM_NAME=ext-b]"
  assert_equal "$(label_of crd "$crd" "" "$OLM_NAME")" ext-a
}

@test "a refusal by a rule reaches the client as HTTP 403 Forbidden" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" "{\"$OLM_NAME\": \"ext-a\"}")"
  assert_success
  # The PATCH kubectl sends, judged by the API server's answer: its HTTP status and Status
  # object (kubectl's request log changed its format in 1.36, the answer did not).
  api PATCH "/api/v1/namespaces/default/configmaps/$cm" application/merge-patch+json \
    "{\"metadata\": {\"labels\": {\"$OLM_NAME\": \"ext-b\"}}}"
  assert_equal "$api_code" 403
  assert_equal "$(jq -r '.kind + " " + .status + " " + (.code | tostring)' <<<"$output")" "Status Failure 403"
  [[ "$(jq -r .message <<<"$output")" == "admission webhook \"$OLM_WEBHOOK\" denied the request: ConfigMap \"$cm\""* ]] ||
    fail "$output"
  assert_equal "$(label_of configmap "$cm" default "$OLM_NAME")" ext-a
  # Without a reason in the webhook's status, kubectl prints none (policy-server sets none).
  run --separate-stderr kubectl label configmap "$cm" "$OLM_NAME=ext-b" --overwrite
  assert_failure
  [[ "$stderr" == *"Error from server: admission webhook \"$OLM_WEBHOOK\" denied the request: ConfigMap \"$cm\""* ]] ||
    fail "$stderr"
}

@test "a cluster-scoped ClusterRole created for a namespaced Extension is Forbidden" {
  local role
  role="$(name role)"
  run --separate-stderr kubectl create clusterrole "$role" --verb get --resource configmaps --dry-run=client -o json
  apply "$(jq --arg k "$OLM_KIND" --arg n "$OLM_NAME" '.metadata.labels = {($k): "Extension", ($n): "ext-a"}' <<<"$output")"
  assert_forbidden "$OLM_WEBHOOK" "ClusterRole \"$role\" is cluster-scoped, but its owner kind $OLM_KIND=Extension is not a cluster-scoped owner kind"
  run kubectl get clusterrole "$role"
  assert_failure
}

@test "merge patch and JSON patch that change the owner are Forbidden; one that keeps it is accepted" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-a\"}")"
  assert_success
  run --separate-stderr kubectl patch configmap "$cm" --type merge -p "{\"metadata\":{\"labels\":{\"$OLM_NAME\":\"ext-b\"}}}"
  assert_forbidden "$OLM_WEBHOOK" "ConfigMap \"$cm\" in namespace \"default\" is owned by [$OLM_NAME=ext-a]"
  run --separate-stderr kubectl patch configmap "$cm" --type json \
    -p '[{"op": "replace", "path": "/metadata/labels/olm.operatorframework.io~1owner-name", "value": "ext-c"}]'
  assert_forbidden "$OLM_WEBHOOK" "[$OLM_NAME=ext-c]"
  run --separate-stderr kubectl patch configmap "$cm" --type merge -p '{"data":{"k":"changed"}}'
  assert_success
  assert_equal "$(kubectl get configmap "$cm" -o jsonpath='{.data.k}')" changed
}

@test "replace: a stale resourceVersion is a 409 Conflict before admission, a fresh one is judged (403)" {
  local cm stale
  cm="$(name cm)"
  apply "$(configmap "$cm" "{\"$OLM_NAME\": \"ext-a\"}")"
  stale="$(kubectl get configmap "$cm" -o json)"
  kubectl patch configmap "$cm" --type merge -p '{"data":{"k":"moved on"}}' >/dev/null
  run --separate-stderr kubectl replace -f - <<<"$(jq '.data.k = "stale"' <<<"$stale")"
  assert_failure
  # kubectl names the Status's reason: Conflict (409), from the resourceVersion check.
  [[ "$stderr" == *"Error from server (Conflict)"* ]] || fail "$stderr"
  assert_equal "$(kubectl get configmap "$cm" -o jsonpath='{.data.k}')" "moved on"
  run --separate-stderr kubectl replace -f - <<<"$(kubectl get configmap "$cm" -o json | jq --arg n "$OLM_NAME" '.metadata.labels[$n] = "ext-b"')"
  assert_forbidden "$OLM_WEBHOOK" "is owned by [$OLM_NAME=ext-a]"
  run --separate-stderr kubectl replace -f - <<<"$(kubectl get configmap "$cm" -o json | jq '.data.k = "fresh"')"
  assert_success
}

@test "server-side apply: two field managers conflict (409); forcing the other owner's labels is Forbidden" {
  local cm
  cm="$(name cm)"
  run --separate-stderr kubectl apply --server-side --field-manager ext-a -f - <<<"$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-a\"}")"
  assert_success
  # The conflict, as the API server answers it: 409, reason Conflict, a FieldManagerConflict
  # cause on the owner label (its wording differs between versions: 1.20 says `conflict with
  # "ext-a"`, 1.36 `conflicts with "ext-a":`).
  api PATCH "/api/v1/namespaces/default/configmaps/$cm?fieldManager=ext-b" application/apply-patch+yaml \
    "$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-b\"}")"
  assert_equal "$api_code" 409
  assert_equal "$(jq -r .reason <<<"$output")" Conflict
  jq -e --arg f ".metadata.labels.$OLM_NAME" 'any(.details.causes[]; .reason == "FieldManagerConflict" and .field == $f)' \
    <<<"$output" >/dev/null || fail "no FieldManagerConflict on $OLM_NAME: $output"
  assert_equal "$(label_of configmap "$cm" default "$OLM_NAME")" ext-a
  run --separate-stderr kubectl apply --server-side --field-manager ext-b --force-conflicts -f - <<<"$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-b\"}")"
  assert_forbidden "$OLM_WEBHOOK" "is owned by [$OLM_NAME=ext-a], and this UPDATE would change its owner to [$OLM_NAME=ext-b]"
  # The owner's own apply goes through.
  run --separate-stderr kubectl apply --server-side --field-manager ext-a -f - <<<"$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-a\", \"tier\": \"2\"}")"
  assert_success
  assert_equal "$(label_of configmap "$cm" default tier)" 2
}

@test "adoption and orphaning are accepted, and kubectl prints the policy's warnings" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" '{"app": "x"}')"
  run --separate-stderr kubectl label configmap "$cm" "$OLM_NAME=ext-c"
  assert_success
  [[ "$stderr" == *"Warning: ConfigMap \"$cm\" in namespace \"default\" adopted by owner [$OLM_NAME=ext-c]"* ]] || fail "$stderr"
  run --separate-stderr kubectl label configmap "$cm" "$OLM_NAME-"
  assert_success
  [[ "$stderr" == *"Warning: ConfigMap \"$cm\" in namespace \"default\" orphaned: it no longer has owner"* ]] || fail "$stderr"
}

@test "revision fencing: a stale replica's lower revision is Forbidden, a higher one accepted" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"widgets\"}" '{"olm.operatorframework.io/revision": "3"}')"
  run --separate-stderr kubectl annotate configmap "$cm" olm.operatorframework.io/revision=2 --overwrite
  assert_forbidden "$OLM_WEBHOOK" "at revision 3 (olm.operatorframework.io/revision), and this UPDATE would write revision 2"
  run --separate-stderr kubectl annotate configmap "$cm" olm.operatorframework.io/revision=4 --overwrite
  assert_success
}

@test "a custom resource follows the rules; a status write that keeps its owner is decided in the API server (1.30+)" {
  local gadget
  gadget="$(name gadget)"
  apply "$(jq -n --arg n "$gadget" --arg k "$OLM_NAME" '{apiVersion: "e2e.example.com/v1", kind: "Gadget",
    metadata: {name: $n, namespace: "default", labels: {($k): "ext-a"}}, spec: {size: 1}}')"
  assert_success
  run --separate-stderr kubectl label gadget "$gadget" "$OLM_NAME=ext-b" --overwrite
  assert_forbidden "$OLM_WEBHOOK" "Gadget \"$gadget\" in namespace \"default\" is owned by [$OLM_NAME=ext-a]"
  run --separate-stderr kubectl patch gadget "$gadget" --subresource status --type merge -p '{"status":{"ready":true}}'
  assert_success
  assert_equal "$(kubectl get gadget "$gadget" -o jsonpath='{.status.ready}')" true
  needs_request_log
  # The backend saw the CREATE and the refused UPDATE (the API server may judge a refused write
  # twice: once on its cached copy, once more on the stored one). The presets route every
  # subresource (resources */*); a status write that keeps the owner markers is stopped by
  # the generated matchCondition, which kubewarden-controller copies into the webhook on
  # Kubernetes 1.30 or newer: below that the policy sees it, and accepts it.
  local olm="[.[] | select(.policy == \"$(policy_id single-owner-olm-v1)\")]"
  local status
  status="$(requests_for "$gadget" | jq -s "$olm | map(select(.subResource == \"status\"))")"
  if [ "$KUBERNETES_MINOR" -ge 30 ]; then
    assert_equal "$(jq length <<<"$status")" 0
  else
    assert_equal "$(jq length <<<"$status")" 1
    assert_equal "$(jq -c 'map(.verdict.allowed)' <<<"$status")" '[true]'
  fi
  assert_equal "$(requests_for "$gadget" | jq -s "$olm | map(select(.operation == \"CREATE\")) | length")" 1
  [ "$(requests_for "$gadget" | jq -s "$olm | map(select(.operation == \"UPDATE\" and .subResource != \"status\")) | length")" -ge 1 ] ||
    fail "the UPDATE never reached the policy"
}

@test "objects without owner markers never reach a preset's policy (1.30+); below, each accepts them" {
  needs_request_log
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" '{"app": "unowned"}')"
  assert_success
  kubectl label configmap "$cm" app=still-unowned --overwrite >/dev/null
  # The presets select by their generated matchConditions alone (no objectSelector), which
  # kubewarden-controller copies into the webhook only on Kubernetes 1.30 or newer: below
  # that each sees the CREATE and the UPDATE, and accepts both.
  local preset sent
  for preset in olm-v1 olm-v0 helm argocd argocd-label-tracking flux applyset kapp timoni crossplane; do
    sent="$(requests_for "$cm" | jq -s --arg p "$(policy_id "single-owner-$preset")" '[.[] | select(.policy == $p)]')"
    if [ "$KUBERNETES_MINOR" -ge 30 ]; then
      assert_equal "$preset: $(jq length <<<"$sent")" "$preset: 0"
    else
      assert_equal "$preset: $(jq -c 'map(.verdict.allowed)' <<<"$sent")" "$preset: [true,true]"
    fi
  done
}

@test "DELETE of an owned object is not routed by the presets and goes through" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" "{\"$OLM_NAME\": \"ext-a\"}")"
  run --separate-stderr kubectl delete configmap "$cm"
  assert_success
  needs_request_log
  assert_equal "$(requests_for "$cm" | jq -s '[.[] | select(.operation == "DELETE")] | length')" 0
}

@test "Helm preset: another release annotating a release's ClusterRole is Forbidden" {
  local role
  role="$(name role)"
  apply "$(kubectl create clusterrole "$role" --verb get --resource configmaps --dry-run=client -o json |
    jq '.metadata.labels = {"app.kubernetes.io/managed-by": "Helm"} | .metadata.annotations = {"meta.helm.sh/release-name": "widgets-a", "meta.helm.sh/release-namespace": "widgets"}')"
  assert_success
  run --separate-stderr kubectl annotate clusterrole "$role" meta.helm.sh/release-name=widgets-b --overwrite
  assert_forbidden "$(webhook_of single-owner-helm)" \
    "ClusterRole \"$role\" is owned by [meta.helm.sh/release-name=widgets-a], and this UPDATE would change its owner to [meta.helm.sh/release-name=widgets-b]"
}

@test "Argo CD presets: another Application's tracking id, or instance label, is Forbidden" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" '{"app.kubernetes.io/instance": "widgets-staging"}' \
    "{\"argocd.argoproj.io/tracking-id\": \"widgets-staging:/ConfigMap:default/$cm\"}")"
  assert_success
  run --separate-stderr kubectl annotate configmap "$cm" "argocd.argoproj.io/tracking-id=widgets-prod:/ConfigMap:default/$cm" --overwrite
  assert_forbidden "$(webhook_of single-owner-argocd)" "[argocd.argoproj.io/tracking-id=widgets-staging:/ConfigMap:default/$cm]"
  run --separate-stderr kubectl label configmap "$cm" app.kubernetes.io/instance=widgets-prod --overwrite
  assert_forbidden "$(webhook_of single-owner-argocd-label-tracking)" "[app.kubernetes.io/instance=widgets-staging]"
}

# controller_ref KIND NAME: a controller ownerReference to OLM v1's KIND (the owner need not
# exist: no garbage collector runs here).
controller_ref() {
  jq -nc --arg k "$1" --arg n "$2" '[{apiVersion: "olm.operatorframework.io/v1", kind: $k, name: $n,
    uid: "0b5d7e1c-2f3a-4b6c-8d9e-0f1a2b3c4d5e", controller: true, blockOwnerDeletion: false}]'
}

@test "OLM v1 preset: a controller ownerReference to another extension than the labels name is Forbidden; the extension's own is not" {
  local crd other cm
  crd="widgets.$(name ctl).example.com"
  apply "$(crd_manifest "$crd" ext-a | jq --argjson r "$(controller_ref ClusterExtension ext-a)" '.metadata.ownerReferences = $r')"
  assert_success
  # The controller moved to another extension, the labels kept: refused, nothing written.
  api PATCH "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$crd" application/merge-patch+json \
    "{\"metadata\": {\"ownerReferences\": $(controller_ref ClusterExtension ext-b)}}"
  assert_equal "$api_code" 403
  [[ "$(jq -r .message <<<"$output")" == *"its owner keys name [$OLM_KIND=ClusterExtension, $OLM_NAME=ext-a], but its controller ownerReference names ClusterExtension \"ext-b\""* ]] || fail "$output"
  assert_equal "$(kubectl get crd "$crd" -o json | jq -r '.metadata.ownerReferences[0].name')" ext-a
  # Created naming two owners: refused, not stored.
  other="widgets.$(name two).example.com"
  apply "$(crd_manifest "$other" ext-a | jq --argjson r "$(controller_ref ClusterExtension ext-b)" '.metadata.ownerReferences = $r')"
  assert_forbidden "$OLM_WEBHOOK" "but its controller ownerReference names ClusterExtension \"ext-b\""
  run kubectl get crd "$other"
  assert_failure
  # Added for another extension where there was none: refused; for the labels' own: accepted.
  cm="$(name cm)"
  apply "$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-a\"}")"
  assert_success
  api PATCH "/api/v1/namespaces/default/configmaps/$cm" application/merge-patch+json \
    "{\"metadata\": {\"ownerReferences\": $(controller_ref ClusterExtension ext-b)}}"
  assert_equal "$api_code" 403
  api PATCH "/api/v1/namespaces/default/configmaps/$cm" application/merge-patch+json \
    "{\"metadata\": {\"ownerReferences\": $(controller_ref ClusterExtension ext-a)}}"
  assert_equal "$api_code" 200
  # Its removal, as the garbage collector orphans an object (a strategic merge patch): accepted.
  api PATCH "/api/v1/namespaces/default/configmaps/$cm" application/strategic-merge-patch+json \
    '{"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "0b5d7e1c-2f3a-4b6c-8d9e-0f1a2b3c4d5e"}]}}'
  assert_equal "$api_code" 200
  assert_equal "$(kubectl get configmap "$cm" -o json | jq -r '.metadata.ownerReferences // [] | length')" 0
}

@test "Argo CD preset: another installation's id is Forbidden; the id set and unset by Argo CD is not" {
  local cm id
  cm="$(name cm)"
  id="argocd.argoproj.io/tracking-id=widgets-prod:/ConfigMap:default/$cm"
  apply "$(configmap "$cm" '{}' "{\"argocd.argoproj.io/tracking-id\": \"widgets-prod:/ConfigMap:default/$cm\"}")"
  assert_success
  run --separate-stderr kubectl annotate configmap "$cm" argocd.argoproj.io/installation-id=prod-east
  assert_success
  run --separate-stderr kubectl annotate configmap "$cm" argocd.argoproj.io/installation-id=prod-west --overwrite
  assert_forbidden "$(webhook_of single-owner-argocd)" \
    "is owned by [argocd.argoproj.io/installation-id=prod-east]" "would change its owner to [argocd.argoproj.io/installation-id=prod-west]"
  run --separate-stderr kubectl annotate configmap "$cm" argocd.argoproj.io/installation-id-
  assert_success
  assert_equal "$(kubectl get configmap "$cm" -o json | jq -r '.metadata.annotations["argocd.argoproj.io/tracking-id"]')" "${id#*=}"
}

@test "Flux preset: another Kustomization's labels are Forbidden" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" '{"kustomize.toolkit.fluxcd.io/name": "widgets-a", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}')"
  assert_success
  run --separate-stderr kubectl label configmap "$cm" kustomize.toolkit.fluxcd.io/name=widgets-b --overwrite
  assert_forbidden "$(webhook_of single-owner-flux)" "[kustomize.toolkit.fluxcd.io/name=widgets-a]"
}

@test "break glass: the group bypasses the policy only where matchConditions reach the webhook (1.30+)" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" "{\"$OLM_NAME\": \"ext-a\"}")"
  run --separate-stderr kubectl label configmap "$cm" "$OLM_NAME=ext-b" --overwrite \
    --as operator-on-call --as-group single-owner:break-glass --as-group system:masters
  if [ "$KUBERNETES_MINOR" -ge 30 ]; then
    assert_success
  else
    assert_forbidden "$OLM_WEBHOOK" "is owned by [$OLM_NAME=ext-a]"
  fi
}

@test "the backend down: ordinary writes of owned objects go on (1.30+), every ownership change is refused, nothing else changes" {
  # One object owned under each one-tool preset of this cluster, written as its tool does.
  local olm helm argo flux v0 plain
  olm="$(name olm)" helm="$(name helm)" argo="$(name argo)" flux="$(name flux)" v0="$(name v0)" plain="$(name plain)"
  apply "$(configmap "$olm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-a\"}")"
  assert_success
  apply "$(configmap "$helm" '{}' '{"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "default"}')"
  assert_success
  apply "$(configmap "$argo" '{}' "{\"argocd.argoproj.io/tracking-id\": \"shop:/ConfigMap:default/$argo\"}")"
  assert_success
  apply "$(configmap "$flux" '{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}')"
  assert_success
  apply "$(configmap "$v0" '{"olm.owner": "widgets.v1.0.0", "olm.owner.kind": "ClusterServiceVersion", "olm.owner.namespace": "default"}')"
  assert_success
  local before="$BATS_TEST_TMPDIR/before.json" after="$BATS_TEST_TMPDIR/after.json"
  kubectl get configmap -n default "$olm" "$helm" "$argo" "$flux" "$v0" -o json >"$before"
  "$ROOT/control-plane/cluster.sh" backend-stop
  local ordinary=0 ordinary_ok=0 change=0 change_refused=0 o
  # Ordinary writes: data, a label and an annotation no preset reads, through each verb.
  for o in "$olm" "$helm" "$argo" "$flux" "$v0"; do
    for write in "label configmap $o tier=2" "annotate configmap $o note=x" \
      "patch configmap $o --type merge -p {\"data\":{\"k\":\"v2\"}}"; do
      ordinary=$((ordinary + 1))
      # shellcheck disable=SC2086
      run --separate-stderr kubectl $write
      [ "$status" -eq 0 ] && ordinary_ok=$((ordinary_ok + 1))
    done
  done
  # Every ownership change: a key changed, added (adoption), removed (orphaning), and a
  # creation that carries one.
  local writes=(
    "label configmap $olm $OLM_NAME=ext-b --overwrite"
    "label configmap $olm $OLM_NAME-"
    "annotate configmap $helm meta.helm.sh/release-name=other --overwrite"
    "annotate configmap $helm meta.helm.sh/release-namespace-"
    "annotate configmap $argo argocd.argoproj.io/tracking-id=other:/ConfigMap:default/$argo --overwrite"
    "label configmap $flux kustomize.toolkit.fluxcd.io/name=other --overwrite"
    "label configmap $v0 olm.owner=gadgets.v1.0.0 --overwrite"
    "annotate configmap $olm single-owner.kubewarden.io/handover-to=$OLM_NAME=ext-b"
    "label configmap $helm $OLM_NAME=ext-c"
  )
  for write in "${writes[@]}"; do
    change=$((change + 1))
    # shellcheck disable=SC2086
    run --separate-stderr kubectl $write
    if [ "$status" -ne 0 ] && [[ "$stderr" == *"failed calling webhook"* ]]; then
      change_refused=$((change_refused + 1))
    else
      echo "# not refused: kubectl $write: $output $stderr" >&3
    fi
  done
  change=$((change + 1))
  run --separate-stderr kubectl apply -f - <<<"$(configmap "$plain" "{\"$OLM_NAME\": \"ext-a\"}")"
  [ "$status" -ne 0 ] && [[ "$stderr" == *"failed calling webhook"* ]] && change_refused=$((change_refused + 1))
  kubectl get configmap -n default "$olm" "$helm" "$argo" "$flux" "$v0" -o json >"$after"
  "$ROOT/control-plane/cluster.sh" backend-start
  echo "# backend down (Kubernetes 1.$KUBERNETES_MINOR): $ordinary_ok of $ordinary ordinary writes went through, $change_refused of $change ownership changes refused" >&3
  assert_equal "$change_refused" "$change"
  # What changed is what the ordinary writes wrote, and no owner marker.
  local markers='[.items[] | {name: .metadata.name, labels: (.metadata.labels // {} | with_entries(select(.key != "tier"))),
    annotations: (.metadata.annotations // {} | with_entries(select(.key != "note" and .key != "kubectl.kubernetes.io/last-applied-configuration")))}]'
  assert_equal "$(jq -c "$markers" "$after")" "$(jq -c "$markers" "$before")"
  if [ "$KUBERNETES_MINOR" -ge 30 ]; then
    assert_equal "$ordinary_ok" "$ordinary"
    assert_equal "$(jq -r '[.items[] | .metadata.labels.tier] | unique | join(",")' "$after")" 2
    assert_equal "$(jq -r '[.items[] | .data.k] | unique | join(",")' "$after")" v2
  else
    # Older servers drop matchConditions: every write of these objects waits for the policy.
    assert_equal "$ordinary_ok" 0
  fi
  # Back up, the ownership change is judged again.
  run --separate-stderr kubectl label configmap "$olm" "$OLM_NAME=ext-b" --overwrite
  assert_forbidden "$OLM_WEBHOOK" "is owned by [$OLM_NAME=ext-a]"
}