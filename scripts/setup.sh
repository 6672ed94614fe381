#!/usr/bin/env bash
# Installs what building and testing need on a fresh machine; does nothing already done.
# usage: setup.sh [build]   (build: only what building the module and host needs)
set -euo pipefail

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  rustup target add wasm32-wasip1
fi

missing=()
command -v wasm-opt >/dev/null || missing+=(binaryen)
if [ "${1:-}" != build ]; then
  command -v bats >/dev/null || missing+=(bats)
  [ -d /usr/lib/bats/bats-assert ] || missing+=(bats-assert)
  [ -d /usr/lib/bats/bats-support ] || missing+=(bats-support)
  command -v jq >/dev/null || missing+=(jq)
  command -v curl >/dev/null || missing+=(curl)
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  command -v wasm-objdump >/dev/null || missing+=(wabt)
fi
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
