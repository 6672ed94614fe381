#!/usr/bin/env python3
"""Runs the shell commands the documentation shows (README.md, then every docs/*.md page, in
that order), as a reader would, and checks that each one works and still prints what the page
says it prints.

The pages' conventions, which this test holds them to:
- every ```sh block is commands, one a line (a trailing backslash continues a line), run
  from the repository root in order;
- a block whose first line is `# On a cluster ...` needs a cluster (kubectl and Kubewarden):
  it is not run here; `--cluster NAME` runs the one such block, in any of the pages, whose
  first line also names NAME against the current cluster (KUBECONFIG), for the suites that
  bring up the local API server with what the block needs;
- a command that ends in `# refused` must fail (exit non-zero), as the page says it does;
- a ```text block that follows a ```sh block is what that block's last command prints: each
  part between `...` must appear in its output, in order (whitespace aside, so the page may
  wrap a long line).
A command that cannot run here is skipped with the reason, printed; every other failure fails
the test. Each command is printed as FILE:LINE: COMMAND; the last line says
`readme: N passed, N failed, N skipped`.

usage: readme-test.py [--readme FILE]... [--list] [--cluster NAME [--start-at N] [--stop-after N]]
  --readme: the pages to run (repeatable; default README.md and docs/*.md)
  --start-at, --stop-after: of the cluster block's commands, 1 for the first, so that a suite
  can check what holds between two steps
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CLUSTER_MARK = re.compile(r"^# On a cluster\b", re.I)


def blocks(text):
    """(info, lines, line number of the first line) of every fenced block, in order."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, body = i + 2, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        out.append((m.group(1), body, start))
        i += 1
    return out


def commands(body, first):
    """The block's commands and their line numbers (the block's body starts at line `first`):
    comment lines dropped, continued lines joined."""
    cmds, current, at = [], "", first
    for n, line in enumerate(body, first):
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not current:
            at = n
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        cmds.append((at, re.sub(r"\s+", " ", current + line).strip()))
        current = ""
    if current:
        cmds.append((at, current.strip()))
    return cmds


def squeeze(s):
    return re.sub(r"\s+", "", s)


def shows(output, expected):
    """Whether each `...`-separated part of `expected` is in `output`, in order. The pages
    quote webhooks as Kubewarden 1.37.2 and later name them (`kw.cap.<policy>`); against a
    cluster whose webhooks are named as before (control-plane/cluster.sh exports POLICY_ID_PREFIX,
    `clusterwide-` for KUBEWARDEN_VERSION 1.36), the quote is read with that prefix."""
    at, flat = 0, squeeze(output)
    prefix = os.environ.get("POLICY_ID_PREFIX", "kw.cap.")
    for part in re.split(r"\.\.\.", "\n".join(expected)):
        part = squeeze(part.replace('"kw.cap.', f'"{prefix}'))
        if not part:
            continue
        found = flat.find(part, at)
        if found < 0:
            return part
        at = found + len(part)
    return None


# Placeholders a reader replaces with their own (a registry of theirs).
PLACEHOLDERS = ("YOUR-ORG", "registry://HOST/")


def why_not_here(cmd):
    """The reason a command cannot run in this test, or None."""
    words = cmd.split()
    # The command itself, past any VAR=value assignments before it.
    word = next((w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)), "")
    if cmd == "make test-all":
        return "it runs every test, this one included (.ci/run runs it)"
    if word == "kwctl" and not shutil.which("kwctl"):
        return "kwctl is not installed here (it is on no registry this machine reaches); " \
               "the next command runs the same with policy-host"
    if any(p in cmd for p in PLACEHOLDERS):
        return "it publishes to a registry of yours (a placeholder to replace); " \
               "e2e-tests/registry.bats pushes and pulls the module through a loopback registry"
    if word == "cargo" or word == "perf":
        return "profiling by hand: a second build of the module with its function names, " \
               "then perf on it (make bench runs the same evaluations, timed)"
    return None


def plan(page):
    """[(kind, block line, commands, expected output, first line)] for each sh block."""
    found, pending = [], None
    for info, body, line in blocks(page.read_text()):
        if info == "sh":
            kind = "cluster" if body and CLUSTER_MARK.match(body[0]) else "local"
            pending = [kind, line, commands(body, line), None, body[0] if body else ""]
            found.append(pending)
        elif info == "text" and pending is not None and pending[3] is None:
            pending[3] = body
        else:
            pending = None
    return found


def pages(given):
    """The pages to run: those given, else README.md and then docs/*.md, sorted."""
    if given:
        return [pathlib.Path(p).resolve() for p in given]
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def shown(path):
    """A page's name as the output shows it: relative to the repository where it can be."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--readme", action="append", metavar="FILE",
                    help="a page to run (repeatable); default README.md and docs/*.md")
    ap.add_argument("--list", action="store_true", help="print the plan, run nothing")
    ap.add_argument("--cluster", help="run the cluster block whose first line names CLUSTER")
    ap.add_argument("--start-at", type=int, default=1)
    ap.add_argument("--stop-after", type=int, default=0)
    args = ap.parse_args()
    # Each step: [kind, block line, commands, expected output, first line, page].
    steps = [s + [shown(page)] for page in pages(args.readme) for s in plan(page)]
    if args.cluster:
        steps = [s for s in steps if s[0] == "cluster" and args.cluster in s[4]]
        if len(steps) != 1:
            where = ", ".join(f"{s[5]}:{s[1]}" for s in steps)
            sys.exit(f"readme-test: {len(steps)} cluster blocks name {args.cluster!r}"
                     + (f" ({where})" if where else ""))
        steps[0][0] = "local"
        last = args.stop_after or len(steps[0][2])
        if not 1 <= args.start_at <= last <= len(steps[0][2]):
            sys.exit(f"readme-test: the block has {len(steps[0][2])} commands")
        if last < len(steps[0][2]):
            steps[0][3] = None  # the expected output is the last command's
        steps[0][2] = steps[0][2][args.start_at - 1:last]
    passed = failed = skipped = 0
    for kind, _, cmds, expected, mark, page in steps:
        for n, (line, cmd) in enumerate(cmds):
            where = f"{page}:{line}: {cmd}"
            refused = re.search(r"\s#\s*refused\b.*$", cmd) is not None
            if kind == "cluster":
                print(f"skip {where}\n     needs a cluster: {mark.lstrip('# ')}", flush=True)
                skipped += 1
                continue
            reason = why_not_here(cmd)
            if reason:
                print(f"skip {where}\n     {reason}", flush=True)
                skipped += 1
                continue
            if args.list:
                print(f"run  {where}")
                continue
            result = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True,
                                    text=True, env=dict(os.environ))
            output = result.stdout + result.stderr
            if (result.returncode != 0) != refused:
                said = "refused" if refused else "to work"
                print(f"FAIL {where}\n     {page} says it is {said}; exit status "
                      f"{result.returncode}:\n" + output[-3000:], flush=True)
                failed += 1
                continue
            missing = shows(output, expected) if expected and n == len(cmds) - 1 else None
            if missing:
                print(f"FAIL {where}\n     its output no longer shows {missing!r}:\n"
                      + output[-3000:], flush=True)
                failed += 1
                continue
            print(f"ok   {where}", flush=True)
            passed += 1
    print(f"readme: {passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or (passed == 0 and not args.list) else 0)


if __name__ == "__main__":
    main()
