#!/usr/bin/env bash
# Prints Kubewarden's own CRDs, from its release (the kubewarden-crds chart of the
# github.com/kubewarden/adm-controller module that kubewarden/go.mod pins), as its chart
# installs them: `policies` (PolicyServer, ClusterAdmissionPolicy, AdmissionPolicy and the
# groups), `reports` (wgpolicyk8s.io's PolicyReport and ClusterPolicyReport, served at
# v1alpha1, v1alpha2 and v1beta1, stored at v1beta1; and the openreports subchart's Report and
# ClusterReport, v1alpha1), or both (`all`). The chart's Helm conditions around the
# wgpolicyk8s.io files (on by default) are left out; the files are otherwise as released.
#
# usage: control-plane/kubewarden-crds.sh [policies|reports|all]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
what="${1:-all}"
chart="$("$here/module-dir.sh" kubewarden github.com/kubewarden/adm-controller)/charts/kubewarden-crds"
if [[ "$what" == all || "$what" == policies ]]; then
  for f in "$chart"/templates/crds/*.yaml; do
    echo ---
    cat "$f"
  done
fi
if [[ "$what" == all || "$what" == reports ]]; then
  for f in "$chart"/templates/policyreports.yaml "$chart"/templates/clusterpolicyreports.yaml; do
    grep -v '^{{' "$f"
  done
  for f in openreports.io_reports.yaml openreports.io_clusterreports.yaml; do
    echo ---
    tar xzf "$chart"/charts/openreports-*.tgz -O "openreports/templates/$f"
  done
fi
