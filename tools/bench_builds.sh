#!/usr/bin/env bash
# Two builds of gpt side by side in one run, interleaved so machine drift hits both alike: training
# ms/iter of both recipes (gpt bench, median), the 10.7M bench's whole run in seconds (set-up,
# a warm-up and 2 timed iterations: start-up counts there), and sampling tokens/s (exact, --context_shift 32, 20
# samples; median of 5), on one checkpoint. Prints a Markdown table with new/old ratios. For a
# change that must not cost speed (a refactor): build the old commit elsewhere and compare.
#   tools/bench_builds.sh OLD_GPT NEW_GPT [rounds]      (rounds: interleaved repetitions, default 3)
#   BIG_ITERS=5 tools/bench_builds.sh ...              (timed 10.7M iterations per round, default 2:
#                                                       the first one after the warm-up grows the arena)
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 rounds=${3:-3} big_iters=${BIG_ITERS:-2}
tools/fetch_shakespeare.sh >/dev/null
work=out/bench_builds
mkdir -p "$work"
py=/usr/bin/python3
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ratio() { $py -c "print(f'{$1:.3f}')"; }

bench_ms() {  # binary config iters -> median ms/iter
  "$1" bench --config "configs/$2.json" --iters "$3" --warmup 1 --json --peak_gflops 1 |
    $py -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['median_ms_per_iter'])"
}
sample_tps() {  # binary args... -> tokens/s of the generation loop
  local bin=$1; shift
  "$bin" sample --out_dir "$work/model" "$@" 2>&1 >/dev/null | sed -n 's/.* tokens in .* s: \([0-9]*\) tokens\/s.*/\1/p'
}

[[ -f $work/model/model.safetensors ]] ||
  "$new" train --config configs/shakespeare_char_cpu.json --out_dir "$work/model" --max_iters 200 --eval_interval 200 --quiet

echo "date: $(date -u +%F), machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
echo
echo "| measure | old | new | new / old |"
echo "| --- | --- | --- | --- |"
declare -A results
for round in $(seq "$rounds"); do
  for which in old new; do
    bin=${!which}
    results[$which,cpu]+="$(bench_ms "$bin" shakespeare_char_cpu 20) "
    start=$(date +%s.%N)
    results[$which,big]+="$(bench_ms "$bin" shakespeare_char "$big_iters") "
    results[$which,bigrun]+="$(ratio "$(date +%s.%N) - $start") "
    for _ in 1 2; do
      results[$which,exact]+="$(sample_tps "$bin" --max_new_tokens 500) "
      results[$which,shift]+="$(sample_tps "$bin" --max_new_tokens 500 --context_shift 32) "
      results[$which,batch]+="$(sample_tps "$bin" --max_new_tokens 60 --num_samples 20) "
    done
  done
done
for key in cpu:"shakespeare_char_cpu training, ms/iter" big:"shakespeare_char (10.7M) training, ms/iter" \
           bigrun:"shakespeare_char (10.7M) gpt bench run, s (set-up, warm-up, $big_iters iterations)" \
           exact:"sampling tokens/s, 500 tokens, exact" shift:"sampling tokens/s, 500 tokens, --context_shift 32" \
           batch:"sampling tokens/s, 20 samples x 60 tokens"; do
  k=${key%%:*} label=${key#*:}
  o=$(tr ' ' '\n' <<<"${results[old,$k]}" | grep . | median)
  n=$(tr ' ' '\n' <<<"${results[new,$k]}" | grep . | median)
  echo "| $label | $o | $n | $(ratio "$n/$o") |"
done
