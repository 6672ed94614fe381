#!/usr/bin/env bash
# Prints the directory of a Go module's source, as one of this folder's go.mod files pins it
# (downloaded from the Go module proxy into the module cache when it is not there yet): the
# manifests the control plane takes from the tools' own releases (Kubewarden's CRDs, kwok's
# stages) are read from there, never copied into the repository.
#
# usage: control-plane/module-dir.sh FOLDER MODULE   (e.g. kubewarden github.com/kubewarden/adm-controller)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
folder="${1:?usage: module-dir.sh FOLDER MODULE}" module="${2:?usage: module-dir.sh FOLDER MODULE}"
cd "$here/$folder"
# The toolchain go.mod names, as build.sh takes it (Flux's modules need Go 1.27), else the machine's.
toolchain="$(sed -n 's/^toolchain //p' go.mod)"
export GOTOOLCHAIN="${toolchain:-local}"
version="$(GOFLAGS=-mod=readonly go list -m -f '{{.Version}}' "$module")"
GOFLAGS=-mod=readonly go mod download -json "$module@$version" |
  python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["Dir"]) if d.get("Dir") else sys.exit(d.get("Error", "no Dir"))'
