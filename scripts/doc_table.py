#!/usr/bin/env python3
"""Writes a measured table into a document, between its marker comments, so that the numbers
in docs/ are the ones the last run printed and cannot go stale by hand.

The block between `<!-- NAME:begin -->` and `<!-- NAME:end -->` is replaced by a line naming
the date, the machine and the command, then the text. Both markers must be there, once each.

usage: doc_table.py FILE NAME --command CMD [--tables-only] < TEXT
  --tables-only: keep only the Markdown tables of TEXT, their captions (lines ending in a colon)
  and its `race:` and `cluster-race, all runs:` summary lines (for a command that prints
  progress around its tables)
"""
import argparse
import datetime
import os
import pathlib
import platform
import re
import sys


def machine():
    """The machine as a reader of the numbers needs it: architecture, CPU model, cores."""
    model = "unknown CPU"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()}, {model}, {os.cpu_count()} cores"


def write(path, name, text, command):
    """Replaces the block NAME of the document at `path` with `text`, headed by its provenance."""
    path = pathlib.Path(path)
    doc = path.read_text()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if doc.count(begin) != 1 or doc.count(end) != 1 or doc.index(begin) > doc.index(end):
        sys.exit(f"doc_table: {path} must hold {begin} and then {end}, once each")
    head, rest = doc.split(begin)
    _, tail = rest.split(end)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    block = f"{begin}\n_Written by `{command}` on {stamp}, on {machine()}._\n\n{text.strip()}\n{end}"
    path.write_text(head + block + tail)
    print(f"doc_table: wrote the {name} block of {path}")


def tables_only(text):
    """The Markdown tables of `text`, the lines that end with a colon before them (their
    captions), and its `race...:` summary lines, each block apart."""
    blocks, previous = [], None
    for line in text.splitlines():
        kind = ("table" if line.startswith("|") else
                "summary" if re.match(r"(race( \([^)]*\))?|cluster-race, all runs):", line) else
                "caption" if line.endswith(":") and not line.startswith(" ") else None)
        if kind is None:
            previous = None
            continue
        if kind != "table" or previous != "table":
            blocks.append([])
        blocks[-1].append(line)
        previous = kind
    # A caption stays only where a table follows it.
    blocks = [b for i, b in enumerate(blocks)
              if not b[0].endswith(":") or re.match(r"(cluster-)?race", b[0])
              or (i + 1 < len(blocks) and blocks[i + 1][0].startswith("|"))]
    if not any(line.startswith("|") for block in blocks for line in block):
        sys.exit("doc_table: no table in the input")
    return "\n\n".join("\n".join(block) for block in blocks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("name")
    ap.add_argument("--command", required=True)
    ap.add_argument("--tables-only", action="store_true")
    args = ap.parse_args()
    text = sys.stdin.read()
    if args.tables_only:
        text = tables_only(text)
    write(args.file, args.name, text, args.command)


if __name__ == "__main__":
    main()
