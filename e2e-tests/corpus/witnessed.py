#!/usr/bin/env python3
"""What a real tool sent, against the corpus: every write the witness webhook recorded
(control-plane/witness.py, registered for the tool's users by control-plane/witness.sh) must
have its kind of write in the tool's corpus file, else the corpus misses it.

A kind of write is what the policy's answer depends on: the operation, whether the object is
namespaced, and what the write does to each owner key any shipped preset knows (added, kept,
changed, removed; on a DELETE, held). Names, values and the object's kind are left out: the
corpus's `podinfo` Deployment stands for the real run's ConfigMap. Dry runs count as writes (the
API server sends them to the webhooks as it sends the real ones).

usage: witnessed.py TOOL RECORDS...   (TOOL: a corpus file's `tool`, e.g. flux, flux-helm)
Prints each kind of write the records hold, with how many and the corpus writes that have it;
exits 1, listing them, when some are in no write of the tool's corpus.
"""
import json
import pathlib
import sys

import yaml

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from corpus import KINDS, load_tools  # noqa: E402


def owner_keys():
    """Every owner label and annotation a shipped preset (deploy/, deploy/identity/) names."""
    labels, annotations = set(), set()
    for path in sorted(ROOT.glob("deploy/**/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            settings = ((doc or {}).get("spec") or {}).get("settings") or {}
            for scheme in [settings, *settings.get("schemes", [])]:
                labels.update(scheme.get("ownerLabels") or [])
                annotations.update(scheme.get("ownerAnnotations") or [])
    return sorted(labels), sorted(annotations)


def shape(operation, namespaced, old, new, keys):
    """The kind of write: (operation, namespaced, ((key, what the write does to it), ...))."""
    labels, annotations = keys
    moves = []
    for where, names in (("labels", labels), ("annotations", annotations)):
        before = (old or {}).get(where) or {}
        after = (new or {}).get(where) or {}
        for key in names:
            if operation == "DELETE":
                what = "held" if key in before else None
            elif key in before and key in after:
                what = "kept" if before[key] == after[key] else "changed"
            elif key in after:
                what = "added"
            elif key in before:
                what = "removed"
            else:
                what = None
            if what:
                moves.append((key, what))
    return operation, namespaced, tuple(moves)


def describe(s):
    operation, namespaced, moves = s
    where = "namespaced" if namespaced else "cluster-scoped"
    return f"{operation} of a {where} object: " + (", ".join(f"{k} {w}" for k, w in moves) or "no owner key")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tool, files = sys.argv[1], sys.argv[2:]
    tools = load_tools()
    if tool not in tools:
        sys.exit(f"witnessed: no corpus of {tool} (e2e-tests/corpus/*.yaml: {', '.join(sorted(tools))})")
    keys = owner_keys()
    corpus = {}
    for w in tools[tool][1]["writes"]:
        namespaced = KINDS[w["kind"]][3]
        corpus.setdefault(shape(w["operation"], namespaced, w.get("old"), w.get("new"), keys), []).append(w["name"])
    seen = {}
    for path in files:
        for line in pathlib.Path(path).read_text().splitlines():
            r = json.loads(line)
            if r.get("name") == "witness-probe":
                continue
            s = shape(r["operation"], bool(r.get("namespace")), r.get("oldObject"), r.get("object"), keys)
            seen.setdefault(s, []).append(r)
    missing = []
    for s, records in sorted(seen.items(), key=lambda i: describe(i[0])):
        r = records[0]
        example = f"{r['kind']} {r.get('namespace') or ''}{'/' if r.get('namespace') else ''}{r['name']} by {r['user']}"
        names = corpus.get(s)
        print(f"{len(records):5} x {describe(s)} (e.g. {example}): {', '.join(names) if names else 'NOT IN THE CORPUS'}")
        if not names:
            missing.append(s)
    print(f"{sum(len(r) for r in seen.values())} writes of {tool}, {len(seen)} kinds, {len(missing)} not in e2e-tests/corpus/{tools[tool][0].name}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
