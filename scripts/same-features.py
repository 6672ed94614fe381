#!/usr/bin/env python3
"""Whether one cargo build resolves each crate it shares with another with the same features.

    same-features.py 'ARGS OF BUILD A' 'ARGS OF BUILD B'

Each build is given as `cargo tree` selection arguments (`-p policy-host --no-default-features
--features selects`; `--workspace`). A crate compiled with other features is compiled again,
and so is everything that depends on it: `make run`'s policy-host must resolve every crate it
shares with the workspace build (`make host`, the tests) as that build does, or the full build
compiles wasmtime a second time. Prints each crate of A that B resolves otherwise; exits 1 if
there is any (apart from the crates named with --except: the workspace's own, built with other
features on purpose).
"""

import argparse
import re
import shlex
import subprocess
import sys

LINE = re.compile(r"^(\S+) (v\S+)(?: \([^)]*\))*(?: \(\*\))? \[(.*)\]$")


def resolved(args, locked=True):
    """{(crate, version): {features, one entry per way it is built (target, build script)}}"""
    out = subprocess.run(
        ["cargo", "tree", *(["--locked"] if locked else []), "--offline", "--target", "x86_64-unknown-linux-gnu", "-e", "normal,build",
         "--prefix", "none", "-f", "{p} [{f}]", *args],
        check=True, capture_output=True, text=True).stdout
    crates = {}
    for line in out.splitlines():
        m = LINE.match(line.strip())
        if m:
            crates.setdefault((m[1], m[2]), set()).add(m[3])
    return crates


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--except", action="append", default=[], dest="excepted")
    p.add_argument("--unlocked", action="store_true",
                   help="let cargo update Cargo.lock (the tests' copy of a changed workspace)")
    o = p.parse_args()
    a = resolved(shlex.split(o.a), not o.unlocked)
    b = resolved(shlex.split(o.b), not o.unlocked)
    differ = [(k, a[k], b[k]) for k in sorted(a) if k in b and a[k] != b[k] and k[0] not in o.excepted]
    for (crate, version), fa, fb in differ:
        print(f"{crate} {version}: [{'] ['.join(sorted(fa))}] here, [{'] ['.join(sorted(fb))}] there")
    shared = sum(1 for k in a if k in b)
    print(f"same-features: {len(differ)} of the {shared} crates both builds compile differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
