#!/usr/bin/env python3
"""Writes the large AdmissionRequests used by the e2e suite and the benchmark.

usage: make-requests.py OUTDIR

Each case is written twice: NAME-accept.json (same owner on both sides) and NAME-reject.json
(the owner changes from ext-a to ext-b). The real CRD is read from ../shared/data.
"""
import copy
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROMETHEUS = ROOT.parent / "shared" / "data" / "crd-prometheuses.monitoring.coreos.com.json"
KIND = "olm.operatorframework.io/owner-kind"
NAME = "olm.operatorframework.io/owner-name"


def owned(obj, owner):
    o = copy.deepcopy(obj)
    o.setdefault("metadata", {}).setdefault("labels", {}).update({KIND: "ClusterExtension", NAME: owner})
    return o


def pair(kind, group, obj, namespace=None):
    """The accept (same owner) and reject (owner change) requests for one object."""
    old = owned(obj, "ext-a")
    return {"accept": request(kind, group, owned(obj, "ext-a"), old, namespace),
            "reject": request(kind, group, owned(obj, "ext-b"), old, namespace)}


def schema(depth, breadth, leaf_props):
    """A field-rich openAPIV3Schema: nested objects with described, typed properties."""
    props = {}
    for i in range(leaf_props):
        props[f"field{i}"] = {"type": "string", "description": f"Field {i} of the generated schema, "
                              "documented as real CRDs are, with defaults and validation.",
                              "maxLength": 253, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
        props[f"count{i}"] = {"type": "integer", "format": "int32", "minimum": 0, "default": 1}
    if depth > 0:
        for b in range(breadth):
            props[f"nested{b}"] = schema(depth - 1, breadth, leaf_props)
    return {"type": "object", "description": "A generated object.", "properties": props,
            "required": ["field0"], "x-kubernetes-preserve-unknown-fields": False}


def crd(name, open_api):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "resourceVersion": "1001", "annotations": {"controller-gen.kubebuilder.io/version": "v0.16.0"}},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": name.split(".")[0], "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": open_api}}]}}


def sized_crd(target_bytes):
    """A synthetic field-rich CRD of about target_bytes (old + new object ~2x)."""
    versions = []
    base = crd("giants.example.com", schema(3, 3, 4))
    one = base["spec"]["versions"][0]
    step = len(json.dumps(one))
    for i in range(max(1, target_bytes // step)):
        v = copy.deepcopy(one)
        v["name"] = f"v{i + 1}"
        v["storage"] = i == 0
        versions.append(v)
    base["spec"]["versions"] = versions
    return base


def nested_crd(depth):
    s = {"type": "string"}
    for i in range(depth):
        s = {"type": "object", "properties": {f"level{depth - i}": s}}
    return crd("deep.example.com", s)


def configmap(size):
    line = "key=value with enough text to look like a rendered config file line\n"
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big-config", "namespace": "widgets", "resourceVersion": "7"},
            "data": {"config.txt": (line * (size // len(line) + 1))[:size]}}


def deployment(size):
    containers = []
    i = 0
    while len(json.dumps(containers)) < size:
        containers.append({"name": f"sidecar-{i}", "image": f"ghcr.io/example/sidecar-{i}:1.0.{i}",
                           "args": [f"--flag-{j}=value-{j}" for j in range(20)],
                           "env": [{"name": f"ENV_{j}", "value": f"value-{j}"} for j in range(20)],
                           "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}})
        i += 1
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "widget-controller", "namespace": "widgets", "resourceVersion": "9"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
                     "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": containers}}}}


def small_crd():
    return crd("widgets.example.com", {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1},
                                                 "color": {"type": "string", "enum": ["red", "blue"]}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}})


def managed(obj):
    """The object as the API server stores and sends it: with managedFields, here those of
    operator-controller's server-side apply and of the API server's status updates."""
    o = copy.deepcopy(obj)
    o["metadata"]["managedFields"] = [
        {"manager": "operator-controller", "operation": "Apply", "apiVersion": "apiextensions.k8s.io/v1",
         "time": "2026-11-30T10:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:annotations": {"f:controller-gen.kubebuilder.io/version": {}},
                                     "f:labels": {f"f:{KIND}": {}, f"f:{NAME}": {}}},
                      "f:spec": {"f:group": {}, "f:names": {"f:kind": {}, "f:plural": {}}, "f:scope": {},
                                 "f:versions": {}}}},
        {"manager": "kube-apiserver", "operation": "Update", "apiVersion": "apiextensions.k8s.io/v1",
         "time": "2026-11-30T10:00:01Z", "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": {"f:acceptedNames": {"f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:singular": {}},
                                   "f:conditions": {f'k:{{"type":"{t}"}}': {".": {}, "f:lastTransitionTime": {}, "f:message": {},
                                                                             "f:reason": {}, "f:status": {}, "f:type": {}}
                                                    for t in ("Established", "NamesAccepted")}}}}]
    return o


def delete_and_connect():
    """A DELETE (the API server sends the stored object as oldObject) and a CONNECT (pod exec):
    accepted without reading the objects' owners."""
    delete = request("CustomResourceDefinition", "apiextensions.k8s.io", None, owned(small_crd(), "ext-a"))
    delete.update({"operation": "DELETE", "name": "widgets.example.com"})
    connect = {"uid": "bench-connect", "kind": {"group": "", "version": "v1", "kind": "PodExecOptions"},
               "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "exec",
               "name": "widget-0", "namespace": "widgets", "operation": "CONNECT",
               "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
               "object": {"apiVersion": "v1", "kind": "PodExecOptions", "stdin": True, "tty": True,
                          "container": "manager", "command": ["sh"]}, "oldObject": None, "dryRun": False}
    return {"delete": {"accept": delete}, "connect": {"accept": connect}}


def request(kind, group, obj, old, namespace=None):
    r = {"uid": "bench-" + kind.lower(), "kind": {"group": group, "version": "v1", "kind": kind},
         "resource": {"group": group, "version": "v1", "resource": kind.lower() + "s"},
         "name": (obj or old)["metadata"]["name"], "operation": "UPDATE",
         "userInfo": {"username": "system:serviceaccount:olmv1-system:operator-controller"},
         "object": obj, "oldObject": old, "dryRun": False}
    if namespace:
        r["namespace"] = namespace
    return r


def creates():
    """CREATEs of unowned objects by operator-controller's account: what the stamping policy
    stamps (bench/run.py's identity table), a 2 KB CRD and a 1 MB ConfigMap."""
    for name, kind, group, obj, ns in (("crd-2kb", "CustomResourceDefinition", "apiextensions.k8s.io", small_crd(), None),
                                       ("configmap-1mb", "ConfigMap", "", configmap(500_000), "widgets")):
        r = request(kind, group, obj, None, ns)
        r["operation"] = "CREATE"
        yield name, r


def second_tools():
    """UPDATEs that add a Helm release's annotations to a CRD a ClusterExtension owns: refused
    across tools under deploy/all-tools.yaml (bench/run.py's several-tools table)."""
    for name, obj in (("crd-2kb", small_crd()), ("crd-prometheus", json.loads(PROMETHEUS.read_text()))):
        old = owned(obj, "ext-a")
        new = copy.deepcopy(old)
        new["metadata"].setdefault("annotations", {}).update(
            {"meta.helm.sh/release-name": "widgets", "meta.helm.sh/release-namespace": "widgets"})
        yield name, request("CustomResourceDefinition", "apiextensions.k8s.io", new, old)


def cases():
    yield "crd-2kb", pair("CustomResourceDefinition", "apiextensions.k8s.io", small_crd())
    yield "crd-managed", pair("CustomResourceDefinition", "apiextensions.k8s.io", managed(small_crd()))
    other = delete_and_connect()
    yield "delete", other["delete"]
    yield "connect", other["connect"]
    yield "deployment-50kb", pair("Deployment", "apps", deployment(24_000), "widgets")
    if PROMETHEUS.exists():
        yield "crd-prometheus", pair("CustomResourceDefinition", "apiextensions.k8s.io", json.loads(PROMETHEUS.read_text()))
    else:
        print(f"missing {PROMETHEUS}", file=sys.stderr)
        sys.exit(1)
    yield "crd-synthetic-1mb", pair("CustomResourceDefinition", "apiextensions.k8s.io", sized_crd(550_000))
    yield "crd-synthetic-4mb", pair("CustomResourceDefinition", "apiextensions.k8s.io", sized_crd(2_200_000))
    yield "configmap-1mb", pair("ConfigMap", "", configmap(500_000), "widgets")
    yield "configmap-4mb", pair("ConfigMap", "", configmap(2_000_000), "widgets")
    yield "crd-nested-100", pair("CustomResourceDefinition", "apiextensions.k8s.io", nested_crd(100))


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, pair_ in cases():
        for outcome, req in pair_.items():
            (out / f"{name}-{outcome}.json").write_text(json.dumps(req, separators=(",", ":")))
    for name, req in creates():
        (out / f"{name}-create.json").write_text(json.dumps(req, separators=(",", ":")))
    for name, req in second_tools():
        (out / f"{name}-second-tool.json").write_text(json.dumps(req, separators=(",", ":")))


if __name__ == "__main__":
    main()
