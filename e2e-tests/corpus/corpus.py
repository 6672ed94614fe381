#!/usr/bin/env python3
"""The lifecycle corpus: what each tool writes through its own lifecycle, as data.

Each `<tool>.yaml` beside this file lists a tool's writes: install, upgrade, rollback,
uninstall and adoption, under each naming, tracking and identity option, each citing the
source it comes from. A write is an AdmissionRequest's operation, writer (`userInfo`), object
and the owner keys (labels, annotations) of the old and the new object, with the objects a
context-aware rule of the policy looks up for it (`lookups`, replayed as kwctl's recorded
host-capability sessions). A write the tool makes in its ordinary work says `expect: accept`:
every preset must accept it (an identity preset only the writes of the identity it assumes,
`presets.yaml`). A write over another owner's object says `expect: refuse` and the presets
that must refuse it (`refused_by`).

usage: corpus.py check            (the corpus and presets.yaml hold together)
       corpus.py build OUTDIR     (requests, sessions and OUTDIR/cases.tsv, one case a line:
                                   preset, tool, write, request, session, expect)
       corpus.py list             (the writes, one a line, for the README's tables)
"""
import copy
import json
import pathlib
import sys

import yaml

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent.parent

# kind -> (group, version, resource, namespaced)
KINDS = {
    "ConfigMap": ("", "v1", "configmaps", True),
    "Secret": ("", "v1", "secrets", True),
    "Service": ("", "v1", "services", True),
    "ServiceAccount": ("", "v1", "serviceaccounts", True),
    "Namespace": ("", "v1", "namespaces", False),
    "Deployment": ("apps", "v1", "deployments", True),
    "ReplicaSet": ("apps", "v1", "replicasets", True),
    "StatefulSet": ("apps", "v1", "statefulsets", True),
    "Job": ("batch", "v1", "jobs", True),
    "Ingress": ("networking.k8s.io", "v1", "ingresses", True),
    "Role": ("rbac.authorization.k8s.io", "v1", "roles", True),
    "RoleBinding": ("rbac.authorization.k8s.io", "v1", "rolebindings", True),
    "ClusterRole": ("rbac.authorization.k8s.io", "v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", False),
    "CustomResourceDefinition": ("apiextensions.k8s.io", "v1", "customresourcedefinitions", False),
    "APIService": ("apiregistration.k8s.io", "v1", "apiservices", False),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False),
    "ClusterServiceVersion": ("operators.coreos.com", "v1alpha1", "clusterserviceversions", True),
    "ClusterObjectSet": ("olm.operatorframework.io", "v1", "clusterobjectsets", False),
    "HelmChart": ("source.toolkit.fluxcd.io", "v1", "helmcharts", True),
    "GitRepository": ("source.toolkit.fluxcd.io", "v1", "gitrepositories", True),
    "Kustomization": ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", True),
    "Application": ("argoproj.io", "v1alpha1", "applications", True),
    "App": ("example.crossplane.io", "v1", "apps", True),
    "HelmRelease": ("helm.toolkit.fluxcd.io", "v2", "helmreleases", True),
}
OPERATIONS = ("CREATE", "UPDATE", "DELETE")
FIELDS = {"name", "step", "source", "writer", "operation", "kind", "object", "namespace", "old", "new",
          "lookups", "expect", "refused_by", "as", "note"}


def load_tools():
    tools = {}
    for path in sorted(HERE.glob("*.yaml")):
        if path.name == "presets.yaml":
            continue
        doc = yaml.safe_load(path.read_text())
        tools[doc["tool"]] = (path, doc)
    return tools


def load_presets():
    return yaml.safe_load((HERE / "presets.yaml").read_text())["presets"]


def fail(message):
    sys.exit(f"corpus: {message}")


def check(tools, presets):
    manifests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "deploy").rglob("*.yaml")
                       if "rbac" not in p.parts)
    for m in manifests:
        if m not in presets:
            fail(f"{m} is not in presets.yaml: a preset lands with the tools it covers and their writes")
    for m, p in presets.items():
        if m not in manifests:
            fail(f"presets.yaml names {m}, which is not a manifest in deploy/")
        for tool in p["covers"]:
            if tool not in tools:
                fail(f"{m} covers {tool}, which has no corpus file")
        for tool in p.get("assumes", {}):
            if tool not in p["covers"]:
                fail(f"{m} assumes something of {tool}, which it does not cover")
    refused = {m: 0 for m in presets}
    for tool, (path, doc) in tools.items():
        # markers: what the tool writes to mark an owner besides its keys (docs/tools.md).
        for key in ("tool", "title", "versions", "markers", "writers", "writes"):
            if key not in doc:
                fail(f"{path.name}: {key} is missing")
        names = set()
        for w in doc["writes"]:
            where = f"{path.name}: {w.get('name')}"
            unknown = set(w) - FIELDS
            if unknown:
                fail(f"{where}: unknown fields {sorted(unknown)}")
            for key in ("name", "step", "source", "writer", "operation", "kind", "object", "expect"):
                if key not in w:
                    fail(f"{where}: {key} is missing")
            if w["name"] in names:
                fail(f"{where}: named twice")
            names.add(w["name"])
            if w["writer"] not in doc["writers"]:
                fail(f"{where}: writer {w['writer']} is not in writers")
            if w["operation"] not in OPERATIONS:
                fail(f"{where}: operation {w['operation']}")
            if w["kind"] not in KINDS:
                fail(f"{where}: kind {w['kind']} is not in corpus.py's KINDS")
            if KINDS[w["kind"]][3] != ("namespace" in w):
                fail(f"{where}: a namespaced kind has a namespace, a cluster-scoped one none")
            if (w["operation"] != "DELETE") != ("new" in w) or (w["operation"] != "CREATE") != ("old" in w):
                fail(f"{where}: CREATE has new, DELETE old, UPDATE both")
            if not any(s in w["source"] for s in ("/", ".go", ".rs")):
                fail(f"{where}: source must cite the tool's source (repository path, function)")
            if w["expect"] == "refuse":
                if not w.get("refused_by"):
                    fail(f"{where}: a refusal names the presets that refuse it (refused_by)")
                for m in w["refused_by"]:
                    if m not in presets:
                        fail(f"{where}: refused_by {m}, which is not a preset")
                    refused[m] += 1
            elif w["expect"] != "accept":
                fail(f"{where}: expect is accept or refuse")
            for lookup in w.get("lookups", []):
                if set(lookup) - {"apiVersion", "kind", "name", "namespace", "found", "error", "list"}:
                    fail(f"{where}: a lookup has apiVersion, kind, name, namespace, and found or error")
                if ("found" in lookup) == ("error" in lookup):
                    fail(f"{where}: a lookup has found or error")
        accepts = sum(1 for w in doc["writes"] if w["expect"] == "accept")
        if accepts == 0:
            fail(f"{path.name}: no write of the tool's own lifecycle")
    for m, p in presets.items():
        if p.get("refuses", True) and refused[m] == 0:
            fail(f"{m} refuses no write of the corpus: add the second owner it stops")


def object_of(w, side, doc):
    kind = w["kind"]
    group, version, _, _ = KINDS[kind]
    keys = w[side] or {}
    meta = {"name": w["object"], "uid": "5d2c1f3e-0a9b-4c7d-8e6f-1a2b3c4d5e6f",
            "resourceVersion": "2001" if side == "new" else "2000",
            "creationTimestamp": "2026-11-20T09:00:00Z"}
    if "namespace" in w:
        meta["namespace"] = w["namespace"]
    if keys.get("labels") is not None:
        meta["labels"] = keys["labels"]
    if keys.get("annotations") is not None:
        meta["annotations"] = keys["annotations"]
    if keys.get("ownerReferences"):
        meta["ownerReferences"] = keys["ownerReferences"]
    meta["managedFields"] = [{"manager": doc.get("fieldManager", w["writer"]), "operation": "Update",
                              "apiVersion": f"{group}/{version}" if group else version,
                              "time": "2026-11-20T09:00:00Z", "fieldsType": "FieldsV1",
                              "fieldsV1": {"f:metadata": {"f:labels": {}}}}]
    obj = {"apiVersion": f"{group}/{version}" if group else version, "kind": kind, "metadata": meta}
    obj.update(copy.deepcopy(keys.get("body", {"spec": {"note": f"{side} of {w['name']}"}})))
    return obj


def request_of(tool, w, doc):
    group, version, resource, _ = KINDS[w["kind"]]
    gvk = {"group": group, "version": version, "kind": w["kind"]}
    gvr = {"group": group, "version": version, "resource": resource}
    op = w["operation"]
    r = {"uid": f"corpus-{tool}-{w['name']}", "kind": gvk, "resource": gvr,
         "requestKind": gvk, "requestResource": gvr, "name": w["object"], "operation": op,
         "userInfo": doc["writers"][w["writer"]],
         "object": object_of(w, "new", doc) if "new" in w else None,
         "oldObject": object_of(w, "old", doc) if "old" in w else None,
         "dryRun": False,
         "options": {"apiVersion": "meta.k8s.io/v1",
                     "kind": {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[op]}}
    if "namespace" in w:
        r["namespace"] = w["namespace"]
    return r


def session_of(w):
    """kwctl's recorded session: each request a YAML document as a string, tagged."""
    out = []
    for lookup in w.get("lookups", []):
        if lookup.get("list"):
            lines = ["!KubernetesListResourceAll", f"api_version: {lookup['apiVersion']}",
                     f"kind: {lookup['kind']}", f"label_selector: {json.dumps(lookup['list']['labelSelector'])}",
                     f"field_selector: {json.dumps(lookup['list']['fieldSelector'])}"]
        else:
            ns = lookup.get("namespace")
            lines = ["!KubernetesGetResource", f"api_version: {lookup['apiVersion']}", f"kind: {lookup['kind']}",
                     f"name: {lookup['name']}", f"namespace: {ns if ns else 'null'}", "disable_cache: false"]
        if "found" in lookup:
            response = {"type": "Success", "payload": json.dumps(lookup["found"], separators=(",", ":"))}
        else:
            response = {"type": "Error", "message": lookup["error"]}
        out.append({"type": "Exchange", "request": "\n".join(lines) + "\n", "response": response})
    return out


class Session(yaml.SafeDumper):
    """Writes each recorded request as kwctl does: a `|` block."""


Session.add_representer(str, lambda d, v: d.represent_scalar(
    "tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))


def build(tools, presets, outdir):
    outdir = pathlib.Path(outdir)
    lines = []
    for tool, (_, doc) in tools.items():
        (outdir / tool).mkdir(parents=True, exist_ok=True)
        for w in doc["writes"]:
            request = outdir / tool / f"{w['name']}.json"
            session = outdir / tool / f"{w['name']}.session.yml"
            request.write_text(json.dumps(request_of(tool, w, doc), indent=1))
            session.write_text(yaml.dump(session_of(w), Dumper=Session, sort_keys=False, width=1000)
                              if w.get("lookups") else "[]\n")
            for m, p in presets.items():
                if w["expect"] == "refuse":
                    if m not in w["refused_by"]:
                        continue
                else:
                    wanted = p.get("assumes", {}).get(tool)
                    if wanted is not None and w.get("as") not in wanted:
                        continue
                lines.append("\t".join([m, tool, w["name"], str(request), str(session), w["expect"]]))
    (outdir / "cases.tsv").write_text("\n".join(lines) + "\n")


def listing(tools):
    for tool, (_, doc) in tools.items():
        for w in doc["writes"]:
            print(f"{tool}\t{w['name']}\t{w['step']}\t{w['expect']}\t{w['source']}")


def main():
    tools, presets = load_tools(), load_presets()
    check(tools, presets)
    match sys.argv[1:]:
        case ["check"]:
            n = sum(len(doc["writes"]) for _, doc in tools.values())
            print(f"corpus: {len(tools)} tools, {n} writes, {len(presets)} presets")
        case ["build", outdir]:
            build(tools, presets, outdir)
        case ["list"]:
            listing(tools)
        case _:
            sys.exit(__doc__)


if __name__ == "__main__":
    main()
