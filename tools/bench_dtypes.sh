#!/usr/bin/env bash
# bfloat16 against float32 training speed, measured in alternating rounds (float32, bfloat16,
# float32, ...) so that a shared machine's drift hits both alike: per round the two medians
# (`gpt bench`) and their ratio, then the median ratio. Prints Markdown.
#   tools/bench_dtypes.sh CONFIG [ROUNDS] [ITERS]
#   tools/bench_dtypes.sh shakespeare_char 5 3
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: tools/bench_dtypes.sh CONFIG [ROUNDS] [ITERS]}
rounds=${2:-5}
iters=${3:-10}
gpt=${GPT_BINARY:-build/gpt}
tools/fetch_shakespeare.sh >/dev/null
tps() { "$gpt" bench --config "configs/$name.json" --iters "$iters" --warmup 1 --json --dtype "$1" |
  python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['tokens_per_s'])"; }
echo "$name, $iters timed iterations per measurement, $(date -u '+%F %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) threads"
echo
echo "| round | float32 tokens/s | bfloat16 tokens/s | bfloat16 / float32 |"
echo "| --- | --- | --- | --- |"
ratios=()
for round in $(seq 1 "$rounds"); do
  f=$(tps float32); b=$(tps bfloat16)
  r=$(python3 -c "print(f'{$b / $f:.2f}')")
  ratios+=("$r")
  printf '| %d | %.0f | %.0f | %sx |\n' "$round" "$f" "$b" "$r"
done
joined=$(IFS=,; echo "${ratios[*]}")
python3 -c "import statistics; print(f'| median | | | {statistics.median([$joined]):.2f}x |')"
