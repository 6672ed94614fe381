#!/usr/bin/env bash
# Prints the path of a kube-apiserver binary: $KUBE_APISERVER when given, else one built once
# per machine from Debian's source package `kubernetes` (bookworm: v1.20.2 with its vendor/
# tree), with Debian's Go, into a cache outside the repository. Nothing is fetched from a code
# host: the source, the compiler and the one replaced dependency are Debian packages.
#
# usage: scripts/kube-apiserver/build.sh   (progress on stderr, the path on stdout)
# The cache: $SINGLE_OWNER_CACHE, or ~/.cache/single-owner-policy.
#
# Callers capture stdout as the path (`apiserver="$(build.sh)"`), so stdout is the path and
# nothing else by construction: the script's own stdout is moved to fd 3 first, and
# everything it runs (apt-get, dpkg-source, go, fix-vendor.py, ...) writes to stderr.
# `e2e-tests/scripts.bats` runs it with tools that print on stdout to keep it so.
set -euo pipefail
exec 3>&1 1>&2
here="$(cd "$(dirname "$0")" && pwd)"
path() { echo "$1" >&3; }

if [ -n "${KUBE_APISERVER:-}" ]; then
  [ -x "$KUBE_APISERVER" ] || { echo "KUBE_APISERVER=$KUBE_APISERVER is not an executable" >&2; exit 1; }
  path "$KUBE_APISERVER"
  exit 0
fi

cache="${SINGLE_OWNER_CACHE:-$HOME/.cache/single-owner-policy}"
binary="$cache/kube-apiserver-debian/kube-apiserver"
if [ -x "$binary" ]; then
  path "$binary"
  exit 0
fi

log() { echo "kube-apiserver: $*" >&2; }
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

# A deb-src entry for the archive the machine already uses (Debian's deb822 sources).
if ! apt-get source --print-uris kubernetes >/dev/null 2>&1; then
  log "adding a deb-src entry for the machine's Debian archive"
  python3 - "${sudo[@]:+sudo}" <<'EOF'
import pathlib, re, subprocess, sys
stanzas = pathlib.Path("/etc/apt/sources.list.d/debian.sources").read_text().split("\n\n")
main = next(s for s in stanzas if re.search(r"^Types:.*\bdeb\b", s, re.M)
            and re.search(r"^Suites:.*\b(bookworm|trixie|bullseye)\b", s, re.M))
src = re.sub(r"^Types:.*$", "Types: deb-src", main, flags=re.M)
src = "\n".join(l for l in src.splitlines() if not l.startswith("#"))
cmd = (sys.argv[1:] or []) + ["tee", "/etc/apt/sources.list.d/single-owner-deb-src.sources"]
subprocess.run(cmd, input=src + "\n", text=True, stdout=subprocess.DEVNULL, check=True)
EOF
  "${sudo[@]}" apt-get update -q >&2
fi
missing=()
command -v dpkg-source >/dev/null || missing+=(dpkg-dev)
command -v go >/dev/null || missing+=(golang-go)
# Debian's Go sources (GOCODE_DIR: another copy, for the test that runs this script on stubs).
reflect2="${GOCODE_DIR:-/usr/share/gocode}/src/github.com/modern-go/reflect2"
[ -d "$reflect2" ] || missing+=(golang-github-modern-go-reflect2-dev)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

work="$cache/kube-apiserver-build"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
log "fetching Debian's source package kubernetes"
apt-get source --download-only kubernetes/bookworm >&2
dpkg-source -x ./kubernetes_*.dsc src >&2
cd src
version="$(sed -n '1s/^kubernetes (\([^)]*\)).*/\1/p' debian/changelog)"
upstream="v$(sed 's/.*really//; s/-.*//' <<<"$version")"
log "Debian $version: Kubernetes $upstream"

export GOFLAGS=-mod=vendor GOPROXY=off CGO_ENABLED=0 GOTOOLCHAIN=local
export GOCACHE="$work/go-build" GOPATH="$work/gopath"

# 1. vendor/modules.txt in the layout Go >= 1.17 reads.
python3 "$here/fix-vendor.py" .
# 2. reflect2 1.0.1 crashes under Go >= 1.18 (the API server's JSON encoder iterates maps
#    through runtime internals): Debian's 1.0.2 replaces it.
rm -rf vendor/github.com/modern-go/reflect2
cp -r "$reflect2" vendor/github.com/modern-go/reflect2
rm -f vendor/github.com/modern-go/reflect2/*_test.go
sed -i 's|\(github.com/modern-go/reflect2 => github.com/modern-go/reflect2\) v1.0.1|\1 v1.0.2|' go.mod vendor/modules.txt
sed -i 's|^\(# github.com/modern-go/reflect2 v1.0.1 => github.com/modern-go/reflect2\) v1.0.1$|\1 v1.0.2|' vendor/modules.txt
# 3. pkg/generated/openapi is generated at build time in 1.20, by the vendored openapi-gen, on
#    the inputs the Makefile gives it (Makefile.generated_files: every package tagged
#    +k8s:openapi-gen outside code-generator and sample-apiserver), in a GOPATH.
log "generating pkg/generated/openapi"
go build -o "$work/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
bash hack/make-rules/helpers/cache_go_dirs.sh "$work/all_go_dirs.mk" >/dev/null
inputs="$(while read -r dir; do find "$dir" -maxdepth 1 -type f -name '*.go'; done <"$work/all_go_dirs.mk" |
  xargs grep -l '^// *+k8s:' | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' |
  xargs grep -l '+k8s:openapi-gen=' | xargs -n1 dirname | LC_ALL=C sort -u | sed 's|^|k8s.io/kubernetes/|' | paste -sd,)"
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$work/src" "$GOPATH/src/k8s.io/kubernetes"
(cd "$GOPATH/src/k8s.io/kubernetes" && GO111MODULE=off GOFLAGS= "$work/openapi-gen" \
  -i "$inputs" -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
  -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$work/violations.report")
diff "$work/violations.report" api/api-rules/violation_exceptions.list >&2 ||
  { log "openapi-gen reports other API rule violations than the tree's list"; exit 1; }

log "building (6-10 minutes on 2 cores with a cold Go cache)"
minor="$(cut -d. -f2 <<<"$upstream")"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$upstream"
  ldflags+=" -X $pkg.gitTreeState=archive -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
go build -tags=selinux,notest -ldflags "$ldflags" -o "$work/kube-apiserver" ./cmd/kube-apiserver
mkdir -p "$(dirname "$binary")"
mv "$work/kube-apiserver" "$binary"
echo "Debian kubernetes $version, built $(date -u +%F)" >"$(dirname "$binary")/VERSION"
cd "$cache" && rm -rf "$work"
log "built $binary"
path "$binary"
