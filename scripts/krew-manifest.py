#!/usr/bin/env python3
"""Renders the krew plugin manifest template (.krew.yaml) as krew-release-bot does, and checks
the result against krew's manifest rules.

krew-release-bot (rajatjindal/krew-release-bot pkg/source/template.go @ c970b8a, v0.0.51)
executes the template with the release's tag as `.TagName`; `addURIAndSha "URL" .TagName`
renders URL (itself a template of the tag) and downloads it to write `uri: URL` and, on the
next line, `sha256: <its sum>`. Here each URL's archive is a local file (--archive
NAME=FILE, NAME the URL's last path element), so that the manifest a release would get is
rendered before the release exists.

The rules are krew's (kubernetes-sigs/krew internal/index/validation/validate.go and
pkg/index/types.go @ db921d5), written as a JSON Schema (e2e-tests/krew/plugin.schema.json)
plus what a schema cannot say: the name is the file's, and a version is a semantic version
with a leading v.

usage: krew-manifest.py TEMPLATE TAG --archive NAME=FILE... [--output FILE]
"""

import argparse
import hashlib
import json
import pathlib
import re
import sys

import jsonschema
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "e2e-tests/krew/plugin.schema.json"
# krew's semver (internal/installation/semver): vMAJOR.MINOR.PATCH[-pre][+build].
SEMVER = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
WINDOWS_FORBIDDEN = {"CON", "PRN", "AUX", "NUL"} | {f"COM{i}" for i in range(1, 10)} | {f"LPT{i}" for i in range(1, 10)}


def render(template, tag, archives):
    def uri_and_sha(match):
        url = match.group(1).replace("{{ .TagName }}", tag).replace("{{.TagName}}", tag)
        name = url.rsplit("/", 1)[-1]
        if name not in archives:
            raise SystemExit(f"krew-manifest: no --archive for {name} ({url})")
        digest = hashlib.sha256(pathlib.Path(archives[name]).read_bytes()).hexdigest()
        return f"uri: {url}\n    sha256: {digest}"
    text = re.sub(r'\{\{\s*addURIAndSha\s+"([^"]+)"\s+\.TagName\s*\}\}', uri_and_sha, template)
    text = re.sub(r"\{\{\s*\.TagName\s*\}\}", tag, text)
    if "{{" in text:
        raise SystemExit("krew-manifest: a template action krew-release-bot has is left: "
                         + text[text.index("{{"):].split("\n")[0])
    return text


def check(manifest, name):
    """krew's rules; the list of what breaks them (empty: valid)."""
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    if isinstance(spec, dict) and isinstance(spec.get("version"), (int, float)):
        # krew decodes into a Go string field: `version: 1.0` is the string "1.0" there.
        spec["version"] = str(spec["version"])
    errors = [f"{'.'.join(map(str, e.absolute_path)) or 'manifest'}: {e.message}"
              for e in jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).iter_errors(manifest)]
    metadata = manifest.get("metadata") or {}
    if metadata.get("name") != name:
        errors.append(f"plugin should be named {name!r}, not {metadata.get('name')!r}")
    if name.upper() in WINDOWS_FORBIDDEN or not re.fullmatch(r"[\w-]+", name):
        errors.append(f"the plugin name {name!r} is not allowed")
    version = (manifest.get("spec") or {}).get("version", "")
    if not SEMVER.match(str(version)):
        errors.append(f"version {version!r} is not a semantic version with a leading v")
    return errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("template")
    parser.add_argument("tag")
    parser.add_argument("--archive", action="append", default=[], metavar="NAME=FILE")
    parser.add_argument("--name", default="single-owner", help="the plugin's name (its index file's)")
    parser.add_argument("--output")
    args = parser.parse_args()
    archives = dict(a.split("=", 1) for a in args.archive)
    text = render(pathlib.Path(args.template).read_text(), args.tag, archives)
    errors = check(yaml.safe_load(text), args.name)
    if args.output:
        pathlib.Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    for e in errors:
        print(f"krew-manifest: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
