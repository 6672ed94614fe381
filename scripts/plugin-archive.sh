#!/usr/bin/env bash
# The release archive of `kubectl single-owner` for one platform, as krew installs it: a
# .tar.gz holding the binary kubectl-single_owner and LICENSE at its root, and beside it its
# sha256 sum (the release workflow's; make kubectl-plugin-archive).
#
# usage: scripts/plugin-archive.sh BINARY PLATFORM OUTDIR   (PLATFORM: linux_amd64, darwin_arm64, ...)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
binary="$1" platform="$2" out="$3"
[ -x "$binary" ] || { echo "plugin-archive: $binary is not an executable" >&2; exit 1; }
mkdir -p "$out"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp "$binary" "$stage/kubectl-single_owner"
cp "$root/LICENSE" "$stage/LICENSE"
archive="$out/kubectl-single_owner-$platform.tar.gz"
# Reproducible: fixed owner, order and times.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00:00Z' \
  -C "$stage" -cf - kubectl-single_owner LICENSE | gzip -n >"$archive"
(cd "$out" && sha256sum "$(basename "$archive")" >"$(basename "$archive").sha256")
echo "$archive"
