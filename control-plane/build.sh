#!/usr/bin/env bash
# Prints the path of one of the control plane's Go programs, built from the Go module proxy
# once per machine into a cache outside the repository, from the go.mod and go.sum this
# folder commits (one module per project: kubernetes/, kubernetes-1.35/, kwok/, kubewarden/,
# flux-source/, flux-kustomize/, flux-helm/, timoni/, argocd/, crossplane/,
# crossplane-function/).
#
# usage: control-plane/build.sh PROGRAM   (progress on stderr, the path alone on stdout)
#        control-plane/build.sh --exports PROGRAM...   (`export VARIABLE=PATH` lines, to eval)
#   PROGRAM: kube-apiserver, kubectl, kube-controller-manager, kube-scheduler (Kubernetes 1.37),
#            kube-apiserver-1.35, kube-controller-manager-1.35, kube-scheduler-1.35 (the
#            smoke's older release), kwok,
#            kubewarden-controller, audit-scanner (github.com/kubewarden/adm-controller),
#            source-controller, kustomize-controller, helm-controller (Flux), timoni,
#            argocd (Argo CD's one binary: application controller, repo server, ... by argv[0]),
#            crossplane (Crossplane's core), function-patch-and-transform (a composition function)
# A program's variable (KUBE_APISERVER, KUBECTL, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, KUBE_APISERVER_SMOKE,
# KWOK, KUBEWARDEN_CONTROLLER, AUDIT_SCANNER, FLUX_SOURCE_CONTROLLER, FLUX_KUSTOMIZE_CONTROLLER,
# FLUX_HELM_CONTROLLER, TIMONI, ARGOCD, CROSSPLANE, CROSSPLANE_FUNCTION), when set, names a binary of your own: its path is printed and
# nothing is built.
# The cache: $SINGLE_OWNER_CACHE, or ~/.cache/single-owner-policy; one directory per module
# and per content of its go.mod and go.sum, so a changed pin builds anew and the old build is
# left alone. Every program a module lists as a tool is built in one `go build`: they share
# most packages, and the others are asked for by the same suites.
set -euo pipefail
# The whole script is read before any of it runs (main, below): a build takes minutes, and
# bash reads a script as it goes, so an edit made meanwhile would run half of each version.
main() {
if [ "${1:-}" = --exports ]; then
  exports "${@:2}"
  return
fi
exec 3>&1 1>&2
here="$(cd "$(dirname "$0")" && pwd)"
log() { echo "control-plane/build.sh: $*" >&2; }

program="${1:?usage: control-plane/build.sh PROGRAM}"
# Each program's variable: a binary of your own, used as it is (nothing is built).
name="${program%-1.35}" # the file `go build` names after the tool's last path element
case "$program" in
  kube-apiserver) module=kubernetes var=KUBE_APISERVER ;;
  kubectl) module=kubernetes var=KUBECTL ;;
  kube-controller-manager) module=kubernetes var=KUBE_CONTROLLER_MANAGER ;;
  kube-scheduler) module=kubernetes var=KUBE_SCHEDULER ;;
  kube-apiserver-1.35) module=kubernetes-1.35 var=KUBE_APISERVER_SMOKE ;;
  kube-controller-manager-1.35) module=kubernetes-1.35 var="" ;;
  kube-scheduler-1.35) module=kubernetes-1.35 var="" ;;
  kwok) module=kwok var=KWOK ;;
  kubewarden-controller) module=kubewarden var=KUBEWARDEN_CONTROLLER name=controller ;;
  audit-scanner) module=kubewarden var=AUDIT_SCANNER ;;
  source-controller) module=flux-source var=FLUX_SOURCE_CONTROLLER ;;
  kustomize-controller) module=flux-kustomize var=FLUX_KUSTOMIZE_CONTROLLER ;;
  helm-controller) module=flux-helm var=FLUX_HELM_CONTROLLER ;;
  timoni) module=timoni var=TIMONI ;;
  argocd) module=argocd var=ARGOCD name=cmd ;;
  crossplane) module=crossplane var=CROSSPLANE ;;
  function-patch-and-transform) module=crossplane-function var=CROSSPLANE_FUNCTION ;;
  *) log "unknown program '$program'"; exit 2 ;;
esac
given="${var:+${!var:-}}"
if [ -n "$given" ]; then
  [ -x "$given" ] || { log "$given (for $program) is not an executable"; exit 1; }
  echo "$given" >&3
  exit 0
fi
dir="$here/$module"
[ -f "$dir/go.mod" ] || { log "no $dir/go.mod"; exit 1; }

cache="${SINGLE_OWNER_CACHE:-$HOME/.cache/single-owner-policy}"
key="$(cat "$dir/go.mod" "$dir/go.sum" $([ -f "$dir/ldflags" ] && echo "$dir/ldflags") | sha256sum | cut -c1-16)"
bin="$cache/go/$module-$key"
if [ -x "$bin/$name" ]; then
  echo "$bin/$name" >&3
  exit 0
fi

command -v go >/dev/null || { log "Go is not installed (the machine's Go, 1.26 or newer)"; exit 1; }
# The module's tools: a `tool (...)` block, or `tool PATH` lines.
tools="$(sed -n -e '/^tool (/,/^)/{s/^\t//p}' -e 's/^tool \([^(].*\)$/\1/p' "$dir/go.mod")"
# ldflags: the version the binaries print (kube-apiserver --version), which a module build
# cannot know by itself; `@DATE@` is the build date.
ldflags="-s -w"
[ -f "$dir/ldflags" ] && ldflags+=" $(sed "s/@DATE@/$(date -u +%Y-%m-%dT%H:%M:%SZ)/g" "$dir/ldflags" | paste -sd' ')"

log "building $(echo $tools | wc -w) programs of $module/go.mod (a first build on 2 cores takes minutes)"
start=$SECONDS
tmp="$bin.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# -mod=readonly: go.sum is the pin. The machine's Go (GOTOOLCHAIN=local), unless go.mod names a
# newer one in a `toolchain` line (Flux 2.10's controllers need Go 1.27): then that toolchain,
# which the go command takes from the Go module proxy like a module, once per machine.
toolchain="$(sed -n 's/^toolchain //p' "$dir/go.mod")"
(cd "$dir" && CGO_ENABLED=0 GOTOOLCHAIN="${toolchain:-local}" GOFLAGS=-mod=readonly \
  go build -trimpath -ldflags "$ldflags" -o "$tmp/" $tools)
rm -rf "$bin"
mv "$tmp" "$bin"
trap - EXIT
log "built $module in $((SECONDS - start)) s: $(ls "$bin" | paste -sd' ')"
[ -x "$bin/$name" ] || { log "$module built no $name"; exit 1; }
echo "$bin/$name" >&3
}
# exports PROGRAM...: `export VARIABLE=PATH` for each (its variable, as above), built if need
# be; the Makefile evaluates it to hand the real tools to the suites.
exports() {
  local program path var
  for program in "$@"; do
    path="$("$0" "$program")" || return 1
    var="$(sed -n "s/^  $program) module=[^ ]* var=\([A-Z_]*\).*/\1/p" "$0")"
    [ -n "$var" ] || { echo "control-plane/build.sh: $program has no variable" >&2; return 1; }
    printf 'export %s=%q\n' "$var" "$path"
  done
}
main "$@"; exit
