#!/usr/bin/env bats
# The scripts whose stdout a caller parses print nothing else there, even on a machine that
# has never built anything. scripts/cluster.sh takes `build.sh`'s stdout as the path of the
# kube-apiserver to start; on a first build, fix-vendor.py's progress line once landed there
# too, and nothing started (the second run passed, the binary being cached).

load common

# A kube-apiserver build on stubs: apt-get, dpkg-source and go print on stdout, as the real
# tools do, and produce just enough of Debian's source tree for build.sh to run every step;
# fix-vendor.py, sed, xargs and grep are the real ones. The cache is empty, as on a fresh
# machine.
setup() {
  stubs="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$stubs" "$BATS_TEST_TMPDIR/gocode/src/github.com/modern-go/reflect2"
  echo 'package reflect2' >"$BATS_TEST_TMPDIR/gocode/src/github.com/modern-go/reflect2/reflect2.go"
  cat >"$stubs/apt-get" <<'EOF'
#!/bin/sh
echo "Reading package lists... (apt-get $*)"
case "$*" in
  *--download-only*) echo "Get:1 kubernetes_1.20.2-1.dsc"; touch kubernetes_1.20.2-1.dsc ;;
esac
EOF
  cat >"$stubs/dpkg-source" <<'EOF'
#!/bin/sh
echo "dpkg-source: info: extracting kubernetes in $3"
mkdir -p "$3/debian" "$3/vendor/k8s.io/kube-openapi/cmd/openapi-gen" "$3/api/api-rules" \
  "$3/hack/make-rules/helpers" "$3/pkg/apis/widgets" "$3/vendor/github.com/modern-go/reflect2"
echo 'kubernetes (1.20.2really1.20.2-1) unstable; urgency=medium' >"$3/debian/changelog"
printf '# github.com/modern-go/reflect2 v1.0.1 => github.com/modern-go/reflect2 v1.0.1\ngithub.com/modern-go/reflect2\n# k8s.io/kube-openapi v0.0.0\nk8s.io/kube-openapi/cmd/openapi-gen\n' >"$3/vendor/modules.txt"
echo 'replace github.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.1' >"$3/go.mod"
: >"$3/api/api-rules/violation_exceptions.list"
printf '// +k8s:openapi-gen=true\npackage widgets\n' >"$3/pkg/apis/widgets/types.go"
printf 'echo "caching go dirs"\necho pkg/apis/widgets >"$1"\n' >"$3/hack/make-rules/helpers/cache_go_dirs.sh"
EOF
  # `go build -o OUT`: OUT prints on stdout too and, as openapi-gen, writes its report (-r).
  cat >"$stubs/go" <<'EOF'
#!/bin/sh
echo "go: downloading nothing ($*)"
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then
    printf '#!/bin/sh\necho "generated"\nwhile [ $# -gt 0 ]; do [ "$1" = -r ] && : >"$2"; shift; done\n' >"$2"
    chmod +x "$2"
  fi
  shift
done
EOF
  chmod +x "$stubs"/*
}

@test "build.sh prints the kube-apiserver's path and nothing else on stdout, on a first build" {
  cache="$BATS_TEST_TMPDIR/cache"
  run --separate-stderr env -u KUBE_APISERVER PATH="$stubs:$PATH" SINGLE_OWNER_CACHE="$cache" \
    GOCODE_DIR="$BATS_TEST_TMPDIR/gocode" "$ROOT/scripts/kube-apiserver/build.sh"
  assert_success
  # The tools did print: to stderr, where the caller shows progress.
  [[ "$stderr" == *"fix-vendor: 2 packages under 2 modules"* ]] || fail "no progress on stderr: $stderr"
  [[ "$stderr" == *"go: downloading nothing"* ]] || fail "the stub go did not run: $stderr"
  assert_output "$cache/kube-apiserver-debian/kube-apiserver"
  [ -x "$output" ]
  [ -f "$cache/kube-apiserver-debian/VERSION" ]
  [ ! -d "$cache/kube-apiserver-build" ] # the work tree is removed after a build
}

@test "build.sh prints the cached path alone on a second run, and KUBE_APISERVER's when given" {
  cache="$BATS_TEST_TMPDIR/cache"
  mkdir -p "$cache/kube-apiserver-debian"
  printf '#!/bin/sh\n' >"$cache/kube-apiserver-debian/kube-apiserver"
  chmod +x "$cache/kube-apiserver-debian/kube-apiserver"
  run --separate-stderr env -u KUBE_APISERVER PATH="$stubs:$PATH" SINGLE_OWNER_CACHE="$cache" \
    "$ROOT/scripts/kube-apiserver/build.sh"
  assert_success
  assert_output "$cache/kube-apiserver-debian/kube-apiserver"
  run --separate-stderr env KUBE_APISERVER=/bin/true "$ROOT/scripts/kube-apiserver/build.sh"
  assert_success
  assert_output /bin/true
}

@test "a build that fails prints no path, and says why on stderr" {
  printf '#!/bin/sh\necho "go: build failed"\nexit 1\n' >"$stubs/go"
  run --separate-stderr env -u KUBE_APISERVER PATH="$stubs:$PATH" SINGLE_OWNER_CACHE="$BATS_TEST_TMPDIR/cache" \
    GOCODE_DIR="$BATS_TEST_TMPDIR/gocode" "$ROOT/scripts/kube-apiserver/build.sh"
  assert_failure
  assert_output ""
  [[ "$stderr" == *"go: build failed"* ]] || fail "the failure is not on stderr: $stderr"
}
