#!/usr/bin/env bash
# The search for configs/shakespeare_char_10min.json: trains candidate configs with
# max_time 10m (one at a time, the machine otherwise idle) and measures each final model the way
# the CPU-recipe table does, `gpt eval` on the whole validation split. Prints a Markdown row per run:
# name, flags, seed, iterations, wall time, val loss of the run's model (model.safetensors: the best
# evaluation's weights, their average with ema_decay) and of the weights it ended with.
#   tools/search_10min.sh NAME "FLAGS" [SEED ...]     one candidate (flags override configs/shakespeare_char.json)
#   CONFIG=configs/shakespeare_char_10min.json tools/search_10min.sh recipe "" 1337 1 2   a config as it is
#   tools/search_10min.sh l6e192 "--n_layer 6 --n_head 6 --n_embd 192 --block_size 128 --batch_size 32" 1337
#   BUDGET=5m tools/search_10min.sh ...              a shorter budget for a first pass
#   ITERS=1850 tools/search_10min.sh ...             a first pass by iterations instead of the clock: the
#     count that fits 10 minutes on the idle machine (from a short timed probe); the result is the same
#     bits on any thread count or load, so first passes can share the machine (nice) with other work.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: tools/search_10min.sh NAME "FLAGS" [SEED ...]}
read -r -a flags <<< "${2:-}"
shift 2 || true
seeds=("${@:-1337}")
budget=${BUDGET:-10m}
gpt=${GPT_BINARY:-build/gpt}
work=${WORK_DIR:-out/search_10min}
mkdir -p "$work"
tools/fetch_shakespeare.sh > /dev/null
[[ -f $work/data/meta.json ]] || "$gpt" prepare --data data/tinyshakespeare.txt --out "$work/data" --quiet > /dev/null
loss() { "$gpt" eval "$@" --data "$work/data" --split val --json | sed 's/.*"loss":\([0-9.]*\).*/\1/'; }
for seed in "${seeds[@]}"; do
  out="$work/$name-$seed"
  rm -rf "$out"
  if [[ -n ${ITERS:-} ]]; then
    length=(--max_iters "$ITERS" --lr_decay_iters "$ITERS" --max_time "")  # no budget from CONFIG
  else
    length=(--max_time "$budget")
  fi
  "$gpt" train --config "${CONFIG:-configs/shakespeare_char.json}" --data_path "$work/data" "${length[@]}" --seed "$seed" \
    --out_dir "$out" "${flags[@]}" > "$out.log" 2>&1
  iters=$(grep -o 'done: [0-9]* iterations' "$out.log" | grep -o '[0-9]\+' || echo "?")
  wall=$(grep -o 'iterations in [0-9hms]*' "$out.log" | sed 's/iterations in //')
  # The whole validation split, every window (as the CPU-recipe table).
  val=$(loss --out_dir "$out")
  # The weights the run ended with (its resume point): with ema_decay the model is their average.
  last=$(loss --checkpoint "$out/resume.safetensors")
  echo "| $name | ${flags[*]} | $seed | $iters | $wall | $val | $last |"
done
