#!/usr/bin/env bats
# The documentation's statements about the lifecycle corpus (e2e-tests/corpus/), against the
# corpus itself: docs/corpus.md's listing of every write is what the corpus holds, and README's
# summary of what each preset was run against names the presets and counts the writes that
# e2e-tests/corpus.bats runs. And every page README links exists.

load common

CORPUS_DOC="$ROOT/docs/corpus.md"

# render_corpus: the listing docs/corpus.md holds between its markers, from the corpus files
# (corpus.py's own reading of them, and its cases: which preset runs which write).
render_corpus() {
  python3 - "$ROOT/e2e-tests/corpus" "$BATS_TEST_TMPDIR/cases" <<'EOF'
import collections, sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, sys.argv[1])
import corpus

tools, presets = corpus.load_tools(), corpus.load_presets()
corpus.check(tools, presets)
corpus.build(tools, presets, sys.argv[2])
cases = [line.split("\t") for line in open(f"{sys.argv[2]}/cases.tsv").read().splitlines()]


def cell(text):
    # One line; a pipe is not a column, and <app> is text, not HTML.
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


out = ["_Generated from `e2e-tests/corpus/` (`e2e-tests/docs.bats` checks it is current; "
       "`DOCS_WRITE=1 bats e2e-tests/docs.bats` rewrites it)._", "",
       "### Per preset", "",
       "| preset | covers | its tools' writes | other tools' writes |", "|---|---|---|---|"]
for m, p in presets.items():
    count = collections.Counter()
    for preset, tool, _, _, _, expect in cases:
        if preset == m:
            count[(tool in p["covers"], expect)] += 1
    covers = ", ".join(f"`{t}`" for t in p["covers"])
    assumes = "; ".join(f"{t} as {', '.join(a)}" for t, a in p.get("assumes", {}).items())
    own = f"{count[(True, 'accept')]} accepted, {count[(True, 'refuse')]} refused"
    other = f"{count[(False, 'accept')]} accepted, {count[(False, 'refuse')]} refused"
    out.append(f"| `{m}` | {covers}{f' (assumes {assumes})' if assumes else ''} | {own} | {other} |")
for tool, (path, doc) in tools.items():
    covering = [m for m, p in presets.items() if tool in p["covers"]]
    out += ["", f"### {cell(doc['title'])} (`{tool}`)", "",
            f"`e2e-tests/corpus/{path.name}`: {cell(doc['versions'])} Covered by "
            + ", ".join(f"`{m}`" for m in covering) + ".", "",
            "| write | step | answer | source |", "|---|---|---|---|"]
    for w in doc["writes"]:
        answer = ("accepted" if w["expect"] == "accept" else
                  "refused by " + ", ".join(f"`{m}`" for m in w["refused_by"]))
        if w.get("as"):
            answer += f" (identity: {w['as']})"
        out.append(f"| `{w['name']}` | {cell(w['step'])} | {answer} | {cell(w['source'])} |")
print("\n".join(out))
EOF
}

# section FILE NAME: the lines between <!-- NAME:begin --> and <!-- NAME:end -->.
section() {
  sed -n "/^<!-- $2:begin -->\$/,/^<!-- $2:end -->\$/p" "$1" | sed '1d;$d'
}

@test "docs/corpus.md lists every write of the lifecycle corpus, as the corpus holds it" {
  render_corpus >"$BATS_TEST_TMPDIR/listing.md"
  grep -q '^<!-- corpus:begin -->$' "$CORPUS_DOC" && grep -q '^<!-- corpus:end -->$' "$CORPUS_DOC" ||
    fail "docs/corpus.md lacks its corpus markers"
  if [ "${DOCS_WRITE:-}" = 1 ]; then
    python3 - "$CORPUS_DOC" "$BATS_TEST_TMPDIR/listing.md" <<'EOF'
import pathlib, sys
doc, listing = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).read_text()
head, rest = doc.read_text().split("<!-- corpus:begin -->\n")
_, tail = rest.split("<!-- corpus:end -->")
doc.write_text(f"{head}<!-- corpus:begin -->\n{listing}<!-- corpus:end -->{tail}")
EOF
  fi
  diff -u <(section "$CORPUS_DOC" corpus) "$BATS_TEST_TMPDIR/listing.md" ||
    fail "docs/corpus.md's listing is not the corpus: DOCS_WRITE=1 bats e2e-tests/docs.bats rewrites it"
}

@test "README's summary of the corpus names, per tool, the presets that cover it and the writes each was run against" {
  render_corpus >/dev/null
  local cases="$BATS_TEST_TMPDIR/cases/cases.tsv" rows=0 row tool preset accepted refused listed expected
  while IFS= read -r row; do
    rows=$((rows + 1))
    tool="$(sed -n 's/^| `\([^`]*\)`.*/\1/p' <<<"$row")"
    [ -n "$tool" ] || fail "a row of README's corpus summary does not start with a tool: $row"
    # The presets the row names, and those that cover the tool (presets.yaml).
    listed="$(grep -o '`deploy/[^`]*` ([0-9]* accepted, [0-9]* refused)' <<<"$row" | sed 's/^`\([^`]*\)`.*/\1/' | sort | tr '\n' ' ')"
    expected="$(python3 -c 'import sys, yaml
for m, p in yaml.safe_load(open(sys.argv[1]))["presets"].items():
    if sys.argv[2] in p["covers"]: print(m)' "$ROOT/e2e-tests/corpus/presets.yaml" "$tool" | sort | tr '\n' ' ')"
    assert_equal "$listed" "$expected"
    # Each count is the writes of the tool that corpus.bats runs against the preset.
    while read -r preset accepted refused; do
      assert_equal "$accepted/$refused" \
        "$(awk -F'\t' -v m="$preset" -v t="$tool" '$1 == m && $2 == t && $6 == "accept"' "$cases" | wc -l)/$(awk -F'\t' -v m="$preset" -v t="$tool" '$1 == m && $2 == t && $6 == "refuse"' "$cases" | wc -l)"
    done < <(grep -o '`deploy/[^`]*` ([0-9]* accepted, [0-9]* refused)' <<<"$row" |
      sed 's/^`\([^`]*\)` (\([0-9]*\) accepted, \([0-9]*\) refused)$/\1 \2 \3/')
  done < <(section "$ROOT/README.md" corpus-summary | grep '^| `')
  assert_equal "$rows" "$(python3 "$ROOT/e2e-tests/corpus/corpus.py" list | cut -f1 | sort -u | wc -l)"
}

@test "every page and heading README and docs/ link to exists" {
  # Links within the repository, and their anchors as GitHub makes them of headings.
  run python3 - "$ROOT" <<'EOF'
import pathlib, re, sys
root = pathlib.Path(sys.argv[1])
def anchors(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    found = set()
    for h in re.findall(r"^#+ (.*)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found
bad = []
for page in [root / "README.md"] + sorted((root / "docs").glob("*.md")):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            bad.append(f"{page.name}: {link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            bad.append(f"{page.name}: {link}: no such heading")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
  assert_success
}

@test "README.md stays a page a new user reads in minutes: at most 300 lines, the reference in docs/" {
  local lines
  lines="$(wc -l <"$ROOT/README.md")"
  [ "$lines" -le 300 ] || fail "README.md has $lines lines (at most 300): move the detail to docs/"
}
