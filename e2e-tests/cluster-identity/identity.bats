#!/usr/bin/env bats
# The identity rules and stamping through a real kube-apiserver, with the presets of
# deploy/identity/ (`make cluster-e2e` brings a cluster up with them after the label-rule
# suite). Writers are real identities: service accounts with tokens from `kubectl create
# token`, and users and service accounts impersonated with `kubectl --as` by the admin.

load ../cluster/common

FLUX_WEBHOOK="$(webhook_of single-owner-flux-tenants)"
OLM_OPERATOR_WEBHOOK="$(webhook_of single-owner-olm-v1-operator)"
HELM_WEBHOOK="$(webhook_of single-owner-helm-per-install)"
ARGO_WEBHOOK="$(webhook_of single-owner-argocd-impersonation)"
GC=system:serviceaccount:kube-system:generic-garbage-collector

setup_file() {
  local ns
  for ns in shop billing widgets team-a team-b olmv1-system; do
    ensure namespace "$ns"
  done
  ensure serviceaccount reconciler -n shop
  ensure serviceaccount reconciler -n billing
  ensure serviceaccount helm-shop -n shop
  ensure serviceaccount helm-billing -n billing
  # Authorization is not under test: every authenticated identity may write everything.
  ensure clusterrolebinding e2e-everyone-writes --clusterrole cluster-admin --group system:authenticated
  export SHOP_TOKEN BILLING_TOKEN HELM_SHOP_TOKEN HELM_BILLING_TOKEN
  SHOP_TOKEN="$(kubectl create token reconciler -n shop)"
  BILLING_TOKEN="$(kubectl create token reconciler -n billing)"
  HELM_SHOP_TOKEN="$(kubectl create token helm-shop -n shop)"
  HELM_BILLING_TOKEN="$(kubectl create token helm-billing -n billing)"
}

# as_token TOKEN KUBECTL-ARGS...: kubectl authenticated by a service account's token.
as_token() {
  local token="$1"
  shift
  run --separate-stderr kubectl --token "$token" "$@"
}

tenant_cm() {
  jq -n --arg n "$1" --arg ns "$2" --arg owner_ns "$3" '{apiVersion: "v1", kind: "ConfigMap",
    metadata: {name: $n, namespace: $ns, labels: {"kustomize.toolkit.fluxcd.io/name": "apps",
    "kustomize.toolkit.fluxcd.io/namespace": $owner_ns}}, data: {k: "v"}}'
}

@test "Flux tenants: a tenant's account creates and changes its objects; another tenant's cannot change or delete them" {
  local cm
  cm="$(name cm)"
  as_token "$SHOP_TOKEN" apply -f - <<<"$(tenant_cm "$cm" shop shop)"
  assert_success
  as_token "$SHOP_TOKEN" label configmap "$cm" -n shop tier=web
  assert_success
  as_token "$BILLING_TOKEN" label configmap "$cm" -n shop tier=db --overwrite
  assert_forbidden "$FLUX_WEBHOOK" "ConfigMap \"$cm\" in namespace \"shop\": service account billing/reconciler may not change it" \
    "kustomize.toolkit.fluxcd.io/namespace=shop]"
  as_token "$BILLING_TOKEN" delete configmap "$cm" -n shop
  assert_forbidden "$FLUX_WEBHOOK" "service account billing/reconciler may not delete it"
  assert_equal "$(label_of configmap "$cm" shop tier)" web
}

@test "Flux tenants: claiming another tenant's groups does not make a service account that tenant's" {
  local cm
  cm="$(name cm)"
  as_token "$SHOP_TOKEN" apply -f - <<<"$(tenant_cm "$cm" shop shop)"
  assert_success
  # The binding takes the namespace from the service account's username, not from its groups.
  run --separate-stderr kubectl label configmap "$cm" -n shop tier=db --as system:serviceaccount:billing:reconciler \
    --as-group system:serviceaccounts --as-group system:serviceaccounts:shop
  assert_forbidden "$FLUX_WEBHOOK" "service account billing/reconciler may not change it"
}

@test "Flux tenants: an object carrying another tenant's labels cannot be created (forging), and is not" {
  local cm
  cm="$(name cm)"
  as_token "$SHOP_TOKEN" apply -f - <<<"$(tenant_cm "$cm" shop billing)"
  assert_forbidden "$FLUX_WEBHOOK" "service account shop/reconciler may not create it" \
    "kustomize.toolkit.fluxcd.io/namespace=billing]"
  run kubectl get configmap "$cm" -n shop
  assert_failure
}

@test "Flux tenants: a human's kubectl edit (patch) of a tenant's object is Forbidden; the garbage collector deletes it" {
  local cm
  cm="$(name cm)"
  as_token "$SHOP_TOKEN" apply -f - <<<"$(tenant_cm "$cm" shop shop)"
  assert_success
  run --separate-stderr kubectl patch configmap "$cm" -n shop --type merge -p '{"data":{"k":"drift"}}' --as alice
  assert_forbidden "$FLUX_WEBHOOK" "user \"alice\" may not change it"
  run --separate-stderr kubectl delete configmap "$cm" -n shop --as "$GC"
  assert_success
}

@test "OLM v1: operator-controller writes an extension's CRD; a hook's identity can neither change nor delete it" {
  local crd="things$BATS_TEST_NUMBER.e2e.example.com" operator=system:serviceaccount:olmv1-system:operator-controller-controller-manager
  run --separate-stderr kubectl apply -f - --as "$operator" <<<"$(crd_manifest "$crd" ext-a)"
  assert_success
  run --separate-stderr kubectl annotate crd "$crd" example.com/touched=yes --as system:serviceaccount:widgets:widgets-hooks
  assert_forbidden "$OLM_OPERATOR_WEBHOOK" "CustomResourceDefinition \"$crd\": service account widgets/widgets-hooks may not change it" \
    "serviceAccounts olmv1-system/operator-controller-controller-manager"
  run --separate-stderr kubectl delete crd "$crd" --as system:serviceaccount:widgets:widgets-hooks
  assert_forbidden "$OLM_OPERATOR_WEBHOOK" "may not delete it"
  run --separate-stderr kubectl annotate crd "$crd" example.com/touched=yes --as "$operator"
  assert_success
  run --separate-stderr kubectl delete crd "$crd" --as "$operator"
  assert_success
}

@test "stamping: what a release's account creates comes back with the release's annotations; another release cannot change it" {
  local cm
  cm="$(name cm)"
  as_token "$HELM_SHOP_TOKEN" create configmap "$cm" -n shop --from-literal k=v
  assert_success
  run --separate-stderr kubectl get configmap "$cm" -n shop -o json
  assert_equal "$(jq -c '.metadata.annotations' <<<"$output")" '{"meta.helm.sh/release-name":"shop","meta.helm.sh/release-namespace":"shop"}'
  assert_equal "$(jq -c '.data' <<<"$output")" '{"k":"v"}'
  as_token "$HELM_BILLING_TOKEN" label configmap "$cm" -n shop tier=db
  assert_forbidden "$HELM_WEBHOOK" "service account billing/helm-billing may not change it" \
    "owner [meta.helm.sh/release-name=shop, meta.helm.sh/release-namespace=shop]"
  as_token "$HELM_SHOP_TOKEN" label configmap "$cm" -n shop tier=web
  assert_success
  needs_request_log
  # The stamping webhook patched the CREATE, and only it.
  assert_equal "$(requests_for "$cm" | jq -s -c '[.[] | select(.verdict.patched) | [.policy, .operation]]')" \
    "[[\"$(policy_id single-owner-helm-per-install-stamp)\",\"CREATE\"]]"
}

@test "stamping: an unbound writer's object is left as written, and an object carrying the keys keeps them" {
  local cm other
  cm="$(name cm)"
  other="$(name other)"
  run --separate-stderr kubectl create configmap "$cm" -n shop --from-literal k=v
  assert_success
  assert_equal "$(kubectl get configmap "$cm" -n shop -o json | jq -c '.metadata.annotations // {}')" '{}'
  as_token "$HELM_SHOP_TOKEN" apply -f - <<<"$(jq -n --arg n "$other" '{apiVersion: "v1", kind: "ConfigMap",
    metadata: {name: $n, namespace: "shop", annotations: {"meta.helm.sh/release-name": "shop"}}}')"
  assert_success
  assert_equal "$(kubectl get configmap "$other" -n shop -o json | jq -c '.metadata.annotations | with_entries(select(.key | startswith("meta.helm.sh")))')" \
    '{"meta.helm.sh/release-name":"shop","meta.helm.sh/release-namespace":"shop"}'
}

@test "Argo CD impersonation: a team's sync account writes its Applications' objects; another team's cannot" {
  local cm
  cm="$(name cm)"
  run --separate-stderr kubectl apply -f - --as system:serviceaccount:team-a:argocd-sync <<<"$(jq -n --arg n "$cm" '{apiVersion: "v1", kind: "ConfigMap",
    metadata: {name: $n, namespace: "team-a", annotations: {"argocd.argoproj.io/tracking-id": ("team-a_web:/ConfigMap:team-a/" + $n)}}}')"
  assert_success
  run --separate-stderr kubectl label configmap "$cm" -n team-a tier=web --as system:serviceaccount:team-b:argocd-sync
  assert_forbidden "$ARGO_WEBHOOK" "service account team-b/argocd-sync may not change it" "{serviceAccount.namespace}_*"
  run --separate-stderr kubectl label configmap "$cm" -n team-a tier=web --as system:serviceaccount:team-a:argocd-sync
  assert_success
}
