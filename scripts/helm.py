#!/usr/bin/env python3
"""A `helm` for the tests: real Helm (the Helm v4 SDK that the PyPI package helm-sdkpy ships as
a shared library) with the helm CLI's command line for the few commands the tests use.

usage: helm.py [--kubeconfig FILE] [-n NAMESPACE] install RELEASE CHART [--take-ownership]
                 [--server-side=true|false] [--set KEY=VALUE]... [--timeout SECONDS]
       helm.py ... upgrade RELEASE CHART [--install] [--take-ownership]
                 [--server-side=auto|true|false] [--set KEY=VALUE]... [--timeout SECONDS]
       helm.py ... uninstall RELEASE [--timeout SECONDS]
       helm.py ... status RELEASE
       helm.py version

What it prints is what Helm returns: on success the release as `helm status` shows it (NAME,
NAMESPACE, STATUS, REVISION); on failure Helm's error on stderr, framed as the helm CLI frames
it (`Error: INSTALLATION FAILED: ...`, `Error: UPGRADE FAILED: ...`; helm's pkg/cmd), and exit
status 1. `--server-side` defaults to true for install, as Helm 4's CLI does (HIP-0023), and
to auto for upgrade (the release's own apply method). Nothing waits for the release's
resources (the CLI's default); hooks are waited for, as always.

The local control plane has no Job controller and no kubelet, so while an action runs this
script marks each hook Job of the release's namespace complete (its status, through kubectl,
with the same kubeconfig), as the Job controller does once the pod has succeeded. Helm itself
is not touched: it creates the Job and waits for it as it would in a cluster.

Run it with the project's virtual environment (scripts/setup.sh helm): target/tools/helm/bin/python.
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import helm_sdkpy


def parse():
    ap = argparse.ArgumentParser(prog="helm.py")
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    ap.add_argument("-n", "--namespace", default="default")
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("install", "upgrade"):
        p = sub.add_parser(name)
        p.add_argument("release")
        p.add_argument("chart")
        p.add_argument("--take-ownership", action="store_true")
        p.add_argument("--server-side", default="true" if name == "install" else "auto",
                       choices=["true", "false"] + (["auto"] if name == "upgrade" else []))
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        p.add_argument("--timeout", type=int, default=60)
        if name == "upgrade":
            p.add_argument("--install", action="store_true")
    p = sub.add_parser("uninstall")
    p.add_argument("release")
    p.add_argument("--timeout", type=int, default=60)
    p = sub.add_parser("status")
    p.add_argument("release")
    sub.add_parser("version")
    return ap.parse_args()


def values(pairs):
    """--set a=b,c=d and --set x.y=z, as plain strings, a dot escaped as `\\.` (what the tests
    need of the CLI's: `--set 'labels.example\\.com/k=v'` sets the label example.com/k)."""
    out = {}
    for arg in pairs:
        for pair in arg.split(","):
            key, sep, value = pair.partition("=")
            if not sep:
                sys.exit(f"Error: --set {pair!r}: expected KEY=VALUE")
            node = out
            parts = [p.replace("\0", ".") for p in key.replace("\\.", "\0").split(".")]
            *parents, last = parts
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = value
    return out


class HookJobs(threading.Thread):
    """Completes the hook Jobs of a namespace while Helm waits for them (see the module doc)."""

    def __init__(self, kubeconfig, namespace):
        super().__init__(daemon=True)
        self.kubectl = ["kubectl", "-n", namespace] + (["--kubeconfig", kubeconfig] if kubeconfig else [])
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(0.2):
            got = subprocess.run(self.kubectl + ["get", "jobs", "-o", "json"],
                                 capture_output=True, text=True)
            if got.returncode != 0:
                continue
            try:
                jobs = json.loads(got.stdout).get("items", [])
            except json.JSONDecodeError:
                continue
            for job in jobs:
                meta, status = job.get("metadata", {}), job.get("status", {})
                if "helm.sh/hook" not in (meta.get("annotations") or {}):
                    continue
                if any(c.get("type") == "Complete" for c in status.get("conditions") or []):
                    continue
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                done = {"status": {"startTime": now, "completionTime": now, "succeeded": 1,
                                   "conditions": [
                                       {"type": t, "status": "True", "lastProbeTime": now,
                                        "lastTransitionTime": now, "reason": "CompletionsReached"}
                                       for t in ("SuccessCriteriaMet", "Complete")]}}
                subprocess.run(self.kubectl + ["patch", "job", meta["name"], "--subresource=status",
                                               "--type=merge", "-p", json.dumps(done)],
                               capture_output=True, text=True)


def show(release):
    """The release as `helm status` prints its head."""
    info = release.get("info") or {}
    lines = [f"NAME: {release.get('name', '')}",
             f"LAST DEPLOYED: {info.get('last_deployed', '')}",
             f"NAMESPACE: {release.get('namespace', '')}",
             f"STATUS: {info.get('status', release.get('status', ''))}",
             f"REVISION: {release.get('version', '')}"]
    description = info.get("description")
    if description:
        lines.append(f"DESCRIPTION: {description}")
    print("\n".join(lines))


async def act(args, config):
    if args.command == "install":
        return await helm_sdkpy.Install(config).run(
            args.release, args.chart, values=values(args.set), wait=False, timeout=args.timeout,
            server_side_apply=args.server_side == "true", take_ownership=args.take_ownership)
    if args.command == "upgrade":
        return await helm_sdkpy.Upgrade(config).run(
            args.release, args.chart, values=values(args.set), install=args.install, wait=False,
            timeout=args.timeout, server_side_apply=args.server_side,
            take_ownership=args.take_ownership)
    if args.command == "uninstall":
        return await helm_sdkpy.Uninstall(config).run(args.release, wait=False, timeout=args.timeout)
    return await helm_sdkpy.Status(config).run(args.release)


def helm_version():
    """The Helm module version the shared library was built with (Go's build information)."""
    import mmap

    from helm_sdkpy import _ffi

    with open(_ffi._find_library(), "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        at = m.find(b"\thelm.sh/helm/v4\t")
        if at < 0:
            return "unknown"
        return m[at:at + 64].split(b"\t")[2].decode()


# How the helm CLI frames an action's error (pkg/cmd/install.go, upgrade.go), and the prefix
# helm-sdkpy's Go shim puts before Helm's own error instead ("install failed: %w").
FRAME = {"install": "INSTALLATION FAILED: ", "upgrade": "UPGRADE FAILED: "}


def helm_error(command, error):
    """Helm's error as the helm CLI prints it."""
    message = str(error)
    shim = f"{command} failed: "
    if message.startswith(shim):
        message = message[len(shim):]
    return f"Error: {FRAME.get(command, '')}{message}"


def main():
    args = parse()
    if args.command == "version":
        print(f"Helm {helm_version()} (helm-sdkpy {helm_sdkpy.__version__})")
        return 0
    try:
        config = helm_sdkpy.Configuration(namespace=args.namespace, kubeconfig=args.kubeconfig)
    except helm_sdkpy.HelmError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    jobs = None
    if args.command in ("install", "upgrade"):
        jobs = HookJobs(args.kubeconfig, args.namespace)
        jobs.start()
    try:
        result = asyncio.run(act(args, config))
    except helm_sdkpy.HelmError as e:
        print(helm_error(args.command, e), file=sys.stderr)
        return 1
    finally:
        if jobs:
            jobs.done.set()
    if args.command == "uninstall":
        print(f'release "{args.release}" uninstalled')
        info = (result or {}).get("info")
        if info:
            print(info)
    else:
        show(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
