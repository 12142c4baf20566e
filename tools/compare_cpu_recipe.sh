#!/usr/bin/env bash
# Trains configs/shakespeare_char_cpu.json with gpt and with nanoGPT's loop in PyTorch
# (tools/nanogpt_train.py, Debian's python3-torch) for each seed given, then evaluates every
# final model with `gpt eval` on the whole validation split (the last 10% of the corpus), so
# the comparison is free of the 20-batch eval noise. Prints one line per run and the means.
#   tools/compare_cpu_recipe.sh [SEED ...]        (default: 1337 1 2)
#   ENGINES=gpt tools/compare_cpu_recipe.sh       only our side (PyTorch's does not change with our code)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/peer_env.sh
seeds=("${@:-1337}")
[[ $# -eq 0 ]] && seeds=(1337 1 2)
gpt=${GPT_BINARY:-build/gpt}
work=${WORK_DIR:-out/compare_cpu_recipe}
mkdir -p "$work"
tools/install_deps.sh python3-torch python3-numpy >&2
tools/fetch_shakespeare.sh >/dev/null
/usr/bin/python3 - "$work/val.txt" <<'PY'
import sys
text = open('data/tinyshakespeare.txt', encoding='utf-8').read()
open(sys.argv[1], 'w', encoding='utf-8').write(text[int(len(text) * 0.9):])
PY
printf '%-8s %-6s %-14s %-14s %-10s\n' engine seed "eval-batches" "full-val" "wall-s"
for seed in "${seeds[@]}"; do
  start=$(date +%s.%N)
  "$gpt" train --config configs/shakespeare_char_cpu.json --seed "$seed" --out_dir "$work/gpt-$seed" --threads 2 \
    > "$work/gpt-$seed.log" 2>&1
  wall=$(python3 -c "print($(date +%s.%N) - $start)")
  est=$(grep "step 2000:" "$work/gpt-$seed.log" | sed 's/.*val loss \([0-9.]*\).*/\1/')
  full=$("$gpt" eval --out_dir "$work/gpt-$seed" --data "$work/val.txt" --json | sed 's/.*"loss":\([0-9.]*\).*/\1/')
  printf '%-8s %-6s %-14s %-14.4f %-10.1f\n' gpt "$seed" "$est" "$full" "$wall"
  [[ ${ENGINES:-gpt,pytorch} == *pytorch* ]] || continue
  start=$(date +%s.%N)
  peer OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/nanogpt_train.py configs/shakespeare_char_cpu.json --threads 2 \
    --seed "$seed" --save "$work/torch-$seed.safetensors" > "$work/torch-$seed.log" 2>&1
  wall=$(python3 -c "print($(date +%s.%N) - $start)")
  est=$(grep "step 2000:" "$work/torch-$seed.log" | sed 's/.*val loss \([0-9.]*\).*/\1/')
  full=$("$gpt" eval --checkpoint "$work/torch-$seed.safetensors" --data "$work/val.txt" --json | sed 's/.*"loss":\([0-9.]*\).*/\1/')
  printf '%-8s %-6s %-14s %-14.4f %-10.1f\n' pytorch "$seed" "$est" "$full" "$wall"
done
