#!/usr/bin/env python3
"""The table of `make cluster-latency` (scripts/cluster-latency.sh): the writes `policy-host
latency` recorded, one JSON line each, grouped by backend, preset, write and configuration, with
each configuration's p50 and p99 against no policy, and the goals checked:
- the ordinary UPDATE of an owned object under the preset as shipped within 5% of no policy at
  p50 and p99, and ahead of the ValidatingAdmissionPolicy;
- an owner change under the preset as shipped no slower than before its generated condition.

usage: latency-table.py RECORD
"""

import json
import statistics
import sys
from collections import defaultdict

MODES = {"none": "no policy", "vap": "a VAP, the same-owner rule in CEL",
         "floor": "the preset's webhook, its matchCondition `false`",
         "shipped": "the preset as shipped", "before": "the preset without its generated condition"}
ORDER = ("none", "vap", "floor", "shipped", "before")
PRESETS = {"olm-v1": "deploy/olm-v1.yaml", "all-tools": "deploy/all-tools.yaml",
           "olm-v1-operator": "deploy/identity/olm-v1-operator.yaml"}


def quantile(values, q):
    values = sorted(values)
    return values[round((len(values) - 1) * q)]


def main(path):
    groups = defaultdict(lambda: defaultdict(list))
    evaluated = defaultdict(lambda: [0.0, 0])
    order = []
    for line in open(path):
        r = json.loads(line)
        if "evaluations" in r:
            e = evaluated[(r["backend"], r["preset"], r["mode"])]
            e[0] += r["seconds"]
            e[1] += r["evaluations"]
            continue
        key = (r["backend"], r["preset"], r["write"], r["lookup"])
        if key not in groups:
            order.append(key)
        groups[key][r["mode"]].append(r["ms"])
    goals = []
    by_table = defaultdict(list)
    for key in order:
        by_table[key[:2]].append(key)
    for (backend, preset), keys in by_table.items():
        print(f"{PRESETS.get(preset, preset)}, {backend}:\n")
        print("| write | looked up | configuration | writes | p50 ms | p99 ms | p50 / no policy | p99 / no policy |")
        print("|---|---|---|---|---|---|---|---|")
        for key in keys:
            modes = groups[key]
            base = modes.get("none")
            for mode in ORDER:
                times = modes.get(mode)
                if not times:
                    continue
                p50, p99 = quantile(times, 0.5), quantile(times, 0.99)
                rel = (f"{p50 / quantile(base, 0.5):.2f}x | {p99 / quantile(base, 0.99):.2f}x"
                       if base else "- | -")
                print(f"| {key[2]} | {key[3]} | {MODES[mode]} | {len(times)} | {p50:.2f} | {p99:.2f} | {rel} |")
            shipped, before, vap = modes.get("shipped"), modes.get("before"), modes.get("vap")
            floor = modes.get("floor")
            where = f"{PRESETS.get(preset, preset)}, {backend}, {key[2]}"
            if key[2].startswith("ordinary") and shipped and base and preset != "olm-v1-operator":
                r50 = quantile(shipped, 0.5) / quantile(base, 0.5)
                r99 = quantile(shipped, 0.99) / quantile(base, 0.99)
                ok = r50 <= 1.05 and r99 <= 1.05
                at_floor = (f"; any matchCondition: p50 {quantile(floor, 0.5) / quantile(base, 0.5):.2f}x, "
                            f"p99 {quantile(floor, 0.99) / quantile(base, 0.99):.2f}x" if floor else "")
                goals.append(f"{'PASS' if ok else 'MISS'}: {where}: within 5% of no policy "
                             f"(p50 {r50:.2f}x, p99 {r99:.2f}x{at_floor})")
                if vap:
                    ahead = quantile(shipped, 0.5) <= quantile(vap, 0.5)
                    goals.append(f"{'PASS' if ahead else 'MISS'}: {where}: ahead of the VAP at p50 "
                                 f"({quantile(shipped, 0.5):.2f} ms against {quantile(vap, 0.5):.2f} ms, "
                                 f"the VAP {quantile(vap, 0.5) / quantile(base, 0.5):.2f}x no policy)")
            elif key[2].startswith("owner change") and shipped and before:
                r = quantile(shipped, 0.5) / quantile(before, 0.5)
                goals.append(f"{'PASS' if r <= 1.05 else 'MISS'}: {where}: no slower than before its "
                             f"condition (p50 {r:.2f}x, {statistics.median(shipped) - statistics.median(before):+.2f} ms)")
        spent = [(m, evaluated[(backend, preset, m)]) for m in ORDER if evaluated[(backend, preset, m)][1]]
        if spent:
            print("\nThe API server's own time evaluating the webhook's matchConditions, per write they "
                  "keep in it (its apiserver_admission_match_condition_evaluation_seconds): "
                  + ", ".join(f"{MODES[m]} {s / n * 1e6:.0f} µs ({n} writes)" for m, (s, n) in spent) + ".")
        print()
    for g in goals:
        print(f"- {g}")


if __name__ == "__main__":
    main(sys.argv[1])
