#!/usr/bin/env python3
"""The race with real Helm: releases whose charts share objects install, upgrade and
--take-ownership-install at the same moment, through a real kube-apiserver, with Helm's own
client-side check alone (`client-check`: the objects carry no label the race policy selects)
or with the policy (`admission`: they carry `race.single-owner.io/helm-admission: on`, which
e2e-tests/cluster/race-helm-policy.yaml selects, with deploy/helm.yaml's settings), applying
client-side (`csa`: Helm creates with a POST) or server-side (`ssa`, Helm 4's default).

Helm is the Helm v4 SDK (helm-sdkpy), one Configuration per release, the releases' actions
started together on threads. The charts are e2e-tests/charts/widgets-a and widgets-b, which
share a CRD and a ClusterRole; hooks are off (a hook Job needs a Job controller, which the
local control plane lacks; the race is in the shared objects' writes).

Scenarios, each round on objects of its own:
- install: R releases install at once;
- upgrade: R releases installed without the shared objects upgrade at once to a chart
  version that ships them (withShared: true);
- take-ownership: release 0 installed them; it upgrades while the others install at once
  with --take-ownership (which skips Helm's check).

After each run, every committed version of each shared object is read back from etcd's
history (the API server stores JSON: cluster.sh --storage-json) and judged apart from the
policy: an owner (meta.helm.sh/release-name, release-namespace) that changes to another is a
violation, as no handover is ever named. It also counts what a Helm user sees: releases Helm
reported as deployed whose shared objects name another release.

usage: helm-race.py [--rounds N] [--releases R] [--scenario S]... [--apply csa|ssa]...
                    [--mode client-check|admission]... [--require] [--require-race]
       (the cluster from `source $CLUSTER_DIR/env`: KUBECONFIG, ETCD_URL)
--require: fail on an admission-mode violation, or a run in which no Helm action succeeded or
           got the API server's answer (a refusal at admission, or AlreadyExists: in two
           releases' race both can lose, each to the other's first object);
--require-race: also fail when no client-check run of a scenario lost the race.
"""
import argparse
import asyncio
import base64
import json
import os
import pathlib
import sys
import time
import urllib.request

import helm_sdkpy

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHARTS = [str(ROOT / "e2e-tests/charts/widgets-a"), str(ROOT / "e2e-tests/charts/widgets-b")]
ADMISSION_LABEL = "race.single-owner.io/helm-admission"
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
HANDOVER = "single-owner.kubewarden.io/handover-to"
NAMESPACE = "default"
SCENARIOS = ["install", "upgrade", "take-ownership"]


def etcd_get(url, key, revision=0):
    body = {"key": base64.b64encode(key.encode()).decode()}
    if revision > 0:
        body["revision"] = str(revision)
    request = urllib.request.Request(f"{url}/v3/kv/range", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        kvs = json.load(response).get("kvs") or []
    if not kvs:
        return None
    kv = kvs[0]
    return {"value": base64.b64decode(kv["value"]), "mod": int(kv["mod_revision"]),
            "create": int(kv["create_revision"])}


def history(url, key):
    """Every committed version of `key`, oldest first (etcd is never compacted here)."""
    versions, version = [], etcd_get(url, key)
    while version:
        versions.append(version)
        before = version["mod"] - 1
        version = etcd_get(url, key, before) if before >= version["create"] else None
    versions.reverse()
    out = []
    for v in versions:
        try:
            out.append(json.loads(v["value"]))
        except ValueError:
            sys.exit(f"helm-race: {key} is not stored as JSON: start the API server with "
                     "--storage-media-type application/json (cluster.sh up --storage-json)")
    return out


def owner(obj):
    """The Helm release an object names, or None."""
    a = (obj.get("metadata") or {}).get("annotations") or {}
    o = (a.get(RELEASE_NAME), a.get(RELEASE_NAMESPACE))
    return o if any(v is not None for v in o) else None


def violations(versions):
    """The committed owner changes no handover allowed (the reference model of
    policy-host/src/race/model.rs, over Helm's keys)."""
    found = []
    for before, after in zip(versions, versions[1:]):
        a, b = owner(before), owner(after)
        if a and b and a != b:
            named = ((before.get("metadata") or {}).get("annotations") or {}).get(HANDOVER)
            wanted = f"{RELEASE_NAME}={b[0]},{RELEASE_NAMESPACE}={b[1]}"
            if named != wanted:
                found.append(f"owner changed from release {a[0]} to {b[0]}")
    return found


def classify(error):
    text = str(error)
    if "invalid ownership metadata" in text:
        return "helm-check"
    if "denied the request" in text:
        return "admission"
    if "already exists" in text:
        # The API server's answer to the loser's create: the race was run, and lost.
        return "exists"
    return "other"


class Releases:
    """One Helm Configuration per release, as separate reconcilers would have."""

    def __init__(self, kubeconfig):
        self.kubeconfig = kubeconfig
        self.configs = {}

    def config(self, release):
        if release not in self.configs:
            self.configs[release] = helm_sdkpy.Configuration(namespace=NAMESPACE,
                                                             kubeconfig=self.kubeconfig)
        return self.configs[release]

    async def install(self, release, chart, vals, ssa, take=False):
        return await helm_sdkpy.Install(self.config(release)).run(
            release, chart, values=vals, wait=False, timeout=60, server_side_apply=ssa,
            take_ownership=take)

    async def upgrade(self, release, chart, vals, ssa):
        return await helm_sdkpy.Upgrade(self.config(release)).run(
            release, chart, values=vals, wait=False, timeout=60,
            server_side_apply="true" if ssa else "false")


async def outcome(coro):
    try:
        await coro
        return "ok"
    except helm_sdkpy.HelmError as e:
        return classify(e)


async def round_(helm, scenario, mode, ssa, releases, tag):
    """One round; returns (the outcome of each racing action, the release names that raced,
    the shared objects' names)."""
    shared = f"{tag}.race.example.com"
    labels = {ADMISSION_LABEL: "on"} if mode == "admission" else {}
    vals = lambda **extra: {"shared": shared, "hooks": False, "labels": labels, **extra}
    names = [f"{tag}-{i}" for i in range(releases)]
    chart = lambda i: CHARTS[i % 2]
    if scenario == "install":
        racing = [helm.install(n, chart(i), vals(), ssa) for i, n in enumerate(names)]
    elif scenario == "upgrade":
        for i, n in enumerate(names):
            await helm.install(n, chart(i), vals(withShared=False), ssa)
        racing = [helm.upgrade(n, chart(i), vals(), ssa) for i, n in enumerate(names)]
    else:
        await helm.install(names[0], chart(0), vals(), ssa)
        racing = [helm.upgrade(names[0], chart(0), vals(setting="2"), ssa)]
        racing += [helm.install(n, chart(i), vals(), ssa, take=True)
                   for i, n in enumerate(names) if i > 0]
    results = await asyncio.gather(*(outcome(c) for c in racing))
    return results, names, [f"/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.{shared}",
                            f"/registry/clusterroles/{shared}-editor"]


def run(helm, etcd, scenario, mode, apply, rounds, releases, seq):
    counts = {"ok": 0, "helm-check": 0, "admission": 0, "exists": 0, "other": 0}
    damaged = two_deployed = versions = 0
    found = []
    started = time.monotonic()
    for r in range(rounds):
        tag = f"h{seq}-{r}"
        results, names, keys = asyncio.run(
            round_(helm, scenario, mode, apply == "ssa", releases, tag))
        for result in results:
            counts[result] += 1
        # The racing actions are the releases' in order (take-ownership: release 0's upgrade,
        # then the others' installs).
        deployed = {n for n, res in zip(names, results) if res == "ok"}
        finals = []
        for key in keys:
            h = history(etcd, key)
            versions += len(h)
            found += [f"{key}: {v}" for v in violations(h)]
            finals.append(owner(h[-1]) if h else None)
        damaged += sum(1 for n in deployed if any(not f or f[0] != n for f in finals))
        if len(deployed) > 1:
            two_deployed += 1
    wall = time.monotonic() - started
    row = (f"| {scenario} | {apply} | {mode} | {releases} | {rounds} | {len(results) * rounds} | "
           f"{counts['ok']} | {counts['helm-check']} | {counts['admission']} | {counts['exists'] + counts['other']} | "
           f"{two_deployed} | {damaged} | **{len(found)}** | {wall:.1f} |")
    # What reached the API server and was answered there: a release deployed, a write refused
    # at admission, a create that lost to the other release's.
    tested = counts["ok"] + counts["admission"] + counts["exists"]
    return {"row": row, "violations": len(found), "examples": found[:5], "ok": tested,
            "versions": versions, "mode": mode, "scenario": scenario}


HEADER = ("| scenario | apply | mode | releases | rounds | Helm actions | succeeded | "
          "refused by Helm's check | refused by admission | other failures | "
          "rounds with two releases deployed | deployed releases whose shared objects name another "
          "| invariant violations | wall s |\n" + "|---" * 14 + "|")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--releases", type=int, default=2)
    ap.add_argument("--scenario", action="append", choices=SCENARIOS)
    ap.add_argument("--apply", action="append", choices=["csa", "ssa"])
    ap.add_argument("--mode", action="append", choices=["client-check", "admission"])
    ap.add_argument("--require", action="store_true")
    ap.add_argument("--require-race", action="store_true")
    args = ap.parse_args()
    kubeconfig, etcd = os.environ.get("KUBECONFIG"), os.environ.get("ETCD_URL")
    if not kubeconfig or not etcd:
        sys.exit("helm-race: source the cluster's env file first (KUBECONFIG, ETCD_URL)")
    helm = Releases(kubeconfig)
    runs, seq = [], int(time.time()) % 100000
    print(HEADER, flush=True)
    for scenario in args.scenario or SCENARIOS:
        for apply in args.apply or ["csa", "ssa"]:
            for mode in args.mode or ["client-check", "admission"]:
                seq += 1
                result = run(helm, etcd, scenario, mode, apply, args.rounds, args.releases, seq)
                print(result["row"], flush=True)
                runs.append(result)
    print()
    failures = []
    for r in runs:
        for example in r["examples"]:
            print(f"- {r['scenario']}, {r['mode']}: {example}")
        if r["ok"] == 0:
            failures.append(f"{r['scenario']} {r['mode']}: no Helm action succeeded or reached the "
                            "API server's answer (a refusal at admission, AlreadyExists)")
        if r["versions"] == 0:
            failures.append(f"{r['scenario']} {r['mode']}: no committed version was read back")
        if r["mode"] == "admission" and r["violations"]:
            failures.append(f"{r['scenario']}: {r['violations']} violations through the policy")
    if args.require_race:
        for scenario in args.scenario or SCENARIOS:
            if not any(r["violations"] for r in runs
                       if r["scenario"] == scenario and r["mode"] == "client-check"):
                failures.append(f"{scenario}: no client-check run lost the race")
    client = sum(r["violations"] for r in runs if r["mode"] == "client-check")
    admission = sum(r["violations"] for r in runs if r["mode"] == "admission")
    print(f"race (real Helm): client-check violations {client}, admission violations {admission}")
    if args.require and failures:
        for f in failures:
            print(f"helm-race: {f}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
