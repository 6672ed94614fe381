#!/usr/bin/env python3
"""The OCI images `make cluster-olm` (scripts/cluster-olm.sh) installs with the real OLM v1,
written and pushed over a registry's HTTP API, without docker:

- registry+v1 bundle images: `widgets-operator` 1.0.0 and 1.1.0 (channel `stable`, 1.1.0
  replaces 1.0.0; 1.1.0's CRD adds a field and a printer column), and `gadgets-operator`
  1.0.0 and 1.1.0, whose bundles ship the SAME CRD, `widgets.example.com` (each as the
  widgets-operator of its version ships it). Each bundle is a
  ClusterServiceVersion (install mode AllNamespaces, one Deployment, cluster permissions for
  its service account) and the CRD, under manifests/, and metadata/annotations.yaml, with the
  bundle labels on the image config (operator-framework/operator-registry's format, which
  operator-controller's rukpak/bundle/source reads);
- a file-based catalog (FBC) image for both packages, its configs under /configs as the label
  `operators.operatorframework.io.index.configs.v1` says (what catalogd unpacks:
  internal/shared/util/image/cache.go, filterForCatalogImage).

Every file is JSON (valid YAML for the YAML readers); tar entries and gzip headers carry fixed
times, so the digests are the same on every run for the same registry address.

usage: scripts/olm-images.py --registry 127.0.0.1:PORT [--out FILE]
  prints (and writes to FILE as JSON) the image references it pushed.
"""

import argparse
import gzip
import hashlib
import io
import json
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
EPOCH = 1700000000  # fixed mtime of every tar entry and of the gzip header

CRD_NAME = "widgets.example.com"


def crd(with_color):
    """The CRD every package ships; 1.1.0 of widgets-operator adds spec.color and a printer
    column (a compatible change, which operator-controller's CRD upgrade safety preflight
    accepts)."""
    spec_props = {"size": {"type": "integer", "minimum": 0}}
    columns = [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
    if with_color:
        spec_props["color"] = {"type": "string"}
        columns.append({"name": "Color", "type": "string", "jsonPath": ".spec.color"})
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": spec_props},
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def csv(package, version, replaces, registry):
    """A ClusterServiceVersion: AllNamespaces only, one Deployment (its image is never pulled:
    the control plane has no kubelet), cluster permissions on the shared CRD for the
    operator's service account (operator-controller generates the ServiceAccount, the
    ClusterRole and the ClusterRoleBinding of it)."""
    name = f"{package}.v{version}"
    sa = package
    deployment = {
        "name": f"{package}-controller-manager",
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": package}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": package}},
                "spec": {
                    "serviceAccountName": sa,
                    "containers": [
                        {
                            "name": "manager",
                            "image": f"{registry}/{package}:v{version}",
                            "args": ["--leader-elect"],
                        }
                    ],
                },
            },
        },
    }
    spec = {
        "displayName": package,
        "description": f"{package}, a test operator of single-owner-policy's cluster-olm suite",
        "version": version,
        "provider": {"name": "single-owner-policy tests"},
        "maturity": "alpha",
        "minKubeVersion": "1.28.0",
        "installModes": [
            {"type": "OwnNamespace", "supported": False},
            {"type": "SingleNamespace", "supported": False},
            {"type": "MultiNamespace", "supported": False},
            {"type": "AllNamespaces", "supported": True},
        ],
        "customresourcedefinitions": {
            "owned": [{"name": CRD_NAME, "version": "v1", "kind": "Widget", "displayName": "Widget"}]
        },
        "install": {
            "strategy": "deployment",
            "spec": {
                "clusterPermissions": [
                    {
                        "serviceAccountName": sa,
                        "rules": [
                            {
                                "apiGroups": ["example.com"],
                                "resources": ["widgets", "widgets/status"],
                                "verbs": ["get", "list", "watch", "update", "patch"],
                            }
                        ],
                    }
                ],
                "deployments": [deployment],
            },
        },
    }
    if replaces:
        spec["replaces"] = replaces
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "annotations": {"capabilities": "Basic Install"}},
        "spec": spec,
    }


def bundle_labels(package, channel):
    return {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": package,
        "operators.operatorframework.io.bundle.channels.v1": channel,
        "operators.operatorframework.io.bundle.channel.default.v1": channel,
    }


def dumps(obj):
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def layer(files):
    """A gzipped tar of FILES (path -> bytes), with its parent directories, in a fixed order
    with fixed times: (compressed bytes, digest of the uncompressed tar)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)})
        for d in dirs:
            info = tarfile.TarInfo(d + "/")
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            info.mtime = EPOCH
            tar.addfile(info)
        for path in sorted(files):
            data = files[path]
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = EPOCH
            tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=EPOCH, filename="") as f:
        f.write(tar_bytes)
    return gz.getvalue(), "sha256:" + hashlib.sha256(tar_bytes).hexdigest()


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Registry:
    def __init__(self, address):
        self.base = f"http://{address}"

    def _request(self, method, url, data=None, headers=None, expect=(200, 201, 202)):
        req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                if resp.status not in expect:
                    raise RuntimeError(f"{method} {url}: HTTP {resp.status}")
                return resp
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {url}: HTTP {e.code}: {e.read().decode(errors='replace')}") from None

    def push_blob(self, repo, data):
        d = digest(data)
        # Already there: nothing to send.
        try:
            self._request("HEAD", f"{self.base}/v2/{repo}/blobs/{d}")
            return d
        except RuntimeError:
            pass
        resp = self._request("POST", f"{self.base}/v2/{repo}/blobs/uploads/", data=b"", expect=(202,))
        location = resp.headers["Location"]
        url = urllib.parse.urljoin(self.base, location)
        url += ("&" if "?" in url else "?") + urllib.parse.urlencode({"digest": d})
        self._request("PUT", url, data=data, headers={"Content-Type": "application/octet-stream"}, expect=(201,))
        return d

    def push_image(self, repo, tag, files, labels):
        layer_gz, diff_id = layer(files)
        config = {
            "architecture": "amd64",
            "os": "linux",
            "created": "2023-11-14T22:13:20Z",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "history": [{"created": "2023-11-14T22:13:20Z", "created_by": "scripts/olm-images.py"}],
        }
        config_bytes = json.dumps(config, sort_keys=True).encode()
        layer_digest = self.push_blob(repo, layer_gz)
        config_digest = self.push_blob(repo, config_bytes)
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config_bytes)},
            "layers": [{"mediaType": OCI_LAYER, "digest": layer_digest, "size": len(layer_gz)}],
        }
        manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
        self._request(
            "PUT",
            f"{self.base}/v2/{repo}/manifests/{tag}",
            data=manifest_bytes,
            headers={"Content-Type": OCI_MANIFEST},
            expect=(201,),
        )
        return digest(manifest_bytes)


# (package, version, replaces, CRD with the 1.1.0 field)
BUNDLES = [
    ("widgets-operator", "1.0.0", None, False),
    ("widgets-operator", "1.1.0", "widgets-operator.v1.0.0", True),
    ("gadgets-operator", "1.0.0", None, False),
    # 1.1.0's CRD is widgets-operator 1.1.0's: OLM's own CRD upgrade-safety check (both
    # appliers) lets it over widgets-operator 1.1.0's, so what stops it is the ownership check.
    ("gadgets-operator", "1.1.0", "gadgets-operator.v1.0.0", True),
]
CHANNEL = "stable"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", required=True, help="HOST:PORT of a plain-HTTP registry")
    parser.add_argument("--out", help="write the pushed references here, as JSON")
    args = parser.parse_args()
    reg = Registry(args.registry)

    pushed = {}
    fbc = []
    for package in sorted({b[0] for b in BUNDLES}):
        fbc.append({"schema": "olm.package", "name": package, "defaultChannel": CHANNEL})
        entries = []
        for pkg, version, replaces, _ in BUNDLES:
            if pkg == package:
                entry = {"name": f"{pkg}.v{version}"}
                if replaces:
                    entry["replaces"] = replaces
                entries.append(entry)
        fbc.append({"schema": "olm.channel", "package": package, "name": CHANNEL, "entries": entries})

    for package, version, replaces, color in BUNDLES:
        annotations = {"annotations": bundle_labels(package, CHANNEL)}
        files = {
            f"manifests/{package}.clusterserviceversion.yaml": dumps(csv(package, version, replaces, args.registry)),
            "manifests/widgets.example.com.crd.yaml": dumps(crd(color)),
            "metadata/annotations.yaml": dumps(annotations),
        }
        repo = f"{package}-bundle"
        tag = f"v{version}"
        manifest_digest = reg.push_image(repo, tag, files, bundle_labels(package, CHANNEL))
        ref = f"{args.registry}/{repo}:{tag}"
        pushed[f"{package}@{version}"] = {"ref": ref, "digest": manifest_digest}
        fbc.append(
            {
                "schema": "olm.bundle",
                "package": package,
                "name": f"{package}.v{version}",
                "image": ref,
                "properties": [
                    {"type": "olm.package", "value": {"packageName": package, "version": version}},
                    {"type": "olm.gvk", "value": {"group": "example.com", "kind": "Widget", "version": "v1"}},
                ],
            }
        )

    catalog_files = {}
    for package in sorted({b[0] for b in BUNDLES}):
        docs = [d for d in fbc if d.get("package", d.get("name")) == package]
        catalog_files[f"configs/{package}/catalog.json"] = b"".join(dumps(d) for d in docs)
    catalog_digest = reg.push_image(
        "catalog", "latest", catalog_files, {"operators.operatorframework.io.index.configs.v1": "/configs"}
    )
    pushed["catalog"] = {"ref": f"{args.registry}/catalog:latest", "digest": catalog_digest}

    text = json.dumps(pushed, indent=2, sort_keys=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
