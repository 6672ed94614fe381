#!/usr/bin/env bats
# The builds share their compiled crates: `make run` builds policy-host alone, with only the
# feature its commands need, and the workspace build after it (`make host`, the tests) must find
# every crate the two share compiled with its own features, wasmtime above all. The
# workspace-hack crate (.config/hakari.toml) holds the features that make them equal; after a
# dependency change, `cargo hakari generate` (cargo install cargo-hakari) brings it up to date.

load common

@test "make run's policy-host resolves every crate it shares with the workspace build as that build does" {
  local line args
  line="$(make -C "$ROOT" -n --no-print-directory host-bin | grep -- '--bin policy-host')"
  args="-p policy-host ${line#*--bin policy-host}"
  [[ "$args" == *--no-default-features* ]] || fail "host-bin no longer builds policy-host with fewer features: $line"
  cd "$ROOT"
  run python3 scripts/same-features.py "$args" "--workspace -e dev" --except policy-host
  assert_success
  assert_output --partial "same-features: 0 of the"
}

@test "same-features.py says which crates a build without the workspace-hack would compile twice" {
  # A copy of the workspace whose policy-host does not depend on the hack.
  local copy="$BATS_TEST_TMPDIR/ws"
  mkdir -p "$copy"
  (cd "$ROOT" && git ls-files -z | grep -z -E '^(Cargo\.(toml|lock)|[^/]+/Cargo\.toml|bench/[^/]+/Cargo\.toml|(src|policy-host/src|kubectl-plugin/src|workspace-hack/src|bench/[^/]+/src)/.*|workspace-hack/build\.rs|scripts/same-features\.py|\.config/hakari\.toml|deploy/.*)$' |
    xargs -0 cp --parents -t "$copy")
  sed -i '/^workspace-hack = /d' "$copy/policy-host/Cargo.toml"
  cd "$copy"
  run python3 scripts/same-features.py "-p policy-host --no-default-features --features selects" "--workspace -e dev" --except policy-host --unlocked
  assert_failure
  assert_line --regexp '^wasmtime-environ v[0-9.]+: '
}
