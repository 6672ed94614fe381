#!/usr/bin/env bats
# kubectl single-owner ships as kubectl plugins do: an archive per platform (the binary and
# LICENSE at its root, with its sha256) and a krew manifest rendered from .krew.yaml as
# krew-release-bot renders it, which must keep to krew's manifest rules (scripts/krew-manifest.py,
# e2e-tests/krew/plugin.schema.json, from kubernetes-sigs/krew's validation). The release
# workflow builds the archives of the four platforms; here the host's binary stands for each.

load common

PLUGIN="$ROOT/target/host/kubectl-single_owner"

setup_file() {
  python3 -c 'import jsonschema' 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check jsonschema==4.26.0 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages jsonschema==4.26.0
}

version() { sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1; }

# archives: one archive, named for each platform the manifest lists; prints --archive flags.
archives() {
  local archive
  archive="$("$ROOT/scripts/plugin-archive.sh" "$PLUGIN" linux_amd64 "$BATS_TEST_TMPDIR/plugin")"
  for p in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64; do
    printf '%s\n' --archive "kubectl-single_owner-$p.tar.gz=$archive"
  done
}

@test "the archive holds the binary and LICENSE at its root, with its sha256, and the binary says its version" {
  run "$ROOT/scripts/plugin-archive.sh" "$PLUGIN" linux_amd64 "$BATS_TEST_TMPDIR/plugin"
  assert_success
  local archive="$BATS_TEST_TMPDIR/plugin/kubectl-single_owner-linux_amd64.tar.gz"
  assert_output "$archive"
  assert_equal "$(tar -tzf "$archive" | sort | tr '\n' ' ')" "LICENSE kubectl-single_owner "
  (cd "$BATS_TEST_TMPDIR/plugin" && sha256sum -c kubectl-single_owner-linux_amd64.tar.gz.sha256)
  mkdir "$BATS_TEST_TMPDIR/x" && tar -xzf "$archive" -C "$BATS_TEST_TMPDIR/x"
  run "$BATS_TEST_TMPDIR/x/kubectl-single_owner" version
  assert_success
  assert_output "kubectl single-owner v$(version) (the rules of single-owner-policy v$(version))"
  # Reproducible: the same binary gives the same archive.
  local first
  first="$(cut -d' ' -f1 "$archive.sha256")"
  "$ROOT/scripts/plugin-archive.sh" "$PLUGIN" linux_amd64 "$BATS_TEST_TMPDIR/plugin" >/dev/null
  assert_equal "$(cut -d' ' -f1 "$archive.sha256")" "$first"
}

@test "kubectl runs it as kubectl single-owner from PATH" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cp "$PLUGIN" "$BATS_TEST_TMPDIR/bin/"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run kubectl plugin list
  assert_line --partial "$BATS_TEST_TMPDIR/bin/kubectl-single_owner"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run kubectl single-owner version
  assert_success
  assert_output --partial "kubectl single-owner v$(version)"
}

@test "the krew manifest renders as krew-release-bot renders it, and keeps to krew's rules" {
  local args
  mapfile -t args < <(archives)
  run --separate-stderr python3 "$ROOT/scripts/krew-manifest.py" "$ROOT/.krew.yaml" "v$(version)" "${args[@]}"
  assert_success
  [ -z "$stderr" ] || fail "$stderr"
  local manifest="$output" sum
  sum="$(cut -d' ' -f1 "$BATS_TEST_TMPDIR/plugin/kubectl-single_owner-linux_amd64.tar.gz.sha256")"
  assert_equal "$(yq_ '.spec.version' <<<"$manifest")" "v$(version)"
  assert_equal "$(yq_ '.spec.platforms | length' <<<"$manifest")" 4
  assert_equal "$(yq_ '[.spec.platforms[].sha256] | unique | .[0]' <<<"$manifest")" "$sum"
  assert_equal "$(yq_ '.spec.platforms[0].uri' <<<"$manifest")" \
    "https://github.com/single-owner-policy/single-owner-policy/releases/download/v$(version)/kubectl-single_owner-linux_amd64.tar.gz"
  assert_equal "$(yq_ '[.spec.platforms[].bin] | unique | join(",")' <<<"$manifest")" kubectl-single_owner
  # Every archive the manifest names is one the release workflow builds.
  local p
  for p in $(yq_ '.spec.platforms[] | .selector.matchLabels.os + "_" + .selector.matchLabels.arch' <<<"$manifest"); do
    grep -q "platform: $p$" "$ROOT/.github/workflows/release.yml" || fail "the release workflow builds no $p archive"
  done
}

@test "a manifest that breaks krew's rules is refused with krew's reason" {
  local args broken
  mapfile -t args < <(archives)
  broken="$BATS_TEST_TMPDIR/broken.yaml"
  sed -e 's/^  shortDescription: .*/  shortDescription: ""/' -e 's/^        arch: arm64$/        cpu: arm64/' \
    "$ROOT/.krew.yaml" >"$broken"
  run --separate-stderr python3 "$ROOT/scripts/krew-manifest.py" "$broken" "v$(version)" "${args[@]}"
  assert_failure
  [[ "$stderr" == *"spec.shortDescription: '' should be non-empty"* ]] || fail "$stderr"
  [[ "$stderr" == *"'cpu' is not one of ['os', 'arch']"* ]] || fail "$stderr"
  run --separate-stderr python3 "$ROOT/scripts/krew-manifest.py" "$ROOT/.krew.yaml" "1.0" "${args[@]}"
  assert_failure
  [[ "$stderr" == *"version '1.0' is not a semantic version with a leading v"* ]] || fail "$stderr"
  run --separate-stderr python3 "$ROOT/scripts/krew-manifest.py" "$ROOT/.krew.yaml" "v$(version)" --name other "${args[@]}"
  assert_failure
  [[ "$stderr" == *"plugin should be named 'other', not 'single-owner'"* ]] || fail "$stderr"
}

@test "one release carries the policy and the plugin: the same version" {
  assert_equal "$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/kubectl-plugin/Cargo.toml" | head -1)" "$(version)"
}

# yq_ EXPRESSION: jq over YAML on stdin (PyYAML, as the corpus reads YAML).
yq_() {
  python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))' | jq -r "$1"
}
