#!/usr/bin/env bats
# Publishing: push the annotated module to a real OCI registry (Debian's docker-registry on
# loopback), pull it back by tag and by digest, and run what was pulled.

load common

VERSION="$(sed -n 's/^ *io.kubewarden.policy.version: *//p' "$BATS_TEST_DIRNAME/../metadata.yml")"

setup_file() {
  export REGISTRY_PORT
  REGISTRY_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  mkdir -p "$BATS_FILE_TMPDIR/storage"
  cat >"$BATS_FILE_TMPDIR/registry.yml" <<YAML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $BATS_FILE_TMPDIR/storage
http:
  addr: 127.0.0.1:$REGISTRY_PORT
YAML
  docker-registry serve "$BATS_FILE_TMPDIR/registry.yml" >"$BATS_FILE_TMPDIR/registry.log" 2>&1 &
  echo $! >"$BATS_FILE_TMPDIR/registry.pid"
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$REGISTRY_PORT/v2/" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the registry did not start: $(cat "$BATS_FILE_TMPDIR/registry.log")" >&2
  return 1
}

teardown_file() {
  local pid
  pid="$(cat "$BATS_FILE_TMPDIR/registry.pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

REPO() { echo "127.0.0.1:$REGISTRY_PORT/policies/single-owner"; }

manifest() {
  curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://127.0.0.1:$REGISTRY_PORT/v2/policies/single-owner/manifests/$1"
}

@test "push prints the immutable reference; the stored manifest is kwctl's" {
  run --separate-stderr "$POLICY_HOST" push "$POLICY" "registry://$(REPO):v$VERSION"
  assert_success
  assert_output --regexp "^$(REPO)@sha256:[0-9a-f]{64}$"
  local digest="${output#*@}"
  run manifest "v$VERSION"
  assert_success
  echo "$output" >"$BATS_FILE_TMPDIR/manifest.json"
  assert_equal "$(jq -r .mediaType <<<"$output")" application/vnd.oci.image.manifest.v1+json
  assert_equal "$(jq -r .config.mediaType <<<"$output")" application/vnd.wasm.config.v1+json
  assert_equal "$(jq -r .config.digest <<<"$output")" "sha256:$(printf '{}' | sha256sum | cut -d' ' -f1)"
  assert_equal "$(jq -r '.layers | length' <<<"$output")" 1
  assert_equal "$(jq -r '.layers[0].mediaType' <<<"$output")" application/vnd.wasm.content.layer.v1+wasm
  assert_equal "$(jq -r '.layers[0].digest' <<<"$output")" "sha256:$(sha256sum "$POLICY" | cut -d' ' -f1)"
  assert_equal "$(jq -r '.layers[0].size' <<<"$output")" "$(stat -c %s "$POLICY")"
  assert_equal "$(jq -r '.annotations["io.kubewarden.policy.title"]' <<<"$output")" single-owner
  assert_equal "$(jq -r '.annotations["io.kubewarden.policy.version"]' <<<"$output")" "$VERSION"
  # The README (usage) spans many lines: only single-line annotations go in the manifest.
  assert_equal "$(jq -r '.annotations | has("io.kubewarden.policy.usage")' <<<"$output")" false
  assert_equal "sha256:$(manifest "v$VERSION" | sha256sum | cut -d' ' -f1)" "$digest"
  echo "$digest" >"$BATS_FILE_TMPDIR/digest"
}

@test "pull by tag and by digest gives back the same bytes" {
  local digest
  digest="$(cat "$BATS_FILE_TMPDIR/digest")"
  run "$POLICY_HOST" pull "registry://$(REPO):v$VERSION" -o "$BATS_TEST_TMPDIR/by-tag.wasm"
  assert_success
  run "$POLICY_HOST" pull "registry://$(REPO)@$digest" -o "$BATS_TEST_TMPDIR/by-digest.wasm"
  assert_success
  cmp "$POLICY" "$BATS_TEST_TMPDIR/by-tag.wasm"
  cmp "$POLICY" "$BATS_TEST_TMPDIR/by-digest.wasm"
}

@test "the pulled module runs: from a file and straight from the registry" {
  "$POLICY_HOST" pull "registry://$(REPO):v$VERSION" -o "$BATS_TEST_TMPDIR/pulled.wasm"
  run --separate-stderr "$POLICY_HOST" run -r "$FIXTURES/crd-owner-change.json" "$BATS_TEST_TMPDIR/pulled.wasm"
  assert_success
  assert_rejected
  assert_message_contains 'owner-name=ext-a' 'owner-name=ext-b'
  run --separate-stderr "$POLICY_HOST" run -r "$FIXTURES/crd-adopt.json" "registry://$(REPO):v$VERSION"
  assert_success
  assert_accepted
  assert_warning_contains 'adopted by owner'
}

@test "an unannotated module is refused" {
  run --separate-stderr "$POLICY_HOST" push "$ROOT/policy.wasm" "registry://$(REPO):raw"
  assert_failure
  [[ "$stderr" == *"annotate it first"* ]]
}

@test "make publish pushes with policy-host when kwctl is absent" {
  command -v kwctl >/dev/null && skip "kwctl is installed: make publish uses it"
  run make -s -C "$ROOT" publish OCI_REF="registry://$(REPO):make"
  assert_success
  assert_output --partial "$(REPO)@sha256:"
}
