#!/usr/bin/env bats
# The scripts whose stdout a caller parses print nothing else there, even on a machine that
# has never built anything. control-plane/cluster.sh takes `build.sh`'s stdout as the path of the
# kube-apiserver to start; a progress line that lands there too starts nothing (the second
# run would pass, the binary being cached).

load common

# The Go build on a stub `go` that prints on stdout, as the real one does when it downloads,
# and writes one file per tool the module lists; the cache is empty, as on a fresh machine.
setup() {
  stubs="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$stubs"
  cat >"$stubs/go" <<'EOF'
#!/bin/sh
echo "go: downloading k8s.io/kubernetes v1.37.2 ($*)"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    */*) [ -n "$out" ] && printf '#!/bin/sh\n' >"$out/${1##*/}" && chmod +x "$out/${1##*/}" ;;
  esac
  shift
done
EOF
  chmod +x "$stubs/go"
  cache="$BATS_TEST_TMPDIR/cache"
}

build() {
  run --separate-stderr env -u KUBE_APISERVER -u KUBECTL PATH="$stubs:$PATH" SINGLE_OWNER_CACHE="$cache" \
    "$ROOT/control-plane/build.sh" "$@"
}

@test "build.sh prints the program's path and nothing else on stdout, on a first build" {
  build kube-apiserver
  assert_success
  # The tool did print: to stderr, where the caller shows progress.
  [[ "$stderr" == *"go: downloading k8s.io/kubernetes"* ]] || fail "the stub go did not run: $stderr"
  [[ "$output" == "$cache"/go/kubernetes-*/kube-apiserver ]] || fail "not the cached path: $output"
  [ -x "$output" ]
  # One build makes every tool of the module, in the same directory.
  [ -x "$(dirname "$output")/kubectl" ]
  [ -x "$(dirname "$output")/kube-controller-manager" ]
  ! ls -d "$cache"/go/*.tmp.* 2>/dev/null # the work directory is gone after a build
}

@test "build.sh prints the cached path alone on a second run, and a given binary's when set" {
  build kubectl
  assert_success
  first="$output"
  printf '#!/bin/sh\necho "go must not run"; exit 1\n' >"$stubs/go"
  build kubectl
  assert_success
  assert_output "$first"
  run --separate-stderr env KUBE_APISERVER=/bin/true "$ROOT/control-plane/build.sh" kube-apiserver
  assert_success
  assert_output /bin/true
  run --separate-stderr env KUBECTL=/nonexistent "$ROOT/control-plane/build.sh" kubectl
  assert_failure
  assert_output ""
  [[ "$stderr" == *"/nonexistent (for kubectl) is not an executable"* ]] || fail "$stderr"
}

@test "a build that fails prints no path, leaves nothing in the cache, and says why on stderr" {
  printf '#!/bin/sh\necho "go: build failed" >&2\nexit 1\n' >"$stubs/go"
  build kube-apiserver
  assert_failure
  assert_output ""
  [[ "$stderr" == *"go: build failed"* ]] || fail "the failure is not on stderr: $stderr"
  [ -z "$(ls -A "$cache/go" 2>/dev/null)" ] || fail "left in the cache: $(ls -A "$cache/go")"
}

@test "an unknown program is refused with the list's reason" {
  build etcd
  [ "$status" -eq 2 ]
  assert_output ""
  [[ "$stderr" == *"unknown program 'etcd'"* ]] || fail "$stderr"
}

@test "build.sh --exports prints one export line per program, the toolchain a go.mod names taken for that build alone" {
  # The stub records the toolchain it ran under: Argo CD's go.mod names go1.27.3, Timoni's none.
  cat >>"$stubs/go" <<'EOF2'
echo "GOTOOLCHAIN=$GOTOOLCHAIN" >>"${GO_TOOLCHAINS:?}"
EOF2
  export GO_TOOLCHAINS="$BATS_TEST_TMPDIR/toolchains"
  build --exports timoni argocd
  assert_success
  assert_equal "$(sed -n 1p <<<"$output")" "export TIMONI=$(ls "$cache"/go/timoni-*/timoni)"
  assert_equal "$(sed -n 2p <<<"$output")" "export ARGOCD=$(ls "$cache"/go/argocd-*/cmd)"
  assert_equal "$(cat "$GO_TOOLCHAINS")" "GOTOOLCHAIN=local
GOTOOLCHAIN=go1.27.3"
  # A program it cannot build or does not know fails the whole, and prints no line for it.
  build --exports timoni no-such-program
  assert_failure
  [[ "$output" != *no-such-program* ]] || fail "$output"
}
