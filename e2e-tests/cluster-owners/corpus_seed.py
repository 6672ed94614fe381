#!/usr/bin/env python3
"""The lifecycle corpus as a cluster: what e2e-tests/corpus/<tool>.yaml's lifecycles leave
behind, with every owner they name, and planted findings of every kind kubectl single-owner
reports (corpus.bats seeds a real API server with it and scans it).

usage: corpus_seed.py crds                           (the CRDs the seed needs beyond crds.yaml)
       corpus_seed.py manifests OUT.yaml [EXPECTED.json]

What the manifests hold:
- For each tool file (corpus.py's order), the final state of each (kind, namespace, name)
  after its `expect: accept` writes, in order: a CREATE or UPDATE leaves its `new` labels,
  annotations and ownerReferences, a DELETE removes the object. The writes' `body` is not
  used (a final state's body is never given; one write's is an upgrade's intermediate spec):
  each kind gets a minimal valid body instead (a pod template, a port, a CRD spec from its
  name `<plural>.<group>`). ownerReferences keep the corpus' uids: nothing on this API server
  collects garbage, and the rules compare owners by name (a uid cannot be chosen at create).
- The objects of the accepted writes' `lookups` (the CSVs with `replaces`, the HelmReleases
  with `spec.releaseName`, the ClusterObjectSets with their owner labels, the
  ClusterExtension), last one wins; one that is also a corpus object keeps the corpus' labels
  and annotations and takes the lookup's spec and ownerReferences. The lookups of refused
  writes are left out: they are the other owners of refusals (a ClusterObjectSet naming the
  extension `argocd-1`), which would be planted findings of no one's.
- Every owner the seeded objects' keys name, so none is gone: ClusterExtensions,
  ClusterServiceVersions, HelmReleases (spec.targetNamespace where the release lives
  elsewhere), Kustomizations, Argo CD Applications (`<ns>_<app>` tracking ids in `<ns>`, else
  in `argocd`), Helm releases' storage Secrets, ApplySet parents (a Secret labelled with the
  id, where the corpus leaves none); and the namespaces all of them need.
- Crossplane's composite resources (XRs), of the corpus' own kinds (CRDs of theirs), named by
  the seeded objects' controller references: corpus.bats gives each reference its XR's uid.
- Planted findings, in namespace `planted` (cluster-scoped: named `planted-*`), one object
  each with exactly one finding: PLANTED below.

EXPECTED.json: {"owners": [{tool, owner, objects}] as `owners -o json` groups them under
deploy/all-tools.yaml (an object of one owner under an alias's two schemes under the alias's
first, one of a two-owners finding under both), "findings": the planted findings, "tools":
each corpus file's seeded objects (and "lookups", "owners": the looked-up objects and the
owners added), "left_out": what was left out and why}. What is left out is also said on
stderr; so are the counts of what is seeded.

Collisions: where two corpus files leave the same (kind, namespace, name), the first file's
(corpus.py's order) is kept and the other's left out (flux's Service apps/podinfo, adopted
from kubectl, is flux-helm's install-with-storage-namespace Service too).
Kinds a bare API server serves badly: the APIService is a local one whose group a stand-in
CRD serves (not one pointing at a Service: see `body`); the ValidatingWebhookConfiguration has
no webhooks. Nothing runs controllers: no Pods, no garbage collection, no status but the
lookups' own.
"""
import base64
import copy
import json
import pathlib
import sys

import yaml

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "corpus"))
import corpus  # noqa: E402

KINDS = dict(corpus.KINDS)
# Owner kinds and stand-ins the corpus' writes do not write themselves.
KINDS.update({
    "ClusterExtension": ("olm.operatorframework.io", "v1", "clusterextensions", False),
    "Kustomization": ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", True),
    "Application": ("argoproj.io", "v1alpha1", "applications", True),
})
# The composite resources (XRs) of the Crossplane corpus' controller references: the user's
# kinds, served by CRDs of their own (crds()), each XR an owner object.
XR_KINDS = {
    "App": ("example.crossplane.io", "v1", "apps", True),
    "XNetwork": ("example.org", "v1", "xnetworks", False),
    "XPlatform": ("example.org", "v1", "xplatforms", False),
    "XUser": ("example.org", "v1", "xusers", False),
    "XPostgres": ("db.example.org", "v1alpha1", "xpostgreses", False),
}
KINDS.update(XR_KINDS)
ORDER = ["Namespace", "CustomResourceDefinition", *XR_KINDS, "ClusterExtension", "ClusterObjectSet",
         "ClusterServiceVersion", "GitRepository", "HelmRelease", "Kustomization", "Application", "HelmChart",
         "Secret", "ServiceAccount", "ConfigMap", "Service", "Deployment", "ReplicaSet", "StatefulSet", "Job",
         "Ingress", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "APIService",
         "ValidatingWebhookConfiguration"]

ARGOCD_NAMESPACE = "argocd"
PLANTED_NS = "planted"
OLM_KIND = "olm.operatorframework.io/owner-kind"
OLM_NAME = "olm.operatorframework.io/owner-name"
REVISION = "olm.operatorframework.io/revision"
HANDOVER = "single-owner.kubewarden.io/handover-to"
RELEASE = "meta.helm.sh/release-name"
RELEASE_NS = "meta.helm.sh/release-namespace"
TRACKING = "argocd.argoproj.io/tracking-id"
INSTALLATION = "argocd.argoproj.io/installation-id"
FLUX_HELM = ("helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace")
KUSTOMIZE = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")
OLM_V0 = ("olm.owner", "olm.owner.kind", "olm.owner.namespace")
PART_OF = "applyset.kubernetes.io/part-of"
APPLYSET_ID = "applyset.kubernetes.io/id"
KAPP_APP = "kapp.k14s.io/app"
KAPP_IS_APP = "kapp.k14s.io/is-app"
COMPOSITE = "crossplane.io/composite"

# deploy/all-tools.yaml's schemes, in order: name, label keys, annotation keys.
SCHEMES = [
    ("olm-v1", [OLM_KIND, OLM_NAME], []),
    ("olm-v0", list(OLM_V0), []),
    ("helm", [], [RELEASE, RELEASE_NS]),
    ("argocd", [], [TRACKING, INSTALLATION]),
    ("flux", list(KUSTOMIZE), []),
    ("flux-helm", list(FLUX_HELM), []),
    ("applyset", [PART_OF], []),
    ("kapp", [KAPP_APP], []),
    ("timoni", ["instance.timoni.sh/name", "instance.timoni.sh/namespace"], []),
    ("crossplane", [COMPOSITE], []),
]
# The aliases' first schemes: an object of one owner under both is listed under the first.
LEADS = {"olm-v1": "helm", "flux-helm": "helm"}


def api_version(kind):
    group, version, _, _ = KINDS[kind]
    return f"{group}/{version}" if group else version


def key(o):
    m = o["metadata"]
    return (o["kind"], m.get("namespace"), m["name"])


def described(k):
    kind, ns, name = k
    return f"{kind} {name!r}" + (f" in namespace {ns!r}" if ns else "")


def meta_of(name, namespace=None, labels=None, annotations=None, refs=None):
    m = {"name": name}
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    if refs:
        m["ownerReferences"] = copy.deepcopy(refs)
    return m


def pod_template(name):
    return {"metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}}


def body(kind, name):
    """A minimal valid body of each kind (what the corpus does not say)."""
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec = {"selector": {"matchLabels": {"app": name}}, "template": pod_template(name)}
        if kind == "StatefulSet":
            spec["serviceName"] = name
        return {"spec": spec}
    if kind == "Job":
        t = pod_template(name)
        t["spec"]["restartPolicy"] = "Never"
        del t["metadata"]
        return {"spec": {"template": t}}
    if kind == "Service":
        return {"spec": {"ports": [{"name": "http", "port": 80}]}}
    if kind == "Ingress":
        return {"spec": {"defaultBackend": {"service": {"name": name, "port": {"number": 80}}}}}
    if kind in ("Role", "ClusterRole"):
        return {"rules": []}
    if kind == "ClusterRoleBinding":
        # The auth-delegator binding OLM writes for a webhook's service account.
        return {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "system:auth-delegator"},
                "subjects": [{"kind": "ServiceAccount", "name": name.split(":")[0], "namespace": "default"}]}
    if kind == "CustomResourceDefinition":
        return {"spec": crd_spec(name)}
    if kind == "APIService":
        # A local APIService (no service): one that points at a Service breaks discovery of
        # its group on a cluster without the backend (every kubectl call then warns, and the
        # plugin skips the group). Its group is served by a stand-in CRD (`crds`), so discovery
        # stays whole. The priorities are those the API server's CRD autoregistration gives
        # it, which keeps the spec and the labels.
        version, group = name.split(".", 1)
        return {"spec": {"group": group, "version": version, "groupPriorityMinimum": 1000,
                         "versionPriority": 100}}
    if kind == "ValidatingWebhookConfiguration":
        # No webhooks: one pointing at a missing Service would fail every matched write.
        return {"webhooks": []}
    if kind == "Secret":
        if name.startswith("sh.helm.release.v1."):
            return {"type": "helm.sh/release.v1",
                    "data": {"release": base64.b64encode(b"H4sI").decode()}}
        return {"type": "Opaque"}
    if kind == "ClusterServiceVersion":
        version = name.split(".v", 1)[1] if ".v" in name else "0.0.1"
        return {"spec": {"displayName": name, "version": version, "install": {"strategy": "deployment"}}}
    if kind == "ClusterObjectSet":
        return {"spec": {"lifecycleState": "Active", "revision": int(name.rsplit("-", 1)[1])
                         if name.rsplit("-", 1)[-1].isdigit() else 1}}
    if kind == "HelmChart":
        return {"spec": {"chart": name.split("-", 2)[-1], "interval": "10m",
                         "sourceRef": {"kind": "HelmRepository", "name": name.split("-", 2)[-1]}}}
    if kind == "HelmRelease":
        return {"spec": {"interval": "10m", "chart": {"spec": {"chart": name}}}}
    if kind == "GitRepository":
        return {"spec": {"interval": "10m", "url": f"https://git.example.com/{name}.git", "ref": {"branch": "main"}}}
    if kind == "Kustomization":
        return {"spec": {"interval": "10m", "path": f"./{name}", "prune": True,
                         "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}}
    if kind == "Application":
        return {"spec": {"project": "default",
                         "source": {"repoURL": "https://github.com/argoproj/argocd-example-apps", "path": name},
                         "destination": {"server": "https://kubernetes.default.svc", "namespace": "prod"}}}
    if kind == "ClusterExtension":
        return {"spec": {"namespace": f"{name}-system", "serviceAccount": {"name": f"{name}-installer"},
                         "source": {"sourceType": "Catalog", "catalog": {"packageName": name}}}}
    return {}


def crd_spec(name, scope="Namespaced", version="v1alpha1"):
    plural, group = name.split(".", 1)
    singular = plural[:-1] if plural.endswith("s") else plural
    kind = singular[:1].upper() + singular[1:]
    return {"group": group, "scope": scope,
            "names": {"plural": plural, "singular": singular, "kind": kind, "listKind": f"{kind}List"},
            "versions": [{"name": version, "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}]}


def crds():
    """The CRDs beyond crds.yaml: the corpus' owner and looked-up kinds, and the stand-in
    that serves the corpus APIService's group."""
    out = []
    for kind, (group, version, plural, namespaced) in KINDS.items():
        if kind in ("ClusterServiceVersion", "ClusterObjectSet", "HelmChart", "GitRepository", "Application", *XR_KINDS):
            spec = crd_spec(f"{plural}.{group}", "Namespaced" if namespaced else "Cluster", version)
            spec["names"]["kind"] = kind
            spec["names"]["listKind"] = f"{kind}List"
            spec["names"]["singular"] = kind.lower()
            out.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                        "metadata": {"name": f"{plural}.{group}"}, "spec": spec})
    for o in corpus_objects()[0].values():
        if o["kind"] == "APIService":
            spec = o["spec"]
            out.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                        "metadata": {"name": f"standins.{spec['group']}",
                                     "annotations": {"single-owner.kubewarden.io/note":
                                                     f"serves {spec['group']}/{spec['version']} for the seeded APIService"}},
                        "spec": crd_spec(f"standins.{spec['group']}", version=spec["version"])})
    return out


def manifest(kind, name, namespace=None, labels=None, annotations=None, refs=None, extra=None):
    o = {"apiVersion": api_version(kind), "kind": kind,
         "metadata": meta_of(name, namespace, labels, annotations, refs)}
    o.update(copy.deepcopy(extra) if extra is not None else body(kind, name))
    return o


def corpus_objects():
    """The objects the lifecycles leave, the accepted writes' lookups, what was left out."""
    seeded, tools, left_out, looked_up = {}, {}, [], {}
    for tool, (_, doc) in corpus.load_tools().items():
        state = {}
        for w in doc["writes"]:
            if w["expect"] != "accept":
                continue
            k = (w["kind"], w.get("namespace"), w["object"])
            if w["operation"] == "DELETE":
                state.pop(k, None)
            else:
                state[k] = (w["name"], w["new"] or {})
            for lookup in w.get("lookups", []):
                found = lookup.get("found")
                if not found:
                    continue
                for o in found.get("items", [found]) if found.get("kind") == "List" else [found]:
                    looked_up[key(o)] = (tool, w["name"], copy.deepcopy(o))
        tools[tool] = []
        for k, (write, new) in state.items():
            if k in seeded:
                left_out.append(f"{tool}: {described(k)} (its write {write}): the same object as "
                                f"{seeded[k][0]}'s, which is kept")
                continue
            kind, ns, name = k
            o = manifest(kind, name, ns, new.get("labels"), new.get("annotations"), new.get("ownerReferences"))
            seeded[k] = (tool, o)
            tools[tool].append(k)
    objects = {k: o for k, (_, o) in seeded.items()}
    for k, (tool, write, found) in looked_up.items():
        fm = found.get("metadata", {})
        looked = {x: v for x, v in found.items() if x not in ("apiVersion", "kind", "metadata")}
        if k in objects:
            o = objects[k]
            m = o["metadata"]
            m["labels"] = {**fm.get("labels", {}), **m.get("labels", {})}
            if fm.get("annotations") or m.get("annotations"):
                m["annotations"] = {**fm.get("annotations", {}), **m.get("annotations", {})}
            if fm.get("ownerReferences") and not m.get("ownerReferences"):
                m["ownerReferences"] = copy.deepcopy(fm["ownerReferences"])
            o.update(looked)
        else:
            kind, ns, name = k
            objects[k] = manifest(kind, name, ns, fm.get("labels"), fm.get("annotations"),
                                  fm.get("ownerReferences"), looked or None)
            tools.setdefault("lookups", []).append(k)
    return objects, tools, left_out


def carried(o):
    """The owners an object's keys name under deploy/all-tools.yaml: (tool, owner keys)."""
    m = o["metadata"]
    labels, annotations = m.get("labels") or {}, m.get("annotations") or {}
    out = []
    for tool, lkeys, akeys in SCHEMES:
        keys = {k: labels[k] for k in lkeys if k in labels}
        keys.update({k: annotations[k] for k in akeys if k in annotations})
        if not keys:
            continue
        if TRACKING in keys:
            keys[TRACKING] = keys[TRACKING].split(":", 1)[0]
        out.append((tool, keys))
    return out


def owners_named(o):
    """The owner objects the keys name, as the plugin looks them up: (kind, namespace, name)."""
    m = o["metadata"]
    labels, annotations = m.get("labels") or {}, m.get("annotations") or {}
    out = []
    if OLM_NAME in labels and labels.get(OLM_KIND, "ClusterExtension") == "ClusterExtension":
        out.append(("ClusterExtension", None, labels[OLM_NAME]))
    if "olm.owner" in labels and labels.get("olm.owner.kind", "ClusterServiceVersion") == "ClusterServiceVersion":
        out.append(("ClusterServiceVersion", labels.get("olm.owner.namespace"), labels["olm.owner"]))
    for kind, (n, ns) in (("HelmRelease", FLUX_HELM), ("Kustomization", KUSTOMIZE)):
        if ns in labels and labels.get(n):
            out.append((kind, labels[ns], labels[n]))
    if TRACKING in annotations:
        app = annotations[TRACKING].split(":", 1)[0]
        ns, app = app.split("_", 1) if "_" in app else (ARGOCD_NAMESPACE, app)
        out.append(("Application", ns, app))
    if labels.get(PART_OF):
        # An ApplySet's parent, found by its id label (the id is a hash of the parent's
        # name, namespace, kind and group: no name to look up).
        out.append(("ApplySet", None, labels[PART_OF]))
    if labels.get(KAPP_APP, "").isdigit():
        # A kapp app, by its record (a ConfigMap in the namespace kapp ran with, which the
        # member does not carry: found by the label value its spec names).
        out.append(("KappApp", None, labels[KAPP_APP]))
    if labels.get("instance.timoni.sh/name") and labels.get("instance.timoni.sh/namespace"):
        out.append(("TimoniInstance", labels["instance.timoni.sh/namespace"], labels["instance.timoni.sh/name"]))
    if labels.get(COMPOSITE) is not None:
        # A composite resource: the object's controller (the label names the root XR).
        for r in m.get("ownerReferences") or []:
            if r.get("controller") and r["kind"] in XR_KINDS:
                out.append((r["kind"], m.get("namespace") if XR_KINDS[r["kind"]][3] else None, r["name"]))
    if RELEASE_NS in annotations and annotations.get(RELEASE) and OLM_NAME not in labels \
            and FLUX_HELM[0] not in labels:
        out.append(("HelmReleaseStorage", annotations[RELEASE_NS], annotations[RELEASE]))
    return out


def owner_object(kind, ns, name, by):
    """An owner object for the keys of `by` (the seeded objects that name it)."""
    if kind == "HelmReleaseStorage":
        return manifest("Secret", f"sh.helm.release.v1.{name}.v1", ns,
                        {"owner": "helm", "name": name, "status": "deployed", "version": "1"})
    if kind == "ApplySet":
        # A parent Secret with the set's id (kubectl's default parent kind); the plugin finds
        # it by the label, as kubectl's members name it.
        return manifest("Secret", f"parent-{name.lower()[9:25]}", "applyset-parents", {APPLYSET_ID: name})
    if kind == "KappApp":
        # A record as kapp's RecordedApp.create writes it (the corpus' records carry their
        # labels only: the seeder's have the spec that names the members' label value).
        return manifest("ConfigMap", f"app-{name}", "kapp-apps", {KAPP_IS_APP: ""},
                        {"kapp.k14s.io/app-changes-use-app-label": ""},
                        extra={"data": {"spec": json.dumps({"labelKey": KAPP_APP, "labelValue": name})}})
    if kind == "TimoniInstance":
        return manifest("Secret", f"timoni.{name}", ns, {"app.kubernetes.io/name": name,
                        "app.kubernetes.io/component": "instance", "app.kubernetes.io/created-by": "timoni"})
    if kind == "HelmRelease":
        # The release its objects name: by name, or <targetNamespace>-<name> where the
        # release lives in another namespace (helm-controller's GetReleaseName).
        spec = body(kind, name)["spec"]
        for o in by:
            rns = (o["metadata"].get("annotations") or {}).get(RELEASE_NS)
            if rns and rns != ns:
                spec["targetNamespace"] = rns
        return manifest(kind, name, ns, extra={"spec": spec})
    return manifest(kind, name, ns)


# The planted findings: (finding, manifest). Owners they need: PLANTED_OWNERS.
COPY_UID = "7f3e2d1c-0b9a-4877-8665-544332211000"
PLANTED_OWNERS = [
    # The other extension of the controller findings, and its revision.
    manifest("ClusterExtension", "planted-copy"),
    manifest("ClusterObjectSet", "planted-copy-1", None,
             {OLM_KIND: "ClusterExtension", OLM_NAME: "planted-copy"}, None,
             [{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "name": "planted-copy",
               "uid": COPY_UID, "controller": True, "blockOwnerDeletion": True}],
             {"spec": {"lifecycleState": "Active", "revision": 1}}),
    # A HelmRelease without spec.releaseName: it installs the release named after it.
    manifest("HelmRelease", "podinfo-planted", PLANTED_NS),
    # An XR created again under its name: the object that names the old one's uid is gone.
    manifest("App", "recreated", PLANTED_NS),
]
EXT = {OLM_KIND: "ClusterExtension", OLM_NAME: "argocd"}
PLANTED = [
    # two-owners: two tools' owners (Helm's release web, Argo CD's Application guestbook).
    ("two-owners", manifest("ConfigMap", "two-tools", PLANTED_NS, None,
                            {RELEASE: "web", RELEASE_NS: "shop", TRACKING: "guestbook:/ConfigMap:planted/two-tools"})),
    # two-owners: OLM v1's labels and Helm's annotations naming two extensions (the alias).
    ("two-owners", manifest("ConfigMap", "labels-and-release-of-two-extensions", PLANTED_NS, EXT,
                            {RELEASE: "planted-copy", RELEASE_NS: "argocd-system"})),
    # two-owners: the keys name argocd, the controller ownerReference planted-copy.
    ("two-owners", manifest("ConfigMap", "controller-of-another-extension", PLANTED_NS, EXT, None,
                            [{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
                              "name": "planted-copy", "uid": COPY_UID, "controller": True,
                              "blockOwnerDeletion": True}])),
    # two-owners: the controller is a revision (ClusterObjectSet, looked up) of another extension.
    ("two-owners", manifest("Deployment", "revision-of-another-extension", PLANTED_NS, EXT, {REVISION: "1"},
                            [{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
                              "name": "planted-copy-1", "uid": "7f3e2d1c-0b9a-4877-8665-544332211001",
                              "controller": True, "blockOwnerDeletion": True}])),
    # two-owners: a HelmRelease's labels on a release it does not install (looked up).
    ("two-owners", manifest("Deployment", "release-the-helmrelease-does-not-install", PLANTED_NS,
                            {FLUX_HELM[0]: "podinfo-planted", FLUX_HELM[1]: PLANTED_NS},
                            {RELEASE: "other", RELEASE_NS: PLANTED_NS})),
    # owner-gone, one of each owner kind.
    ("owner-gone", manifest("ConfigMap", "gone-clusterextension", PLANTED_NS,
                            {OLM_KIND: "ClusterExtension", OLM_NAME: "uninstalled"})),
    ("owner-gone", manifest("ConfigMap", "gone-clusterserviceversion", PLANTED_NS,
                            {"olm.owner": "gone.v1.0.0", "olm.owner.kind": "ClusterServiceVersion",
                             "olm.owner.namespace": PLANTED_NS, "olm.managed": "true"})),
    # A bundle's ClusterRole: olm.owner alone, looked up by name across namespaces.
    ("owner-gone", manifest("ClusterRole", "planted-gone-clusterserviceversion-by-name", None,
                            {"olm.owner": "gone.v2.0.0", "olm.managed": "true"})),
    ("owner-gone", manifest("ConfigMap", "gone-helmrelease", PLANTED_NS,
                            {FLUX_HELM[0]: "gone", FLUX_HELM[1]: PLANTED_NS},
                            {RELEASE: "gone", RELEASE_NS: PLANTED_NS})),
    ("owner-gone", manifest("ConfigMap", "gone-kustomization", PLANTED_NS,
                            {KUSTOMIZE[0]: "gone", KUSTOMIZE[1]: "flux-system"})),
    ("owner-gone", manifest("ConfigMap", "gone-application", PLANTED_NS, None,
                            {TRACKING: "gone:/ConfigMap:planted/gone-application"})),
    ("owner-gone", manifest("ConfigMap", "gone-application-in-any-namespace", PLANTED_NS, None,
                            {TRACKING: "planted_gone:/ConfigMap:planted/gone-application-in-any-namespace"})),
    ("owner-gone", manifest("ConfigMap", "gone-helm-release", PLANTED_NS, None,
                            {RELEASE: "gone", RELEASE_NS: PLANTED_NS})),
    # A Timoni instance's object whose instance (its storage Secret) is gone.
    ("owner-gone", manifest("ConfigMap", "gone-timoni-instance", PLANTED_NS,
                            {"instance.timoni.sh/name": "gone", "instance.timoni.sh/namespace": PLANTED_NS})),
    # A kapp app's object whose app record is gone.
    ("owner-gone", manifest("ConfigMap", "gone-kapp-app", PLANTED_NS, {KAPP_APP: "1000000000000000000"})),
    # A composed object whose composite resource is gone, and one whose XR was created again
    # (another uid: the garbage collector deletes what names the old one).
    ("owner-gone", manifest("ConfigMap", "gone-composite", PLANTED_NS, {COMPOSITE: "gone"}, None,
                            [{"apiVersion": "example.crossplane.io/v1", "kind": "App", "name": "gone",
                              "uid": "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", "controller": True,
                              "blockOwnerDeletion": True}])),
    ("owner-gone", manifest("ConfigMap", "recreated-composite", PLANTED_NS, {COMPOSITE: "recreated"}, None,
                            [{"apiVersion": "example.crossplane.io/v1", "kind": "App", "name": "recreated",
                              "uid": "0e1d2c3b-4a59-4687-9766-a5b4c3d2e1f0", "controller": True,
                              "blockOwnerDeletion": True}])),
    # An ApplySet member whose parent (no object labelled with the id) is gone.
    ("owner-gone", manifest("ConfigMap", "gone-applyset", PLANTED_NS,
                            {PART_OF: "applyset-gone-v1"})),
    # refused-on-owner-change: a cluster-scoped object of a namespaced owner kind (scope).
    ("refused-on-owner-change", manifest("ClusterRole", "planted-namespaced-owner-kind", None,
                                       {OLM_KIND: "Extension", OLM_NAME: "argocd"})),
    # refused-on-owner-change: a revision that is not canonical.
    ("refused-on-owner-change", manifest("ConfigMap", "non-canonical-revision", PLANTED_NS, EXT, {REVISION: "01"})),
    # refused-on-owner-change: a handover annotation that names no successor.
    ("refused-on-owner-change", manifest("ConfigMap", "unreadable-handover", PLANTED_NS, EXT, {HANDOVER: "argocd"})),
]


def seed():
    objects, tools, left_out = corpus_objects()
    planted = {key(o): (finding, o) for finding, o in PLANTED}
    for o in PLANTED_OWNERS:
        objects[key(o)] = o
    # Owners: each named owner that no seeded object is (a release: no storage Secret of it).
    by = {}
    for o in list(objects.values()) + [o for _, o in planted.values()]:
        if key(o) in planted:
            continue
        for owner in owners_named(o):
            by.setdefault(owner, []).append(o)
    for (kind, ns, name), named_by in sorted(by.items(), key=str):
        if kind == "HelmReleaseStorage":
            if any(o["kind"] == "Secret" and o["metadata"].get("namespace") == ns
                   and (o["metadata"].get("labels") or {}).get("owner") == "helm"
                   and o["metadata"]["labels"].get("name") == name for o in objects.values()):
                continue
        elif kind == "ClusterServiceVersion" and ns is None:
            # A bundle's ClusterRole names its CSV without a namespace: any CSV of that name
            # that is not a copy is its owner.
            if any(k[0] == kind and k[2] == name and "olm.copiedFrom" not in (o["metadata"].get("labels") or {})
                   for k, o in objects.items()):
                continue
            ns = "operators"
        elif kind == "TimoniInstance":
            if ("Secret", ns, f"timoni.{name}") in objects:
                continue
        elif kind == "KappApp":
            if ("ConfigMap", "kapp-apps", f"app-{name}") in objects:
                continue
        elif kind == "ApplySet":
            # The corpus' own parent (kubectl writes it before any member), where it is left.
            if any((o["metadata"].get("labels") or {}).get(APPLYSET_ID) == name for o in objects.values()):
                continue
        elif (kind, ns, name) in objects:
            continue
        o = owner_object(kind, ns, name, named_by)
        objects[key(o)] = o
        tools.setdefault("owners", []).append(key(o))
    for k, (_, o) in planted.items():
        objects[k] = o
    # Namespaces, the corpus' own (helm's shop, with its label) kept.
    for ns in sorted({k[1] for k in objects if k[1]}):
        objects.setdefault(("Namespace", None, ns), manifest("Namespace", ns))
    for line in left_out:
        print(f"corpus_seed.py: left out: {line}", file=sys.stderr)
    ordered = sorted(objects.values(), key=lambda o: (ORDER.index(o["kind"]), key(o)[1] or "", key(o)[2]))
    return ordered, tools, left_out, planted


def expected(objects, tools, left_out, planted):
    groups = {}
    for o in objects:
        c = carried(o)
        two = planted.get(key(o), ("",))[0] == "two-owners"
        names = {t for t, _ in c}
        for tool, keys in c:
            if not two and any(lead in names and led == tool for lead, led in LEADS.items()):
                continue
            g = groups.setdefault((tool, json.dumps(keys, sort_keys=True)), [])
            m = o["metadata"]
            g.append({"kind": o["kind"], **({"namespace": m["namespace"]} if "namespace" in m else {}),
                      "name": m["name"]})
    ref = lambda k: {"kind": k[0], **({"namespace": k[1]} if k[1] else {}), "name": k[2]}  # noqa: E731
    return {
        "owners": [{"tool": t, "owner": json.loads(keys), "objects": sorted(objs, key=lambda r: (r["kind"], r.get("namespace", ""), r["name"]))}
                   for (t, keys), objs in sorted(groups.items())],
        "findings": sorted(({"object": ref(k), "kind": f} for k, (f, _) in planted.items()),
                           key=lambda f: (f["object"]["name"], f["kind"])),
        "tools": {t: [ref(k) for k in ks] for t, ks in tools.items()},
        "left_out": left_out,
        # The seeded objects controlled by an XR, whose reference takes the XR's uid once both
        # are in the cluster (a uid cannot be chosen at create): corpus.bats patches them.
        "composed": [{**ref(key(o)), "plural": KINDS[o["kind"]][2], "xr": {
            "kind": r["kind"], "name": r["name"], "index": i,
            "resource": f"{XR_KINDS[r['kind']][2]}.{XR_KINDS[r['kind']][0]}",
            **({"namespace": o["metadata"]["namespace"]} if XR_KINDS[r["kind"]][3] else {})}}
            for o in objects if key(o) not in planted
            for i, r in enumerate(o["metadata"].get("ownerReferences") or [])
            if r.get("controller") and r["kind"] in XR_KINDS],
    }


def dump(docs):
    return yaml.safe_dump_all(docs, sort_keys=False, width=1000)


def main():
    match sys.argv[1:]:
        case ["crds"]:
            sys.stdout.write(dump(crds()))
        case ["manifests", out, *rest] if len(rest) <= 1:
            objects, tools, left_out, planted = seed()
            pathlib.Path(out).write_text(dump(objects))
            counts = {}
            for o in objects:
                counts[o["kind"]] = counts.get(o["kind"], 0) + 1
            print(f"corpus_seed.py: {len(objects)} objects ({len(planted)} planted): "
                  + ", ".join(f"{k} {n}" for k, n in counts.items()), file=sys.stderr)
            if rest:
                pathlib.Path(rest[0]).write_text(json.dumps(expected(objects, tools, left_out, planted), indent=1) + "\n")
        case _:
            sys.exit(__doc__)


if __name__ == "__main__":
    main()
