#!/usr/bin/env bash
# An induction head you can see (docs/inspecting.md): makes a corpus of repeated spans from Tiny
# Shakespeare (tools/induction_corpus.py), trains configs/induction_head.json on it, a fixed number
# of iterations so that the result is the same bits on any machine load, and prints `gpt heads`'
# table; its HTML report beside the checkpoint (heads.html), and the same without the text's heatmaps
# (induction_test.html: the scores and the induction test, what docs/images/induction_head.png shows).
#   tools/induction_head.sh [SEED] [FLAGS...]      SEED (default 1337) seeds training and corpus
#   tools/induction_head.sh 1338 --threads 1       FLAGS override the config's keys
set -euo pipefail
cd "$(dirname "$0")/.."
seed=${1:-1337}
shift || true
gpt=${GPT_BINARY:-build/gpt}
out=out/induction_head
[[ $seed == 1337 ]] || out=$out-$seed
mkdir -p "$out"
[[ -x $gpt ]] || { echo "error: $gpt not found; build it first (docs/development.md)" >&2; exit 1; }
tools/fetch_shakespeare.sh
/usr/bin/env python3 tools/induction_corpus.py data/tinyshakespeare.txt "$out/corpus.txt" --seed "$seed"
"$gpt" train --config configs/induction_head.json --data_path "$out/corpus.txt" --out_dir "$out" --seed "$seed" "$@"
"$gpt" heads --out_dir "$out" --report "$out/heads.html"
sed '/<h2>Attention on the prompt<\/h2>/,/<h2>Induction test<\/h2>/{/<h2>Induction test<\/h2>/!d}' \
  "$out/heads.html" > "$out/induction_test.html"
echo "reports: $out/heads.html, $out/induction_test.html"
