#!/usr/bin/env bats
# One owner across tools, through the built module, with deploy/all-tools.yaml's settings and
# fixtures of what each tool really writes (e2e-tests/fixtures/generate.py cites where from).

load common

setup_file() {
  "$POLICY_HOST" verify-manifest "$ROOT/deploy/all-tools.yaml" "$POLICY" | jq .settings >"$BATS_FILE_TMPDIR/all-tools.json"
  export ALL_TOOLS="$BATS_FILE_TMPDIR/all-tools.json"
}

tools() { evaluate "$1" -s "$ALL_TOOLS"; }

@test "the preset's settings are the ones the native tests use (tests/support/all-tools.json)" {
  assert_equal "$(jq -S -c . "$ALL_TOOLS")" "$(jq -S -c . "$ROOT/tests/support/all-tools.json")"
}

@test "helm install --take-ownership of an extension's CRD is refused, naming both tools and both owners" {
  tools tools-crd-helm-takes-extensions.json
  assert_rejected
  assert_message_contains 'CustomResourceDefinition "certificates.cert-manager.io" is owned by [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=cert-manager] (olm-v1)' \
    'would add [meta.helm.sh/release-name=cert-manager, meta.helm.sh/release-namespace=cert-manager] (helm)' \
    'Keep it in one tool: remove it from the other tool'
}

@test "an Argo CD sync of a Helm release's Deployment, or a Flux apply of an OLM v0 object, is refused" {
  tools tools-deployment-argocd-syncs-helm-release.json
  assert_rejected
  assert_message_contains '(helm), and this UPDATE would give it a second owner, [argocd.argoproj.io/tracking-id=widgets-prod:apps/Deployment:widgets/widget-controller] (argocd)' \
    'the current owner names the successor (single-owner.kubewarden.io/handover-to=argocd.argoproj.io/tracking-id=widgets-prod:apps/Deployment:widgets/widget-controller)'
  tools tools-configmap-flux-applies-olm-v0s.json
  assert_rejected
  assert_message_contains '[olm.owner=etcdoperator.v0.9.4, olm.owner.kind=ClusterServiceVersion, olm.owner.namespace=operators] (olm-v0)' '(flux)'
}

@test "an object created with two tools' owners is refused; the tools that write two tools' keys for one owner are accepted" {
  tools tools-crd-olm-v0-and-v1-create.json
  assert_rejected
  assert_message_contains 'would be created with the owners of two tools' '(olm-v1) and [olm.owner=etcdoperator.v0.9.4' '(olm-v0)'
  tools tools-crd-olm-v1-helm-applier-create.json
  assert_quiet_accept
  tools tools-deployment-flux-helmrelease-create.json
  assert_quiet_accept
  # Not the release the HelmRelease installs: helm-controller's rule looks the HelmRelease up.
  evaluate tools-deployment-flux-helmrelease-other-release.json -s "$ALL_TOOLS" --allow-context-aware \
    --replay-host-capabilities-interactions "$FIXTURES/tools-deployment-flux-helmrelease-other-release.session.yml"
  assert_rejected
  assert_message_contains '[meta.helm.sh/release-name=widgets-2, meta.helm.sh/release-namespace=widgets] (helm) and [helm.toolkit.fluxcd.io/name=widgets' '(flux-helm)'
}

@test "moving a Deployment from Helm to Argo CD by README's steps; Flux during the move is refused" {
  tools tools-migration-1-successor-named.json
  assert_quiet_accept
  tools tools-migration-2-argocd-adds-its-key.json
  assert_accepted
  assert_warning_contains 'handed over from owner [meta.helm.sh/release-name=widgets, meta.helm.sh/release-namespace=widgets] (helm) to owner [argocd.argoproj.io/tracking-id=widgets-prod:apps/Deployment:widgets/widget-controller] (argocd)' \
    'remove the former owner'"'"'s keys (annotation meta.helm.sh/release-name, annotation meta.helm.sh/release-namespace) to finish'
  tools tools-migration-3-helm-keys-removed.json
  assert_accepted
  assert_warning_contains 'the handover to [argocd.argoproj.io/tracking-id=widgets-prod:apps/Deployment:widgets/widget-controller] (argocd) is finished'
  tools tools-migration-third-tool.json
  assert_rejected
  assert_message_contains 'would give it a second owner, [kustomize.toolkit.fluxcd.io/name=widgets' '(flux)'
}

@test "a one-tool preset does not see another tool's keys: that is what all-tools.yaml is for" {
  "$POLICY_HOST" verify-manifest "$ROOT/deploy/olm-v1.yaml" "$POLICY" | jq .settings >"$BATS_TEST_TMPDIR/olm.json"
  evaluate tools-crd-helm-takes-extensions.json -s "$BATS_TEST_TMPDIR/olm.json"
  assert_quiet_accept
  "$POLICY_HOST" verify-manifest "$ROOT/deploy/helm.yaml" "$POLICY" | jq .settings >"$BATS_TEST_TMPDIR/helm.json"
  evaluate tools-crd-helm-takes-extensions.json -s "$BATS_TEST_TMPDIR/helm.json"
  assert_accepted
  assert_warning_contains 'adopted by owner [meta.helm.sh/release-name=cert-manager'
}

@test "all-tools.yaml sends each tool's owned objects to the policy, and no others" {
  local fixture
  for fixture in tools-crd-helm-takes-extensions.json tools-deployment-argocd-syncs-helm-release.json \
    tools-configmap-flux-applies-olm-v0s.json tools-deployment-flux-helmrelease-create.json crd-owner-change.json \
    clusterrole-helm-release-change.json deployment-argocd-app-change.json deployment-flux-kustomization-change.json; do
    run --separate-stderr "$POLICY_HOST" selects "$ROOT/deploy/all-tools.yaml" -r "$FIXTURES/$fixture"
    assert_success
    assert_output "sent $FIXTURES/$fixture"
  done
  run --separate-stderr "$POLICY_HOST" selects "$ROOT/deploy/all-tools.yaml" -r "$FIXTURES/deployment-chart-untracked.json"
  assert_output --partial "not sent"
}
