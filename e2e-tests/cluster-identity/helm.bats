#!/usr/bin/env bats
# Real Helm with a service account per release, under deploy/identity/helm-per-install.yaml
# (and its stamping half): releases `shop` and `billing` are installed, upgraded and
# uninstalled by Helm (the Helm v4.3 SDK, scripts/helm.py) authenticated as their own
# accounts, shop/helm-shop and billing/helm-billing, which the preset binds to them.

load ../cluster/common

HELM_WEBHOOK="$(webhook_of single-owner-helm-per-install)"
CHARTS="$ROOT/e2e-tests/charts"

setup_file() {
  "$ROOT/scripts/setup.sh" helm >&2
  local ns
  for ns in shop billing; do ensure namespace "$ns"; done
  ensure serviceaccount helm-shop -n shop
  ensure serviceaccount helm-billing -n billing
  # Authorization is not under test: every authenticated identity may write everything.
  ensure clusterrolebinding e2e-everyone-writes --clusterrole cluster-admin --group system:authenticated
  export SHOP_KUBECONFIG BILLING_KUBECONFIG
  SHOP_KUBECONFIG="$(kubeconfig_for shop helm-shop)"
  BILLING_KUBECONFIG="$(kubeconfig_for billing helm-billing)"
}

setup() { PATH="$ROOT/target/tools/bin:$PATH"; }

# as_release KUBECONFIG HELM-ARGS...: real Helm, authenticated by that kubeconfig.
as_release() {
  local kubeconfig="$1"
  shift
  run --separate-stderr helm --kubeconfig "$kubeconfig" "$@"
}

release_of() { kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -r '.metadata.annotations["meta.helm.sh/release-name"] // ""'; }

@test "real Helm, an account per release: another release's account cannot uninstall a release's objects; the release's own account can" {
  local shared
  shared="$(name shop).example.com"
  as_release "$SHOP_KUBECONFIG" -n shop install shop "$CHARTS/widgets-a" --set "shared=$shared"
  assert_success
  assert_line "STATUS: deployed"
  # Stamping: Helm leaves its annotations off hooks; the release's account got them added.
  assert_equal "$(release_of job shop-migrate shop)" shop
  as_release "$SHOP_KUBECONFIG" -n shop upgrade shop "$CHARTS/widgets-a" --set "shared=$shared" --set setting=2
  assert_success
  assert_line "REVISION: 2"

  # billing's account runs `helm uninstall shop`: Helm reads the release and deletes its
  # objects, and admission refuses each DELETE of an object bound to release shop. Helm 4
  # keeps the reasons in its debug log and says only that it failed (pkg/action/uninstall.go).
  as_release "$BILLING_KUBECONFIG" -n shop uninstall shop
  assert_failure
  assert_equal "$stderr" "Error: failed to delete release: shop"
  assert_equal "$(release_of configmap shop-settings shop)" shop
  assert_equal "$(release_of crd "widgets.$shared")" shop
  assert_equal "$(release_of clusterrole "$shared-editor")" shop
  # What refused them: the preset's webhook, with 403, for each of the release's objects.
  if [ -z "${POLICY_SERVER:-}" ]; then
    local object
    for object in shop-settings "widgets.$shared" "$shared-editor"; do
      requests_for "$object" | jq -se --arg p "${HELM_WEBHOOK%.kubewarden.admission}" \
        'any(.[]; .operation == "DELETE" and .policy == $p and .verdict.code == 403)' >/dev/null ||
        fail "no refused DELETE of $object in the backend's log"
    done
  fi

  # shop's own account uninstalls it.
  as_release "$SHOP_KUBECONFIG" -n shop uninstall shop
  assert_success
  run kubectl get configmap shop-settings -n shop
  assert_failure
  run kubectl get crd "widgets.$shared"
  assert_failure
  run kubectl get clusterrole "$shared-editor"
  assert_failure
}

@test "real Helm, an account per release: another release's account cannot install over a release's objects, even with --take-ownership" {
  local shared
  shared="$(name billing).example.com"
  as_release "$BILLING_KUBECONFIG" -n billing install billing "$CHARTS/widgets-b" --set "shared=$shared"
  assert_success
  # shop's account, with Helm's check skipped: the label rules and the binding both refuse.
  as_release "$SHOP_KUBECONFIG" -n shop install shop-2 "$CHARTS/widgets-a" --set "shared=$shared" --take-ownership
  assert_failure
  # (Helm shows the API server's warnings first: the stamping preset stamped the failed
  # release's record with the account's release, and Helm's rewrite of it orphans it.)
  [[ "$stderr" == *"Error: INSTALLATION FAILED: "*"denied the request: "*"CustomResourceDefinition \"widgets.$shared\""* ]] ||
    fail "not the policy's refusal: $stderr"
  assert_equal "$(release_of crd "widgets.$shared")" billing
  as_release "$BILLING_KUBECONFIG" -n billing uninstall billing
  assert_success
}
