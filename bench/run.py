#!/usr/bin/env python3
"""Runs the benchmark comparison and prints the table and the targets (`make bench`).

Every request is evaluated by four modules on the same host, in one run: this policy, the
null module (the waPC call and the payload copy), the floor module (the null module plus the
structural check every byte of the payload must pass, with the policy's own code: the least a
policy that rejects truncated or unbalanced JSON can do) and the conventional module (the same
rules over a serde_json::Value of the whole request). Each measurement is
`policy-host bench`: one instance, warm-up, then samples; the median time per evaluation.
"End to end" adds the host's own per-request work as policy-server does it (parse the request
into a JSON tree, serialize the guest payload), for this policy and the null module, and for
the floor module on the small requests. policy-host allocates with policy-server's allocator
(jemalloc, configured as policy-server configures it): with glibc's, the host's side of the
same request moved by up to a tenth with where earlier allocations had landed, which decided
the end-to-end ratios (see docs/performance.md).

Every module above is measured on one instance reused across evaluations, as `kwctl bench`
does. policy-server 1.31 instead serves each request on a fresh instance (it rehydrates an
InstancePre per request, with epoch interruption on): a second, smaller table measures the
small requests that way (`policy-host bench --fresh-instance`), for this policy and the null
module, and there what a policy keeps between calls (its parsed settings) is gone every time.

The "previous" columns come from a committed baseline (bench/baseline.json), measured the same
way for the previous release's module: `bench/run.py --record-baseline MODULE` writes it.
Ratios to the null module of the same run are what the targets compare, as they hold across
machines and runs; microseconds are shown for reading. The report is written into
docs/performance.md too, between its `bench` markers (not with --no-doc).
"""
import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
import doc_table  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
# policy-host with wasmtime's runtime optimized (`make bench` builds it: Cargo.toml, host-opt).
HOST = pathlib.Path(os.environ.get("POLICY_HOST", ROOT / "target/host-opt/policy-host"))
MODULES = {
    "policy": ROOT / "policy.wasm",
    "null": ROOT / "target/wasm32-wasip1/release/null_module.wasm",
    "floor": ROOT / "target/wasm32-wasip1/release/floor_module.wasm",
    "conventional": ROOT / "target/wasm32-wasip1/release/conventional_module.wasm",
}
# The floor module built with its `index` feature: a simdjson-style reader's first stage (the
# classification of every byte, and the index of the structural characters), measured on the
# small requests only.
INDEX_FLOOR = ROOT / "target/index-floor/wasm32-wasip1/release/floor_module.wasm"
BASELINE = ROOT / "bench/baseline.json"
BOTH = ("accept", "reject")
CASES = [("crd-2kb", BOTH), ("crd-managed", BOTH), ("delete", ("accept",)), ("connect", ("accept",)),
         ("deployment-50kb", BOTH), ("crd-prometheus", BOTH), ("crd-synthetic-1mb", BOTH),
         ("crd-synthetic-4mb", BOTH), ("configmap-1mb", BOTH), ("configmap-4mb", BOTH),
         ("crd-nested-100", BOTH)]
FRESH = [("crd-2kb", "accept"), ("crd-2kb", "reject"), ("crd-managed", "accept"), ("delete", "accept"),
         ("connect", "accept")]
SMALL = ("crd-2kb", "crd-managed", "delete", "connect")
# The identity rules and stamping: (row, request, settings, accepted, stamped). The requests'
# writer is operator-controller's account; the OLM v1 owner keys are the default ones.
OPERATOR = ["olmv1-system/operator-controller"]
OLM_KIND, OLM_NAME = "olm.operatorframework.io/owner-kind", "olm.operatorframework.io/owner-name"
BOUND = {"bindings": [{"writers": {"serviceAccounts": OPERATOR}, "owner": {OLM_KIND: "ClusterExtension"}}]}
IDENTITY = [
    ("no bindings (today's rules)", "crd-2kb-accept", {}, True, False),
    ("bindings that cover no owner here", "crd-2kb-accept",
     {"bindings": [{"writers": {"users": ["ci"]}, "owner": {OLM_NAME: "other"}}]}, True, False),
    ("a bound writer", "crd-2kb-accept", BOUND, True, False),
    ("an unbound writer (refused)", "crd-2kb-accept",
     {"bindings": [{"writers": {"serviceAccounts": ["other/deployer"]}, "owner": {OLM_KIND: "ClusterExtension"}}]},
     False, False),
    ("DELETE, no bindings", "delete-accept", {}, True, False),
    ("DELETE, a bound writer (the stored object read)", "delete-accept", BOUND, True, False),
    ("2 KB CREATE, not stamping", "crd-2kb-create", {}, True, False),
    ("2 KB CREATE, stamped", "crd-2kb-create",
     {"stamp": True, "bindings": [{"writers": {"serviceAccounts": OPERATOR},
                                   "owner": {OLM_KIND: "ClusterExtension", OLM_NAME: "ext-a"}}]}, True, True),
    ("1 MB CREATE, not stamping", "configmap-1mb-create", {}, True, False),
    ("1 MB CREATE, stamped", "configmap-1mb-create",
     {"stamp": True, "bindings": [{"writers": {"serviceAccounts": OPERATOR},
                                   "owner": {OLM_KIND: "ClusterExtension", OLM_NAME: "ext-a"}}]}, True, True),
]
LARGE = ("crd-prometheus", "crd-synthetic-1mb", "crd-synthetic-4mb", "configmap-1mb", "configmap-4mb")
# Several tools: deploy/all-tools.yaml's settings (tests/support/all-tools.json) against the
# one-tool OLM v1 defaults, on the same requests: (request, accepted under all-tools).
ALL_TOOLS = json.loads((ROOT / "tests/support/all-tools.json").read_text())
TOOLS = [("crd-2kb-accept", True), ("crd-2kb-reject", False), ("crd-2kb-second-tool", False),
         ("crd-prometheus-accept", True), ("crd-prometheus-reject", False), ("crd-prometheus-second-tool", False)]


def bench(module, request, args, end_to_end=False, fresh_instance=False, settings=None):
    """The report, or None when the module cannot evaluate the request (a guest error)."""
    run = subprocess.run(
        [str(HOST), "bench", "--json"] + (["--end-to-end"] if end_to_end else [])
        + (["--fresh-instance"] if fresh_instance else [])
        + (["--settings-json", json.dumps(settings)] if settings is not None else []) + [
            "-r", str(request), "--warm-up-time", str(args.warm_up),
            "--measurement-time", str(args.measurement), "--num-samples", str(args.samples), str(module)],
        capture_output=True, text=True)
    if run.returncode != 0:
        print(f"note: {pathlib.Path(module).name} fails on {request.name}{' end to end' if end_to_end else ''}: "
              f"{run.stderr.strip()[:120]}")
        return None
    return json.loads(run.stdout)


def record_baseline(module, args):
    """Measures `module` (the previous release) and the null module on every request."""
    requests = pathlib.Path(args.requests)
    rows = {}
    for case, outcomes in CASES:
        for outcome in outcomes:
            path = requests / f"{case}-{outcome}.json"
            p, n = bench(module, path, args), bench(MODULES["null"], path, args)
            if p is None or n is None:
                continue
            rows[f"{case}-{outcome}"] = {"policy_us": p["median_ns"] / 1000, "null_us": n["median_ns"] / 1000,
                                         "memory_bytes": p["memory_bytes"]}
    baseline = {"release": args.release, "module_bytes": pathlib.Path(module).stat().st_size,
                "machine": f"{platform.machine()}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores",
                "command": f"bench/run.py --record-baseline {module} --release {args.release}", "rows": rows}
    BASELINE.write_text(json.dumps(baseline, indent=2) + "\n")
    print(f"wrote {BASELINE} ({len(rows)} rows)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", default=str(ROOT / "bench/requests"))
    ap.add_argument("--warm-up", type=float, default=0.5)
    ap.add_argument("--measurement", type=float, default=2.0)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--record-baseline", metavar="MODULE", help="measure MODULE and write bench/baseline.json")
    ap.add_argument("--release", default="previous", help="the release the baseline module is")
    ap.add_argument("--no-doc", action="store_true", help="do not write the tables into docs/performance.md")
    args = ap.parse_args()
    report = []

    def say(text=""):
        """Prints a line of the report, and keeps it for docs/performance.md."""
        print(text)
        report.append(text)

    if args.record_baseline:
        return record_baseline(args.record_baseline, args)
    requests = pathlib.Path(args.requests)
    baseline = json.loads(BASELINE.read_text())
    previous = baseline["rows"]

    results = {}
    rows = []
    for case, outcomes in CASES:
        for outcome in outcomes:
            path = requests / f"{case}-{outcome}.json"
            r = {name: bench(m, path, args) for name, m in MODULES.items()}
            if case in SMALL:
                r["index"] = bench(INDEX_FLOOR, path, args)
            for name in ("policy", "null") + (("floor",) if case in SMALL else ()):
                r[f"{name}-e2e"] = bench(MODULES[name], path, args, end_to_end=True)
            results[(case, outcome)] = r
            # policy-server (like the end-to-end host here) parses requests with serde_json's
            # 128-level limit, so the deeply nested CRD never reaches a guest there.
            e2e = (f'{r["policy-e2e"]["median_ns"] / r["null-e2e"]["median_ns"]:.2f}x'
                   if r["policy-e2e"] and r["null-e2e"] else "host refuses (nesting)")
            e2e_floor = (f'{r["floor-e2e"]["median_ns"] / r["null-e2e"]["median_ns"]:.2f}x'
                         if r.get("floor-e2e") and r["null-e2e"] else "-")
            p, n, f = (r[k]["median_ns"] / 1000 for k in ("policy", "null", "floor"))
            size = r["policy"]["payload_bytes"]
            assert r["policy"]["accepted"] == (outcome == "accept"), f"{case}-{outcome}: wrong decision"
            if r["conventional"] is None:
                conv, ratio = "fails (500)", "-"
            else:
                assert r["conventional"]["accepted"] == (outcome == "accept"), f"{case}-{outcome}: conventional decided wrong"
                c = r["conventional"]["median_ns"] / 1000
                conv, ratio = f"{c:,.1f}", f"{c / p:.2f}x"
            prev = previous.get(f"{case}-{outcome}")
            prev_cols = (f"{prev['policy_us']:,.1f} | {prev['policy_us'] / prev['null_us']:.2f}x"
                         if prev else "- | -")
            rows.append(f"| {case} | {outcome} | {size / 1e6:.3f} | {p:,.1f} | {n:,.1f} | {conv} "
                        f"| {p / n:.2f}x | {f / n:.2f}x | {prev_cols} | {ratio} | {e2e} | {e2e_floor} "
                        f"| {r['policy']['memory_bytes'] / 2**20:.1f} |")

    say(f"Machine: {doc_table.machine()}; median of {args.samples} samples, {args.measurement}s each module and request. "
          f"Previous: {baseline['release']} ({baseline['command']}).\n")
    say("| request | outcome | payload MB | policy µs | null µs | conventional µs | policy/null "
          f"| floor/null | {baseline['release']} µs | {baseline['release']} policy/null | conventional/policy "
          "| end to end policy/null | end to end floor/null | policy guest memory MiB |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    say("\n".join(rows))

    say("\nAs policy-server 1.31 serves requests, a fresh instance per request (instantiation, "
          "init functions, the call; with epoch interruption):\n")
    say("| request | outcome | policy µs | null µs | policy/null |")
    say("|---|---|---|---|---|")
    for case, outcome in FRESH:
        path = requests / f"{case}-{outcome}.json"
        p, n = (bench(MODULES[m], path, args, fresh_instance=True) for m in ("policy", "null"))
        say(f"| {case} | {outcome} | {p['median_ns'] / 1000:,.1f} | {n['median_ns'] / 1000:,.1f} "
              f"| {p['median_ns'] / n['median_ns']:.2f}x |")

    say("\nThe identity rules and stamping (policy.wasm, one instance; the settings of each row "
        "in bench/run.py's IDENTITY):\n")
    say("| case | request | policy µs | null µs | policy/null |")
    say("|---|---|---|---|---|")
    for label, name, settings, accepted, stamped in IDENTITY:
        path = requests / f"{name}.json"
        p = bench(MODULES["policy"], path, args, settings=settings)
        n = bench(MODULES["null"], path, args)
        assert p["accepted"] == accepted and p["mutated"] == stamped, f"{label}: {p}"
        say(f"| {label} | {name} | {p['median_ns'] / 1000:,.1f} | {n['median_ns'] / 1000:,.1f} "
            f"| {p['median_ns'] / n['median_ns']:.2f}x |")

    say("\nSeveral tools (policy.wasm, one instance): the one-tool OLM v1 defaults (`{}`) and "
        "deploy/all-tools.yaml's settings (six schemes, two aliases) on the same requests; "
        "`second-tool` adds a Helm release's annotations to a ClusterExtension's CRD, which only "
        "all-tools refuses:\n")
    say("| request | one tool µs | all tools µs | null µs | one tool/null | all tools/null | all tools/one tool |")
    say("|---|---|---|---|---|---|---|")
    for name, accepted in TOOLS:
        path = requests / f"{name}.json"
        one, every = bench(MODULES["policy"], path, args, settings={}), bench(MODULES["policy"], path, args, settings=ALL_TOOLS)
        n = bench(MODULES["null"], path, args)
        assert every["accepted"] == accepted, f"{name} under all-tools: {every}"
        o, a, z = one["median_ns"] / 1000, every["median_ns"] / 1000, n["median_ns"] / 1000
        say(f"| {name} | {o:,.1f} | {a:,.1f} | {z:,.1f} | {o / z:.2f}x | {a / z:.2f}x | {a / o:.2f}x |")

    def med(case, outcome="reject", module="policy"):
        return results[(case, outcome)][module]["median_ns"]

    def per_mb(case, outcome, module="policy"):
        r = results[(case, outcome)][module]
        return r["median_ns"] / r["payload_bytes"]

    def guest_per_mb(case, outcome):
        """The policy's own time per MB: its time less the null module's (the host's copy of
        the payload into the guest, which is the same for every module and itself grows
        faster than the payload once it leaves the caches)."""
        return (med(case, outcome) - med(case, outcome, "null")) / results[(case, outcome)]["policy"]["payload_bytes"]

    def beside(name, ratio, bar, above):
        """A comparison module's ratio, to print beside a target, saying so when the bar lies
        below it."""
        return f"; {name} {ratio:.2f}" + (f" ({above})" if ratio > bar else "")

    def floor(case, outcome, bar):
        """The floor module's ratio to the null module, and whether the bar lies below it; and
        the same for the first stage of an index-walking reader."""
        ratio = med(case, outcome, "floor") / med(case, outcome, "null")
        index = med(case, outcome, "index") / med(case, outcome, "null")
        return (beside("floor", ratio, bar, "the structural check alone is above the bar")
                + beside("structural index", index, bar, "above the bar before any key is read"))

    # Each check: (name, value, bar, higher is better).
    checks = []
    for o in BOTH:
        ratio = med("crd-2kb", o) / med("crd-2kb", o, "null")
        checks.append((f"crd-2kb {o}: policy/null {ratio:.2f} <= 2.5{floor('crd-2kb', o, 2.5)}", ratio, 2.5, False))
    for case in ("delete", "connect"):
        ratio = med(case, "accept") / med(case, "accept", "null")
        checks.append((f"{case}: policy/null {ratio:.2f} <= 1.5{floor(case, 'accept', 1.5)}", ratio, 1.5, False))
    for o in BOTH:
        r = results[("crd-2kb", o)]
        ratio = r["policy-e2e"]["median_ns"] / r["null-e2e"]["median_ns"]
        floor_e2e = r["floor-e2e"]["median_ns"] / r["null-e2e"]["median_ns"]
        checks.append((f"crd-2kb {o}: end to end policy/null {ratio:.2f} <= 1.10"
                       + beside("floor", floor_e2e, 1.10, "the structural check alone is above the bar"),
                       ratio, 1.10, False))
    for case in ("crd-prometheus", "crd-synthetic-4mb"):
        for o in BOTH:
            ratio = med(case, o, "conventional") / med(case, o)
            checks.append((f"{case} {o}: conventional/policy {ratio:.2f} >= 5", ratio, 5, True))
    for case in LARGE:
        for o in BOTH:
            prev = previous.get(f"{case}-{o}")
            if prev is None:
                continue
            now = med(case, o) / med(case, o, "null")
            then = prev["policy_us"] / prev["null_us"]
            # Ratios to the null module of the same run, with 5% for noise.
            checks.append((f"{case} {o}: policy/null {now:.2f} no slower than {baseline['release']} "
                           f"{then:.2f} (+5%)", now, then * 1.05, False))
    for big, small in (("configmap-4mb", "configmap-1mb"), ("crd-synthetic-4mb", "crd-synthetic-1mb")):
        for o in BOTH:
            ratio = guest_per_mb(big, o) / guest_per_mb(small, o)
            raw = per_mb(big, o) / per_mb(small, o)
            null = per_mb(big, o, "null") / per_mb(small, o, "null")
            checks.append((f"{big} vs {small} {o}: time per MB ratio, less the null module's, {ratio:.2f} <= 1.1 "
                           f"(with the host's copy: policy {raw:.2f}, null module {null:.2f})", ratio, 1.1, False))
    for case in ("crd-synthetic-4mb", "configmap-4mb"):
        r = results[(case, "reject")]["policy"]
        limit = 2 * r["payload_bytes"] + 2 * 2**20
        checks.append((f"{case}: guest memory {r['memory_bytes']:,} <= 2 x request + 2 MiB = {limit:,}",
                       r["memory_bytes"], limit, False))
        prev = previous.get(f"{case}-reject")
        if prev:
            checks.append((f"{case}: guest memory {r['memory_bytes']:,} <= {baseline['release']} "
                           f"{prev['memory_bytes']:,}", r["memory_bytes"], prev["memory_bytes"], False))
    sizes = {p.name: p.stat().st_size for p in [ROOT / "policy.wasm", ROOT / "target/policy.unopt.wasm",
                                                 MODULES["null"], MODULES["floor"], MODULES["conventional"]]
             if p.exists()}
    size = sizes["policy.wasm"]
    checks.append((f"policy.wasm {size:,} bytes <= {baseline['release']} {baseline['module_bytes']:,}",
                   size, baseline["module_bytes"], False))
    say("\nTargets:")
    for name, value, bar, higher in checks:
        say(f"- {'PASS' if (value >= bar if higher else value <= bar) else 'MISS'} {name}")
    say("\nModule sizes (bytes): " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    if not args.no_doc:
        doc_table.write(ROOT / "docs/performance.md", "bench", "\n".join(report), "make bench")


if __name__ == "__main__":
    main()
