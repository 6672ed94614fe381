#!/usr/bin/env bats
# One owner across tools through a real kube-apiserver, under deploy/all-tools.yaml alone (`make
# cluster-e2e` brings a cluster up with it after the other suites). Helm is real Helm (the Helm
# v4.3 SDK, scripts/helm.py); the other tools' writes are kubectl writes of the keys they write.

load ../cluster/common

TOOLS_WEBHOOK="$(webhook_of single-owner-all-tools)"
CHARTS="$ROOT/e2e-tests/charts"

setup_file() {
  "$ROOT/scripts/setup.sh" helm >&2
}

setup() {
  PATH="$ROOT/target/tools/bin:$PATH"
}

annotations() { kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -c '.metadata.annotations // {}'; }
labels() { kubectl get "$1" "$2" ${3:+-n "$3"} -o json | jq -c '.metadata.labels // {}'; }

@test "an extension's CRD: helm install --take-ownership of a chart that ships it is refused, and nothing is stored" {
  local shared crd
  shared="$(name ext).example.com"
  crd="widgets.$shared"
  # The CRD as operator-controller writes it for ClusterExtension cert-manager (its boxcutter
  # applier: owner labels and a revision, no Helm annotations).
  apply "$(crd_manifest "$crd" cert-manager | jq '.metadata.annotations = {"olm.operatorframework.io/revision": "1"} |
    .spec.names = {plural: "widgets", singular: "widget", kind: "Widget"}')"
  assert_success
  # Client-side apply: with server-side apply Helm's field manager would first conflict with
  # the CRD's on the fields the chart writes differently (a 409 before admission).
  run --separate-stderr helm install cert-manager "$CHARTS/widgets-a" --set "shared=$shared" --take-ownership --server-side=false
  assert_failure
  [[ "$stderr" == *"Error: INSTALLATION FAILED: "*"admission webhook \"$TOOLS_WEBHOOK\" denied the request: CustomResourceDefinition \"$crd\" is owned by [$OLM_KIND=ClusterExtension, $OLM_NAME=cert-manager] (olm-v1), and this UPDATE would add [meta.helm.sh/release-name=cert-manager, meta.helm.sh/release-namespace=default] (helm)"* ]] ||
    fail "not the policy's refusal: $stderr"
  # Nothing of Helm's was stored on it.
  assert_equal "$(annotations crd "$crd" | jq -c 'del(."kubectl.kubernetes.io/last-applied-configuration")')" \
    '{"olm.operatorframework.io/revision":"1"}'
  assert_equal "$(labels crd "$crd")" "{\"$OLM_KIND\":\"ClusterExtension\",\"$OLM_NAME\":\"cert-manager\"}"
}

@test "a Flux HelmRelease's objects carry helm-controller's labels and Helm's annotations, and are accepted as one owner" {
  local shared
  shared="$(name hr).example.com"
  # helm-controller installs with the Helm SDK and adds its origin labels in a post-renderer:
  # real Helm, with the chart's labels value standing in for the post-renderer.
  run --separate-stderr helm install podinfo "$CHARTS/widgets-a" --set "shared=$shared" \
    --set 'labels.helm\.toolkit\.fluxcd\.io/name=podinfo' --set 'labels.helm\.toolkit\.fluxcd\.io/namespace=default'
  assert_success
  assert_line "STATUS: deployed"
  assert_equal "$(labels crd "widgets.$shared" | jq -c '{n: ."helm.toolkit.fluxcd.io/name", ns: ."helm.toolkit.fluxcd.io/namespace"}')" '{"n":"podinfo","ns":"default"}'
  assert_equal "$(annotations crd "widgets.$shared" | jq -r '."meta.helm.sh/release-name"')" podinfo
  run --separate-stderr helm upgrade podinfo "$CHARTS/widgets-a" --set "shared=$shared" --set setting=2 \
    --set 'labels.helm\.toolkit\.fluxcd\.io/name=podinfo' --set 'labels.helm\.toolkit\.fluxcd\.io/namespace=default'
  assert_success
  # Another HelmRelease's labels on the release's objects are another owner.
  run --separate-stderr kubectl label configmap podinfo-settings helm.toolkit.fluxcd.io/name=other --overwrite
  assert_forbidden "$TOOLS_WEBHOOK" "is owned by [helm.toolkit.fluxcd.io/name=podinfo] (flux-helm), and this UPDATE would change its owner to [helm.toolkit.fluxcd.io/name=other]"
}

@test "moving a Helm release's ConfigMap to Argo CD by README's steps, run as written; a third tool's write during the move is refused" {
  run --separate-stderr helm install widgets "$CHARTS/widgets-a" --set "shared=$(name mig).example.com"
  assert_success
  "$ROOT/scripts/readme-test.py" --cluster "deploy/all-tools.yaml" --stop-after 2
  # Mid-move the ConfigMap is Argo CD's, Helm's keys left: Flux applying the same manifest is refused.
  run --separate-stderr kubectl label configmap widgets-settings kustomize.toolkit.fluxcd.io/name=apps kustomize.toolkit.fluxcd.io/namespace=flux-system
  assert_forbidden "$TOOLS_WEBHOOK" "would give it a second owner, [kustomize.toolkit.fluxcd.io/name=apps, kustomize.toolkit.fluxcd.io/namespace=flux-system] (flux)"
  # And so is Helm's taking it back (a rewrite of its release annotation).
  run --separate-stderr kubectl annotate configmap widgets-settings meta.helm.sh/release-name=other --overwrite
  assert_forbidden "$TOOLS_WEBHOOK" "change its owner"
  "$ROOT/scripts/readme-test.py" --cluster "deploy/all-tools.yaml" --start-at 3
  assert_equal "$(annotations configmap widgets-settings default | jq -c 'with_entries(select(.key | startswith("meta.helm.sh") or startswith("argocd")))')" \
    '{"argocd.argoproj.io/tracking-id":"widgets:/ConfigMap:default/widgets-settings"}'
}

@test "README's one-write handover between ClusterExtensions, run as written" {
  apply "$(crd_manifest widgets.example.com ext-a)"
  assert_success
  "$ROOT/scripts/readme-test.py" --cluster "with handoverAnnotation set"
  assert_equal "$(label_of crd widgets.example.com "" "$OLM_NAME")" ext-b
  # ext-c, which nobody named, cannot take it.
  run --separate-stderr kubectl label crd widgets.example.com "$OLM_NAME=ext-c" --overwrite
  assert_forbidden "$TOOLS_WEBHOOK" "is owned by [$OLM_NAME=ext-b] (olm-v1)"
}

@test "an object created with two tools' owners is refused, and not stored (the audit scanner's CREATE of such a stored object is answered so)" {
  local cm
  cm="$(name cm)"
  apply "$(configmap "$cm" '{}' '{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": "default",
    "argocd.argoproj.io/tracking-id": "shop:/ConfigMap:default/x"}')"
  assert_forbidden "$TOOLS_WEBHOOK" "would be created with the owners of two tools" "(helm) and [argocd.argoproj.io/tracking-id=shop:/ConfigMap:default/x] (argocd)"
  run kubectl get configmap "$cm"
  assert_failure
}

@test "an extension's object whose controller ownerReference names another extension is refused; another Argo CD installation's id too" {
  local cm ref
  cm="$(name cm)"
  ref='[{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "name": "ext-b", "uid": "0b5d7e1c-2f3a-4b6c-8d9e-0f1a2b3c4d5e", "controller": true, "blockOwnerDeletion": false}]'
  # As OLM v1's Helm applier writes it for ext-a: its labels and Helm's release annotations.
  apply "$(configmap "$cm" "{\"$OLM_KIND\": \"ClusterExtension\", \"$OLM_NAME\": \"ext-a\"}" \
    '{"meta.helm.sh/release-name": "ext-a", "meta.helm.sh/release-namespace": "ext-a-system"}')"
  assert_success
  api PATCH "/api/v1/namespaces/default/configmaps/$cm" application/merge-patch+json "{\"metadata\": {\"ownerReferences\": $ref}}"
  assert_equal "$api_code" 403
  [[ "$(jq -r .message <<<"$output")" == *"but its controller ownerReference names ClusterExtension \"ext-b\""* ]] || fail "$output"
  local app
  app="$(name app)"
  apply "$(configmap "$app" '{}' "{\"argocd.argoproj.io/tracking-id\": \"shop:/ConfigMap:default/$app\", \"argocd.argoproj.io/installation-id\": \"prod-east\"}")"
  assert_success
  run --separate-stderr kubectl annotate configmap "$app" argocd.argoproj.io/installation-id=prod-west --overwrite
  assert_forbidden "$TOOLS_WEBHOOK" \
    "is owned by [argocd.argoproj.io/installation-id=prod-east] (argocd), and this UPDATE would change its owner to [argocd.argoproj.io/installation-id=prod-west]"
}
