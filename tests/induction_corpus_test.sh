#!/usr/bin/env bash
# tools/induction_corpus.py holds what it claims: on a small made-up source, every segment it lists
# is a span followed by the same span, the segments tile the whole output in order, both kinds
# (random characters, source passages) occur with lengths inside the bounds, each source passage
# is really in the source, the output's characters are exactly the source's, and the same seed
# gives the same bytes while another seed does not. Python 3 standard library; about a second.
#   tests/induction_corpus_test.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A source with a line break, a tab, non-ASCII characters and a rare one ('Z' once).
"$python" - "$work/source.txt" << 'EOF'
import sys
lines = ["Ein Käfer flog über den Fluß; der Fluß war breit.", "\tNaïve café — déjà vu, 42 times!", "Z"]
open(sys.argv[1], "w", encoding="utf-8", newline="").write("\n".join(lines * 3) + "\n")
EOF
make() {  # make NAME SEED
  "$python" tools/induction_corpus.py "$work/source.txt" "$work/$1.txt" --seed "$2" --chars 20000 --min_span 3 \
    --max_span 30 --segments "$work/$1.tsv" > /dev/null
}
make a 7
make b 7
make c 8
cmp "$work/a.txt" "$work/b.txt"
if cmp -s "$work/a.txt" "$work/c.txt"; then
  echo "FAIL: seeds 7 and 8 gave the same corpus" >&2
  exit 1
fi

"$python" - "$work/source.txt" "$work/a.txt" "$work/a.tsv" << 'EOF'
import sys
source = open(sys.argv[1], encoding="utf-8", newline="").read()
out = open(sys.argv[2], encoding="utf-8", newline="").read()
rows = [line.split("\t") for line in open(sys.argv[3], encoding="utf-8").read().splitlines()]
def fail(why):
    sys.exit("FAIL: " + why)
if set(out) != set(source):
    fail(f"characters differ: {sorted(set(out) ^ set(source))}")
if len(out) < 20000:
    fail(f"{len(out)} characters, asked for at least 20000")
kinds, at = {}, 0
for offset, n, kind in rows:
    offset, n = int(offset), int(n)
    if offset != at:
        fail(f"segment at {offset} does not follow the previous one (ends at {at})")
    span, repeat = out[offset : offset + n], out[offset + n : offset + 2 * n]
    if len(repeat) != n or span != repeat:
        fail(f"segment at {offset} (length {n}, {kind}) is not a span followed by itself")
    if kind == "charset":
        if offset != 0 or span != "".join(sorted(set(source))):
            fail("the charset segment is not the sorted character set at the start")
    elif kind in ("random", "text"):
        if not 3 <= n <= 30:
            fail(f"segment at {offset} has length {n}, outside [3, 30]")
        if kind == "text" and span not in source:
            fail(f"text segment at {offset} is not a passage of the source")
    else:
        fail(f"unknown kind {kind!r}")
    kinds[kind] = kinds.get(kind, 0) + 1
    at = offset + 2 * n
if at != len(out):
    fail(f"segments end at {at}, the corpus at {len(out)}")
if kinds.get("random", 0) < 100 or kinds.get("text", 0) < 100:
    fail(f"too few of a kind: {kinds}")
# Random spans are uniform over the character set, so they are almost never source passages.
random_in_source = sum(1 for o, n, k in rows if k == "random" and int(n) >= 8 and out[int(o) : int(o) + int(n)] in source)
if random_in_source > 0:
    fail(f"{random_in_source} random spans of 8+ characters are passages of the source")
print(f"ok: {len(rows)} segments, {kinds}, {len(out)} characters")
EOF
