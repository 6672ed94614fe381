#!/usr/bin/env python3
"""Sends writes through the real API server of control-plane/cluster.sh and checks, per policy of the
cluster, that the API server sent to the webhook backend exactly the writes `policy-host
selects` predicts from the policy's manifest (its rules, objectSelector and matchConditions):
the proof's prediction (policy-host/src/proof.rs, e2e-tests/skips.bats) held against the real
evaluator of matchConditions.

usage: selection.py REQUEST...   (AdmissionRequest or AdmissionReview files)

Each write keeps the metadata of its request (labels, annotations, ownerReferences: all the
policy's conditions read) on an object of the same scope that any API server accepts with
metadata alone: a ConfigMap in namespace `default`, or a ClusterRole. An UPDATE's stored
object is created first by a member of the break-glass group (which the presets let through
on Kubernetes 1.30+); the write itself is made as the cluster's admin. Before 1.30 the
prediction drops matchConditions, as kubewarden-controller does. A request whose object
the API server's validation refuses (a label value no label may hold) is no write: counted
apart. Reads the cluster from its env file (control-plane/cluster.sh: APISERVER_URLS, ...,
MANIFESTS, BACKEND_LOG).
"""

import json
import os
import pathlib
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
POLICY_HOST = os.environ.get("POLICY_HOST", str(ROOT / "target/host/policy-host"))
SERVER = os.environ["APISERVER_URLS"].split(",")[0]
TOKEN = os.environ["APISERVER_TOKEN"]
CONTEXT = ssl.create_default_context(cafile=os.environ["APISERVER_CA"])
LOG = pathlib.Path(os.environ["BACKEND_LOG"])
MANIFESTS = os.environ["MANIFESTS"].split()
ADMIN = {"username": "admin", "groups": ["system:masters", "system:authenticated"]}
BREAK_GLASS = ["single-owner:break-glass", "system:masters"]
NAMESPACE = "default"
MINOR = os.environ["KUBERNETES_MINOR"]


def call(method, path, body=None, break_glass=False):
    """One API request: (status, answer)."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    request = urllib.request.Request(SERVER + path, method=method, headers=headers,
                                     data=json.dumps(body).encode() if body is not None else None)
    if break_glass:
        request.add_header("Impersonate-User", "selection-setup")
        for group in BREAK_GLASS:
            request.add_header("Impersonate-Group", group)
    try:
        with urllib.request.urlopen(request, context=CONTEXT, timeout=30) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def target(request, i):
    """The kind, path and objects a request is replayed with."""
    cluster_scoped = not request.get("namespace") or request["kind"]["kind"] == "Namespace"
    name = f"selection-{i}"

    def body(side, step):
        meta = (request.get(side) or {}).get("metadata") or {}
        m = {"name": name}
        if not cluster_scoped:
            m["namespace"] = NAMESPACE
        for field in ("labels", "annotations"):
            if meta.get(field):
                m[field] = meta[field]
        if meta.get("ownerReferences"):
            m["ownerReferences"] = [{"uid": f"00000000-0000-0000-0000-00000000000{n}", **r}
                                    for n, r in enumerate(meta["ownerReferences"])]
        if cluster_scoped:
            return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": m,
                    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": [step]}]}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"step": step}}

    if cluster_scoped:
        gvk = {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole"}
        gvr = {"group": "rbac.authorization.k8s.io", "version": "v1", "resource": "clusterroles"}
        collection = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    else:
        gvk = {"group": "", "version": "v1", "kind": "ConfigMap"}
        gvr = {"group": "", "version": "v1", "resource": "configmaps"}
        collection = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    new = body("object", "list")
    old = body("oldObject", "get") if request["operation"] == "UPDATE" else None
    sent = {"uid": f"selection-{i}", "kind": gvk, "resource": gvr, "requestKind": gvk,
            "requestResource": gvr, "name": name, "operation": request["operation"],
            "userInfo": ADMIN, "object": new, "oldObject": old}
    if not cluster_scoped:
        sent["namespace"] = NAMESPACE
    return name, collection, old, new, sent


def predicted(files):
    """For each manifest, the request files policy-host selects says are sent."""
    out = {}
    for manifest in MANIFESTS:
        args = [a for f in files for a in ("-r", f)]
        lines = subprocess.run([POLICY_HOST, "selects", manifest, "--kubernetes-minor", MINOR, *args], check=True,
                               capture_output=True, text=True).stdout.splitlines()
        out[manifest] = {line.split(" ", 1)[1] for line in lines if line.startswith("sent ")}
    return out


def policy_id(manifest):
    """The policy's id in the backend's log (its webhook's name without the suffix)."""
    for line in open(manifest):
        if line.startswith("  name: "):
            return os.environ.get("POLICY_ID_PREFIX", "clusterwide-") + line.split(":", 1)[1].strip()
    raise SystemExit(f"{manifest}: no metadata.name")


def readable(request):
    """Whether the request's objects have metadata an object can carry (not the hostile
    fixtures', which no API server sends)."""
    for side in ("object", "oldObject"):
        meta = (request.get(side) or {}).get("metadata", {})
        if not isinstance(meta, dict):
            return False
        for field in ("labels", "annotations"):
            value = meta.get(field) or {}
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                return False
    return True


def main(paths):
    requests = []
    for path in paths:
        r = json.loads(pathlib.Path(path).read_text())
        r = r.get("request", r) if r.get("kind") == "AdmissionReview" else r
        if r.get("operation") in ("CREATE", "UPDATE") and not r.get("subResource") and readable(r):
            requests.append((path, r))
    work = pathlib.Path(tempfile.mkdtemp(prefix="selection-"))
    replays = []
    for i, (path, r) in enumerate(requests):
        name, collection, old, new, sent = target(r, i)
        file = work / f"{i}.json"
        file.write_text(json.dumps(sent))
        replays.append((path, name, collection, old, new, str(file)))
    expected = predicted([f for *_, f in replays])
    ids = {m: policy_id(m) for m in MANIFESTS}
    mismatches, invalid, writes, written = [], 0, 0, []
    for path, name, collection, old, new, file in replays:
        if old is not None:
            # Before 1.30 the webhooks see the break-glass group too (no matchConditions): a
            # stored object the policy refuses to create is no write either.
            status, stored = call("POST", collection, old, break_glass=True)
            if status >= 300:
                invalid += 1
                continue
            new = {**new, "metadata": {**new["metadata"], "resourceVersion": stored["metadata"]["resourceVersion"]}}
        position = LOG.stat().st_size
        if old is not None:
            status, answer = call("PUT", f"{collection}/{name}", new)
        else:
            status, answer = call("POST", collection, new)
        with open(LOG) as log:
            log.seek(position)
            seen = [json.loads(line) for line in log if line.strip()]
        call("DELETE", f"{collection}/{name}", break_glass=True)
        if status in (400, 422) and answer.get("reason") in ("Invalid", "BadRequest"):
            invalid += 1
            continue
        writes += 1
        written.append(file)
        got = {e["policy"] for e in seen if e.get("name") == name}
        for manifest in MANIFESTS:
            want, have = file in expected[manifest], ids[manifest] in got
            if want != have:
                mismatches.append(f"{path}: {pathlib.Path(manifest).name} predicted "
                                  f"{'sent' if want else 'not sent'}, the API server "
                                  f"{'sent' if have else 'did not send'} it (answer {status})")
    sent = {m: sum(1 for f in written if f in expected[m]) for m in MANIFESTS}
    print(f"{writes} writes through the API server ({invalid} refused by its validation, no write), "
          f"{len(MANIFESTS)} policies; sent as predicted: "
          + ", ".join(f"{pathlib.Path(m).stem} {sent[m]}" for m in MANIFESTS))
    for m in mismatches:
        print(m)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
