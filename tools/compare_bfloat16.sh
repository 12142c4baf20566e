#!/usr/bin/env bash
# Quality of dtype bfloat16 against float32: trains a config both ways for each seed and
# evaluates every final model with `gpt eval` on the whole validation split (each in the dtype it
# was trained in, as gpt eval does by default). The runs' results do not depend on timing or
# load (same bits on any thread count), so this can run beside other work. Prints a Markdown
# table and the means.
#   tools/compare_bfloat16.sh CONFIG [ITERS] [SEED ...]
#   tools/compare_bfloat16.sh shakespeare_char_cpu 2000 1337 1 2
#   tools/compare_bfloat16.sh shakespeare_char 500 1337     (the 10.7M recipe cut to 500 iterations)
#   DTYPES=bfloat16 tools/compare_bfloat16.sh ...           (one side only, when the other's bits
#                                                            have not changed: its columns stay empty)
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: tools/compare_bfloat16.sh CONFIG [ITERS] [SEED ...]}
iters=${2:-}
shift 2 || shift $#
seeds=("${@:-1337}")
gpt=${GPT_BINARY:-build/gpt}
work=${WORK_DIR:-out/compare_bfloat16}
mkdir -p "$work"
tools/fetch_shakespeare.sh >/dev/null
# The split the runs train and validate on, as a prepared dataset: `gpt eval --split val` reads it.
[[ -f $work/data/meta.json ]] || "$gpt" prepare --data data/tinyshakespeare.txt --out "$work/data" --quiet >/dev/null
length=()
# Cut short: the recipe's schedule and evaluations, the model saved at the last evaluation.
[[ -n $iters ]] && length=(--max_iters "$iters" --eval_iters 20 --always_save_checkpoint true)
read -r -a dtypes <<<"${DTYPES:-float32 bfloat16}"
# One Markdown row: name, iterations, seed, then the float32 and bfloat16 losses ("" if not run).
row() {
  python3 -c "
import sys
name, ran, seed, f, b = sys.argv[1:]
cell = lambda v: f'{float(v):.4f}' if v else ''
diff = f'{float(b) - float(f):+.4f}' if f and b else ''
print(f'| {name} | {ran} | {seed} | {cell(f)} | {cell(b)} | {diff} |')" "$@"
}
echo "| config | iterations | seed | float32 val loss | bfloat16 val loss | difference |"
echo "| --- | --- | --- | --- | --- | --- |"
declare -A sum=([float32]=0 [bfloat16]=0)
for seed in "${seeds[@]}"; do
  declare -A loss=()
  for dtype in "${dtypes[@]}"; do
    out="$work/$name-$dtype-$seed"
    "$gpt" train --config "configs/$name.json" --data_path "$work/data" --seed "$seed" --dtype "$dtype" \
      --out_dir "$out" "${length[@]}" > "$out.log" 2>&1
    loss[$dtype]=$("$gpt" eval --out_dir "$out" --data "$work/data" --split val --json |
      sed 's/.*"loss":\([0-9.]*\).*/\1/')
    sum[$dtype]=$(python3 -c "print(${sum[$dtype]} + ${loss[$dtype]})")
  done
  ran=$(grep -o 'done: [0-9]* iterations' "$work/$name-${dtypes[-1]}-$seed.log" | grep -o '[0-9]\+')
  row "$name" "$ran" "$seed" "${loss[float32]:-}" "${loss[bfloat16]:-}"
done
declare -A mean=()
for dtype in "${dtypes[@]}"; do mean[$dtype]=$(python3 -c "print(${sum[$dtype]} / ${#seeds[@]})"); done
row "$name" "" "mean of ${#seeds[@]}" "${mean[float32]:-}" "${mean[bfloat16]:-}"
