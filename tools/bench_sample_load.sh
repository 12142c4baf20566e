#!/usr/bin/env bash
# `gpt sample`'s speed on an idle machine and on one whose cores other processes also want: for
# each binary and thread count, the median characters/s (start-up included) of R samples of N new
# characters, first with the machine otherwise idle, then with B busy-looping processes beside it
# (default: one per core, as a parallel build or another training would). Rounds alternate the
# binaries, so two builds are compared side by side (docs/benchmarks.md#sampling-on-a-busy-machine).
#   tools/bench_sample_load.sh [--out_dir out/quickstart] [--tokens 2000] [--rounds 3] [--busy B]
#                              [--threads "1 2"] [BINARY ...]        (default binary: build/gpt)
# Trains configs/quickstart.json first if out/quickstart is missing. The busy processes are
# killed on exit and each lives at most 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: tools/bench_sample_load.sh [--out_dir DIR] [--tokens N] [--rounds R] [--busy B] [--threads \"1 2\"] [BINARY ...]"
out_dir=out/quickstart tokens=2000 rounds=3 busy=$(nproc) threads="1 2" binaries=()
while (($#)); do
  case $1 in
    --out_dir) out_dir=${2:?$usage}; shift 2 ;;
    --tokens) tokens=${2:?$usage}; shift 2 ;;
    --rounds) rounds=${2:?$usage}; shift 2 ;;
    --busy) busy=${2:?$usage}; shift 2 ;;
    --threads) threads=${2:?$usage}; shift 2 ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *) binaries+=("$(realpath "$1")"); shift ;;
  esac
done
((${#binaries[@]})) || binaries=("$(realpath build/gpt)")
for n in "$tokens" "$rounds" "$busy"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "error: --tokens, --rounds and --busy take whole numbers, not '$n'" >&2; exit 2; }
done
for gpt in "${binaries[@]}"; do [[ -x $gpt ]] || { echo "error: $gpt not found; build it first" >&2; exit 1; }; done

if [[ ! -f $out_dir/model.safetensors ]]; then
  [[ $out_dir == out/quickstart ]] || { echo "error: no $out_dir/model.safetensors" >&2; exit 1; }
  tools/fetch_shakespeare.sh
  "${binaries[0]}" train --config configs/quickstart.json --quiet
fi

busy_pids=()
stop_busy() {
  if ((${#busy_pids[@]})); then
    kill "${busy_pids[@]}" 2>/dev/null || true
    wait "${busy_pids[@]}" 2>/dev/null || true
  fi
  busy_pids=()
}
trap stop_busy EXIT

# Characters/s of one sample (the prompt is one character; every sample draws `tokens` new ones).
rate() {
  local start end
  start=$(date +%s.%N)
  "$1" sample --out_dir "$out_dir" --prompt "R" --max_new_tokens "$tokens" --seed "$3" --threads "$2" --quiet >/dev/null
  end=$(date +%s.%N)
  echo "$tokens $start $end" | awk '{ printf "%.0f", $1 / ($3 - $2) }'
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A results
measure() {  # $1: idle or busy
  for ((round = 1; round <= rounds; round++)); do
    for gpt in "${binaries[@]}"; do
      for t in $threads; do results[$1,$gpt,$t]+="$(rate "$gpt" "$t" "$round") "; done
    done
  done
}
measure idle
for ((i = 0; i < busy; i++)); do
  timeout 600 bash -c 'while :; do :; done' &
  busy_pids+=($!)
done
measure busy
stop_busy

echo "gpt sample, $tokens characters from $out_dir, median of $rounds (start-up included); busy: $busy" \
  "busy-looping processes on $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| binary | threads | characters/s idle | characters/s busy | busy / idle |"
echo "| --- | --- | --- | --- | --- |"
for gpt in "${binaries[@]}"; do
  for t in $threads; do
    idle=$(median <<< "${results[idle,$gpt,$t]}") loaded=$(median <<< "${results[busy,$gpt,$t]}")
    echo "| $gpt | $t | $idle | $loaded | $(awk -v a="$loaded" -v b="$idle" 'BEGIN { printf "%.2f", a / b }') |"
  done
done
