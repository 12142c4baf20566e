#!/usr/bin/env bash
# The modern architecture against GPT-2's at the same size, budget and dtype: trains
# configs/shakespeare_char_modern.json as it is and with every modern key turned back to GPT-2's
# (LayerNorm, GELU, learned positions, tied head, no QK-norm, no soft-cap, AdamW), side by side,
# one thread each (so each run has one core of the 2: equal wall time), then prints the validation
# loss of both against tokens seen and against seconds (tools/compare_runs.py, from the runs'
# metrics), the whole-split val loss of each final model (`gpt eval`), and writes the two runs'
# overlaid curves with `gpt report`. Run it on an otherwise idle machine: the wall-time column
# depends on it.
#   tools/compare_modern.sh [SEED] [BUDGET]      default 1337, 10m
set -euo pipefail
cd "$(dirname "$0")/.."
seed=${1:-1337}
budget=${2:-10m}
gpt=${GPT_BINARY:-build/gpt}
work=${WORK_DIR:-out/compare_modern}
mkdir -p "$work"
tools/fetch_shakespeare.sh >/dev/null
[[ -f $work/data/meta.json ]] || "$gpt" prepare --data data/tinyshakespeare.txt --out "$work/data" --quiet >/dev/null
gpt2=(--norm layernorm --mlp gelu --pos_encoding learned --qk_norm false --tie_embeddings true --logit_softcap 0
  --optimizer adamw)
train() {
  local name=$1
  shift
  rm -rf "${work:?}/$name"
  "$gpt" train --config configs/shakespeare_char_modern.json --data_path "$work/data" --max_time "$budget" \
    --seed "$seed" --threads 1 --out_dir "$work/$name" "$@" > "$work/$name.log" 2>&1
}
train gpt2 "${gpt2[@]}" &
train modern &
wait
for name in gpt2 modern; do
  val=$("$gpt" eval --out_dir "$work/$name" --data "$work/data" --split val --json | sed 's/.*"loss":\([0-9.]*\).*/\1/')
  echo "$name: $(grep -o 'done: [0-9]* iterations in [0-9hms]*' "$work/$name.log"), whole-split val loss $val"
done
echo
/usr/bin/python3 tools/compare_runs.py --minutes "${budget%m}" "GPT-2=$work/gpt2" "modern=$work/modern"
"$gpt" report --out_dir "$work/gpt2" --out_dir "$work/modern" --out "$work/report.html" --quiet
echo
echo "curves: $work/report.html"
