#!/usr/bin/env python3
"""`make bench-owners`: `kubectl single-owner owners` at cluster scale, against the kubectl loop
it replaces and against the floor of what any such scan must do.

A control plane of its own (etcd and a kube-apiserver on free loopback ports: $KUBE_APISERVER,
else the one control-plane/build.sh builds) is seeded in stages (10,000, 50,000 and
100,000 objects by default) with 55 CRDs (50 of them types of the seeded objects, the rest the
owners' kinds) and objects across ConfigMaps (with 1 KB of data), Secrets and the 50 custom
types, in 20 namespaces; 3% of them owned by each of the six tools as each writes its keys
(OLM v1, OLM v0, Helm, Flux's helm-controller and kustomize-controller, Argo CD), with their
owners present (ClusterExtensions, CSVs, Helm storage Secrets, HelmReleases, Kustomizations,
Applications), and one finding of every kind planted. At each stage it measures, on the same
cluster:

- `owners`: `kubectl-single_owner owners -A --preset deploy/all-tools.yaml -o json`, whose
  output must hold exactly the planted findings and every seeded owned object under its owner
  (a fast wrong answer is no result), its wall time (median of --runs) and peak RSS;
- the floor: kubectl-plugin/examples/list_floor.rs, the same metadata-only lists (page size,
  types at once, client) and nothing else;
- the kubectl loop a user has without the plugin: `kubectl api-resources --verbs=list -o name`,
  then per type one `kubectl get -A -l KEY -o name` per tool's selecting label (OLM v1, OLM v0,
  both Flux controllers), the Helm-labelled objects' annotations (`-l
  app.kubernetes.io/managed-by=Helm -o jsonpath`), and `-o json` of everything for Argo CD's
  annotation, which no selector can select. It finds owned objects and no finding at all.

The table is printed and written into docs/performance.md between its `owners` markers (not
with --no-doc). --sizes 2000 --runs 1 --no-doc is the smoke run (`make bench-owners-smoke`).
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import pathlib
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
import doc_table  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLUGIN = pathlib.Path(os.environ.get("PLUGIN", ROOT / "target/host/kubectl-single_owner"))
FLOOR = pathlib.Path(os.environ.get("LIST_FLOOR", ROOT / "target/host/examples/list_floor"))
PRESET = ROOT / "deploy/all-tools.yaml"
NAMESPACES = [f"ns-{i}" for i in range(20)]
THINGS = 50
GROUP = "bench.example.com"
OWNERS_PER_TOOL = 8
PLANTED_NS = "planted"
DATA = "x" * 1024
TOOLS = ("olm-v1", "olm-v0", "helm", "flux-helm", "flux", "argocd")


def log(message):
    print(f"bench-owners: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ControlPlane:
    """etcd and a kube-apiserver of the benchmark's own, with an admin token."""

    def __init__(self, apiserver, workdir):
        self.dir = pathlib.Path(workdir)
        self.procs = []
        certs = self.dir / "certs"
        certs.mkdir(parents=True)
        self.token = os.urandom(16).hex()
        run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=bench-ca",
            "-keyout", certs / "ca.key", "-out", certs / "ca.crt")
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=apiserver",
            "-keyout", certs / "apiserver.key", "-out", certs / "apiserver.csr")
        (certs / "ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        run("openssl", "x509", "-req", "-in", certs / "apiserver.csr", "-CA", certs / "ca.crt", "-CAkey",
            certs / "ca.key", "-CAcreateserial", "-days", "1", "-extfile", certs / "ext",
            "-out", certs / "apiserver.crt")
        run("openssl", "genrsa", "-out", certs / "sa.key", "2048")
        run("openssl", "rsa", "-in", certs / "sa.key", "-pubout", "-out", certs / "sa.pub")
        (self.dir / "tokens.csv").write_text(f"{self.token},admin,admin-uid,system:masters\n")
        etcd_port, self.port = free_port(), free_port()
        self.start("etcd", ["etcd", "--name", "bench", "--data-dir", self.dir / "etcd",
                            "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                            "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                            "--listen-peer-urls", f"http://127.0.0.1:{free_port()}",
                            "--quota-backend-bytes", str(8 << 30), "--log-level", "error"])
        self.start("apiserver", [apiserver, "--etcd-servers", f"http://127.0.0.1:{etcd_port}",
                                 "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                                 "--endpoint-reconciler-type", "none", "--secure-port", str(self.port),
                                 "--tls-cert-file", certs / "apiserver.crt",
                                 "--tls-private-key-file", certs / "apiserver.key",
                                 "--client-ca-file", certs / "ca.crt", "--token-auth-file", self.dir / "tokens.csv",
                                 "--authorization-mode", "RBAC",
                                 "--service-account-issuer", "https://kubernetes.default.svc",
                                 "--service-account-key-file", certs / "sa.pub",
                                 "--service-account-signing-key-file", certs / "sa.key",
                                 "--service-cluster-ip-range", "10.96.0.0/16"])
        self.ssl = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        self.kubeconfig = self.dir / "kubeconfig"
        self.kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n"
            f"    server: https://127.0.0.1:{self.port}\n    certificate-authority: {certs / 'ca.crt'}\n"
            f"users:\n- name: admin\n  user: {{token: {self.token}}}\n"
            "contexts:\n- name: bench\n  context: {cluster: bench, user: admin}\ncurrent-context: bench\n")
        deadline = time.time() + 120
        while True:
            try:
                if self.request("GET", "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise SystemExit(f"bench-owners: kube-apiserver not ready; see {self.dir}/apiserver.log")
            time.sleep(0.5)

    def start(self, name, argv):
        out = open(self.dir / f"{name}.log", "w")
        self.procs.append(subprocess.Popen([str(a) for a in argv], stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL))

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    def connection(self):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ssl, timeout=60)

    def request(self, method, path, body=None, conn=None):
        own = conn is None
        conn = conn or self.connection()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if own:
            conn.close()
        return response.status, data


def path_of(obj):
    """The collection an object is created in."""
    group, _, version = obj["apiVersion"].rpartition("/")
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    plural = PLURALS[obj["kind"]]
    ns = obj["metadata"].get("namespace")
    return f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"


PLURALS = {"Namespace": "namespaces", "ConfigMap": "configmaps", "Secret": "secrets",
           "CustomResourceDefinition": "customresourcedefinitions", "ClusterExtension": "clusterextensions",
           "ClusterServiceVersion": "clusterserviceversions", "HelmRelease": "helmreleases",
           "Kustomization": "kustomizations", "Application": "applications",
           **{f"Thing{i}": f"thing{i}s" for i in range(THINGS)}}


def crd(group, version, kind, plural, namespaced=True):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced" if namespaced else "Cluster",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": kind, "listKind": f"{kind}List"},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


OWNER_KINDS = [("olm.operatorframework.io", "v1", "ClusterExtension", "clusterextensions", False),
               ("operators.coreos.com", "v1alpha1", "ClusterServiceVersion", "clusterserviceversions", True),
               ("helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases", True),
               ("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations", True),
               ("argoproj.io", "v1alpha1", "Application", "applications", True)]


def base_objects():
    """Namespaces, CRDs and the owners the seeded objects name."""
    out = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
           for n in NAMESPACES + ["flux-system", "argocd", PLANTED_NS]]
    out += [crd(GROUP, "v1", f"Thing{i}", f"thing{i}s") for i in range(THINGS)]
    out += [crd(*k) for k in OWNER_KINDS]
    return out


def owner_objects():
    out = []
    for k in range(OWNER_KINDS_N()):
        out.append({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
                    "metadata": {"name": f"ext-{k}"}, "spec": {"namespace": "ns-0"}})
        out.append({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                    "metadata": {"name": f"ks-{k}", "namespace": "flux-system"}, "spec": {"path": "./"}})
        out.append({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                    "metadata": {"name": f"app-{k}", "namespace": "argocd"}, "spec": {}})
        for ns in NAMESPACES:
            out.append({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                        "metadata": {"name": f"op-{k}.v1.0.0", "namespace": ns}, "spec": {}})
            out.append({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                        "metadata": {"name": f"hr-{k}", "namespace": ns}, "spec": {}})
            out.append({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                        "metadata": {"name": f"sh.helm.release.v1.rel-{k}.v1", "namespace": ns,
                                     "labels": {"owner": "helm", "name": f"rel-{k}", "status": "deployed",
                                                "version": "1"}}})
    return out


def OWNER_KINDS_N():
    return OWNERS_PER_TOOL


def seeded(i):
    """Object i of the seed, and the tool that owns it (None: no owner)."""
    ns = NAMESPACES[i % len(NAMESPACES)]
    name = f"o-{i}"
    t = i % 10
    if t < 3:
        kind, api_version, group = "ConfigMap", "v1", ""
    elif t == 3:
        kind, api_version, group = "Secret", "v1", ""
    else:
        kind = f"Thing{(i // 10) % THINGS}"
        api_version, group = f"{GROUP}/v1", GROUP
    meta = {"name": name, "namespace": ns}
    k = (i // 100) % OWNERS_PER_TOOL
    slot = (i * 7919) % 100
    tool = TOOLS[slot // 3] if slot < 18 else None
    if tool == "olm-v1":
        meta["labels"] = {"olm.operatorframework.io/owner-kind": "ClusterExtension",
                          "olm.operatorframework.io/owner-name": f"ext-{k}"}
        if i % 2:
            # OLM v1's Helm applier: its release annotations name the same extension.
            meta["annotations"] = {"meta.helm.sh/release-name": f"ext-{k}", "meta.helm.sh/release-namespace": "ns-0"}
    elif tool == "olm-v0":
        meta["labels"] = {"olm.owner": f"op-{k}.v1.0.0", "olm.owner.kind": "ClusterServiceVersion",
                          "olm.owner.namespace": ns, "olm.managed": "true"}
    elif tool == "helm":
        meta["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
        meta["annotations"] = {"meta.helm.sh/release-name": f"rel-{k}", "meta.helm.sh/release-namespace": ns}
    elif tool == "flux-helm":
        meta["labels"] = {"helm.toolkit.fluxcd.io/name": f"hr-{k}", "helm.toolkit.fluxcd.io/namespace": ns,
                          "app.kubernetes.io/managed-by": "Helm"}
        meta["annotations"] = {"meta.helm.sh/release-name": f"hr-{k}", "meta.helm.sh/release-namespace": ns}
    elif tool == "flux":
        meta["labels"] = {"kustomize.toolkit.fluxcd.io/name": f"ks-{k}",
                          "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
    elif tool == "argocd":
        meta["annotations"] = {"argocd.argoproj.io/tracking-id": f"app-{k}:{group}/{kind}:{ns}/{name}"}
    obj = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if kind == "ConfigMap":
        obj["data"] = {"config": DATA}
    elif kind == "Secret":
        obj["stringData"] = {"token": DATA[:256]}
    else:
        obj["spec"] = {"replicas": 1, "config": DATA[:512]}
    return obj, tool


def planted(extension_uid):
    """One finding of every kind: (object, expected finding kind)."""
    def cm(name, labels=None, annotations=None, refs=None):
        meta = {"name": name, "namespace": PLANTED_NS}
        if labels:
            meta["labels"] = labels
        if annotations:
            meta["annotations"] = annotations
        if refs:
            meta["ownerReferences"] = refs
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    olm = lambda n: {"olm.operatorframework.io/owner-kind": "ClusterExtension",  # noqa: E731
                     "olm.operatorframework.io/owner-name": n}
    return [
        (cm("two-tools", annotations={"meta.helm.sh/release-name": "rel-0", "meta.helm.sh/release-namespace": "ns-0",
                                      "argocd.argoproj.io/tracking-id": f"app-0:/ConfigMap:{PLANTED_NS}/two-tools"}),
         "two-owners"),
        (cm("two-extensions", labels=olm("ext-0"),
            annotations={"meta.helm.sh/release-name": "ext-1", "meta.helm.sh/release-namespace": "ns-0"}),
         "two-owners"),
        (cm("two-controllers", labels=olm("ext-0"),
            refs=[{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "name": "ext-1",
                   "uid": extension_uid, "controller": True}]), "two-owners"),
        (cm("gone-extension", labels=olm("uninstalled")), "owner-gone"),
        (cm("gone-csv", labels={"olm.owner": "gone.v1.0.0", "olm.owner.kind": "ClusterServiceVersion",
                                "olm.owner.namespace": PLANTED_NS}), "owner-gone"),
        (cm("gone-release", labels={"app.kubernetes.io/managed-by": "Helm"},
            annotations={"meta.helm.sh/release-name": "gone", "meta.helm.sh/release-namespace": PLANTED_NS}),
         "owner-gone"),
        (cm("gone-helmrelease", labels={"helm.toolkit.fluxcd.io/name": "gone",
                                        "helm.toolkit.fluxcd.io/namespace": PLANTED_NS}), "owner-gone"),
        (cm("gone-kustomization", labels={"kustomize.toolkit.fluxcd.io/name": "gone",
                                          "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}), "owner-gone"),
        (cm("gone-application", annotations={"argocd.argoproj.io/tracking-id":
                                             f"gone:/ConfigMap:{PLANTED_NS}/gone-application"}), "owner-gone"),
        (cm("bad-revision", labels=olm("ext-0"), annotations={"olm.operatorframework.io/revision": "01"}),
         "refused-on-owner-change"),
    ]


def create_all(cp, objects, threads=8):
    """Creates the objects, `threads` connections at once; an existing object is left."""
    local = threading.local()
    failures = []

    def one(obj):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = cp.connection()
        for attempt in range(5):
            try:
                status, data = cp.request("POST", path_of(obj), obj, conn)
            except (OSError, http.client.HTTPException):
                conn = local.conn = cp.connection()
                continue
            if status in (200, 201, 409):
                return
            if status in (429, 500, 503, 504) or (status == 404 and attempt < 4):
                time.sleep(0.5 * (attempt + 1))
                continue
            failures.append(f"{obj['kind']} {obj['metadata']['name']}: {status} {data[:200]!r}")
            return
        failures.append(f"{obj['kind']} {obj['metadata']['name']}: gave up")

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, objects))
    if failures:
        raise SystemExit("bench-owners: cannot seed: " + "; ".join(failures[:5]))


def wait_established(cp):
    deadline = time.time() + 120
    while time.time() < deadline:
        status, data = cp.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        items = json.loads(data)["items"] if status == 200 else []
        ready = [c for c in items if any(x["type"] == "Established" and x["status"] == "True"
                                         for x in (c.get("status") or {}).get("conditions") or [])]
        if len(items) == THINGS + len(OWNER_KINDS) and len(ready) == len(items):
            # Discovery follows establishment by a moment.
            status, _ = cp.request("GET", f"/apis/{GROUP}/v1")
            if status == 200 and cp.request("GET", "/apis/argoproj.io/v1alpha1")[0] == 200:
                return
        time.sleep(0.5)
    raise SystemExit("bench-owners: the CRDs were not established")


def timed(argv, env=None):
    """Runs argv under /usr/bin/time: (seconds, peak RSS in KiB, stdout)."""
    with tempfile.NamedTemporaryFile("r") as t:
        start = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name, *map(str, argv)], capture_output=True,
                           text=True, env=env)
        seconds = time.monotonic() - start
        rss = int(t.read().strip().splitlines()[-1] or 0)
    return seconds, rss, p


LOOP = r"""
set -u
n=0
add() { n=$((n + ${1:-0})); }
for t in $(kubectl api-resources --verbs=list -o name); do
  for key in olm.operatorframework.io/owner-name olm.owner helm.toolkit.fluxcd.io/name kustomize.toolkit.fluxcd.io/name; do
    add "$(kubectl get "$t" -A -l "$key" -o name 2>/dev/null | wc -l)"
  done
  add "$(kubectl get "$t" -A -l app.kubernetes.io/managed-by=Helm \
    -o jsonpath='{range .items[*]}{.metadata.annotations.meta\.helm\.sh/release-name}{"\n"}{end}' 2>/dev/null | grep -c .)"
  add "$(kubectl get "$t" -A -o json 2>/dev/null \
    | jq '[.items[] | select(.metadata.annotations["argocd.argoproj.io/tracking-id"])] | length' 2>/dev/null)"
done
echo "$n"
"""


def check_scan(stdout, expected_findings, owned):
    """The scan's answer must be right before its time counts."""
    out = json.loads(stdout)
    got = sorted((f["object"]["name"], f["kind"]) for f in out["findings"])
    want = sorted((obj["metadata"]["name"], kind) for obj, kind in expected_findings)
    if got != want:
        raise SystemExit(f"bench-owners: the findings are wrong:\n got  {got}\n want {want}")
    counts = {}
    for group in out["owners"]:
        for o in group["objects"]:
            if o.get("namespace") != PLANTED_NS:
                counts[group["tool"]] = counts.get(group["tool"], 0) + 1
    if counts != owned:
        pathlib.Path("/tmp/bench-owners-out.json").write_text(stdout)
        raise SystemExit(f"bench-owners: the owners' objects are wrong: got {counts}, want {owned}")
    if out["skipped"]:
        raise SystemExit(f"bench-owners: the scan skipped {out['skipped'][:3]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,50000,100000", help="seeded objects at each stage")
    ap.add_argument("--runs", type=int, default=3, help="runs of owners and of the floor at each stage")
    ap.add_argument("--loop-runs", type=int, default=1, help="runs of the kubectl loop at each stage")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/performance.md")
    ap.add_argument("--keep", action="store_true",
                    help="leave the seeded control plane running at the end (for profiling); prints its kubeconfig")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    apiserver = os.environ.get("KUBE_APISERVER") or subprocess.run(
        [ROOT / "control-plane/build.sh", "kube-apiserver"], check=True, capture_output=True, text=True).stdout.strip()
    version = subprocess.run([apiserver, "--version"], capture_output=True, text=True).stdout.strip()
    kubectl = subprocess.run(["kubectl", "version", "--client", "-o", "json"], capture_output=True,
                             text=True).stdout
    kubectl = json.loads(kubectl)["clientVersion"]["gitVersion"] if kubectl else "none"
    for binary in (PLUGIN, FLOOR):
        if not binary.exists():
            raise SystemExit(f"bench-owners: no {binary} (make kubectl-plugin)")
    workdir = tempfile.mkdtemp(prefix="bench-owners-")
    cp = ControlPlane(apiserver, workdir)
    rows = []
    try:
        log(f"{version} ready; seeding the CRDs and owners")
        base = base_objects()
        create_all(cp, [o for o in base if o["kind"] == "Namespace"])
        create_all(cp, [o for o in base if o["kind"] != "Namespace"])
        wait_established(cp)
        create_all(cp, owner_objects())
        status, data = cp.request("GET", "/apis/olm.operatorframework.io/v1/clusterextensions/ext-1")
        expected = planted(json.loads(data)["metadata"]["uid"])
        create_all(cp, [o for o, _ in expected])
        env = dict(os.environ, KUBECONFIG=str(cp.kubeconfig))
        seeded_so_far, owned = 0, {}
        for size in sizes:
            start = time.monotonic()
            batch = [seeded(i) for i in range(seeded_so_far, size)]
            create_all(cp, [o for o, _ in batch])
            for _, tool in batch:
                if tool:
                    owned[tool] = owned.get(tool, 0) + 1
            log(f"seeded {size} objects ({len(batch) / (time.monotonic() - start):.0f}/s)")
            seeded_so_far = size
            scans, floors = [], []
            for _ in range(args.runs):
                s, rss, p = timed([PLUGIN, "--kubeconfig", cp.kubeconfig, "owners", "-A", "--preset", PRESET,
                                   "-o", "json"], env)
                if p.returncode != 1:
                    raise SystemExit(f"bench-owners: owners exited {p.returncode}: {p.stderr[-2000:]}")
                check_scan(p.stdout, expected, owned)
                scans.append((s, rss))
                s, frss, p = timed([FLOOR, "--kubeconfig", cp.kubeconfig], env)
                if p.returncode != 0:
                    raise SystemExit(f"bench-owners: the floor failed: {p.stderr[-2000:]}")
                types, listed = map(int, p.stdout.split())
                floors.append((s, frss))
            loops, found = [], None
            for _ in range(args.loop_runs):
                s, _, p = timed(["bash", "-c", LOOP], env)
                loops.append(s)
                found = int(p.stdout.strip() or 0)
            scan = statistics.median(s for s, _ in scans)
            floor = statistics.median(s for s, _ in floors)
            loop = statistics.median(loops) if loops else float("nan")
            rows.append({"objects": listed, "types": types, "owned": sum(owned.values()) + len(expected),
                         "scan": scan, "rss": max(r for _, r in scans) / 1024, "floor": floor,
                         "floor_rss": max(r for _, r in floors) / 1024, "loop": loop, "loop_found": found})
            log(f"{rows[-1]}")
    finally:
        if args.keep:
            log(f"left running: KUBECONFIG={cp.kubeconfig}; stop with: kill {' '.join(str(p.pid) for p in cp.procs)}")
        else:
            cp.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    lines = [f"{version}, kubectl {kubectl}; owners and the floor: median of {args.runs} runs, "
             f"the loop: {args.loop_runs}; {len(expected)} findings planted, every one found, every owned "
             "object listed under its owner:", "",
             "| objects listed | types | owned | owners | floor | owners/floor | kubectl loop | loop/owners "
             "| owners' peak RSS | floor's peak RSS | owners µs/object |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['objects']:,} | {r['types']} | {r['owned']:,} | {r['scan']:.2f} s | {r['floor']:.2f} s "
                     f"| {r['scan'] / r['floor']:.2f}x | {r['loop']:.1f} s | {r['loop'] / r['scan']:.0f}x "
                     f"| {r['rss']:.0f} MiB | {r['floor_rss']:.0f} MiB | {r['scan'] / r['objects'] * 1e6:.1f} |")
    report = "\n".join(lines)
    print(report)
    if not args.no_doc:
        doc_table.write(ROOT / "docs/performance.md", "owners", report, "make bench-owners")


if __name__ == "__main__":
    main()
