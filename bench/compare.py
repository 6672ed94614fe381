#!/usr/bin/env python3
"""Two modules on the same requests, interleaved: is a change within noise?

On a shared 2-core machine one `policy-host bench` run drifts by a tenth or more from the next
(the null module alone read 0.4 to 0.6 µs on the 2 KB CRD within one hour), so a release
against the previous one is measured in rounds, each measuring both modules back to back, and
compared by the median over rounds of each round's ratio, with the spread of those ratios.

usage: bench/compare.py OLD.wasm NEW.wasm [--rounds 7] [--settings-json JSON]
                        [-r bench/requests/crd-2kb-accept.json ...]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
# policy-host with wasmtime's runtime optimized (`make bench` builds it: Cargo.toml, host-opt).
HOST = pathlib.Path(os.environ.get("POLICY_HOST", ROOT / "target/host-opt/policy-host"))
DEFAULT = ["crd-2kb-accept", "crd-2kb-reject", "delete-accept", "crd-prometheus-accept", "crd-prometheus-reject"]


def median_us(module, request, settings, seconds):
    run = subprocess.run([str(HOST), "bench", "--json", "--settings-json", settings, "-r", str(request),
                          "--warm-up-time", "0.3", "--measurement-time", str(seconds), "--num-samples", "20",
                          str(module)], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)["median_ns"] / 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--settings-json", default="{}")
    ap.add_argument("-r", "--request", action="append")
    args = ap.parse_args()
    requests = args.request or [str(ROOT / f"bench/requests/{n}.json") for n in DEFAULT]
    print(f"| request | {pathlib.Path(args.old).name} µs | {pathlib.Path(args.new).name} µs "
          f"| new/old, median of {args.rounds} rounds | new/old, lowest and highest round |")
    print("|---|---|---|---|---|")
    for request in requests:
        old, new, ratios = [], [], []
        for _ in range(args.rounds):
            o = median_us(args.old, request, args.settings_json, args.seconds)
            n = median_us(args.new, request, args.settings_json, args.seconds)
            old.append(o)
            new.append(n)
            ratios.append(n / o)
        print(f"| {pathlib.Path(request).stem} | {statistics.median(old):,.2f} | {statistics.median(new):,.2f} "
              f"| {statistics.median(ratios):.3f} | {min(ratios):.3f} - {max(ratios):.3f} |", flush=True)


if __name__ == "__main__":
    main()
