#!/usr/bin/env python3
"""Rewrites vendor/modules.txt of Debian's kubernetes 1.20 source tree for Go >= 1.17.

The tree's modules.txt lists each replaced module's packages under its `# mod => repl` line
(a replacement for every version), which Go >= 1.17 reads as a module of version "" and
refuses ("updates to go.mod needed"). Go wants each package under the `# mod version => repl`
line of the module that holds it, and the `# mod => repl` lines alone, at the end. Packages
are assigned to the module whose path is their longest prefix.

usage: fix-vendor.py TREE
"""
import pathlib
import sys

tree = pathlib.Path(sys.argv[1])
path = tree / "vendor/modules.txt"
versioned, wildcard, packages = [], [], []
current = None
for line in path.read_text().splitlines():
    if line.startswith("## "):
        if current is not None:
            current["meta"].append(line)
    elif line.startswith("# "):
        fields = line[2:].split()
        if len(fields) > 1 and fields[1] != "=>":
            current = {"module": fields[0], "header": line, "meta": [], "packages": []}
            versioned.append(current)
        else:
            current = None
            wildcard.append(line)
    elif line.strip():
        packages.append(line)

by_path = {m["module"]: m for m in versioned}
for package in packages:
    candidates = [p for p in by_path if package == p or package.startswith(p + "/")]
    if not candidates:
        sys.exit(f"fix-vendor: no module holds package {package}")
    by_path[max(candidates, key=len)]["packages"].append(package)

out = []
for m in versioned:
    out.append(m["header"])
    out.extend(m["meta"])
    out.extend(m["packages"])
out.extend(wildcard)
path.write_text("\n".join(out) + "\n")
# Progress goes to stderr: build.sh prints the binary's path, and only that, on stdout.
print(f"fix-vendor: {len(packages)} packages under {len(versioned)} modules, {len(wildcard)} replacements",
      file=sys.stderr)
