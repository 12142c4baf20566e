#!/usr/bin/env bash
# Throughput, latency and memory of `gpt serve` (docs/serving.md) under concurrent streaming
# clients: starts the server on 127.0.0.1 with a free port on out/quickstart (trained with
# configs/quickstart.json first if it is missing, as tools/quickstart.sh does), then for each
# concurrency C, C clients (tools/bench_serve.mjs, Node's stdlib) each loop streaming completions
# (max_tokens M, varied prompts and seeds) for D seconds. Reports per C: characters/s in all,
# characters/s per stream (median), time to first character p50/p99, errors (must be 0) and the
# server's VmRSS (first / max / last, sampled every second), as a table, or JSON lines with --json.
# Then, the server stopped, the same model's `gpt sample --num_samples C --max_new_tokens 2000` with
# the same --context_shift and threads, three times per C: its characters/s (median, start-up
# included) and the server's as a fraction of it (what issue 51 asks of the server: >= 0.9).
#   tools/bench_serve.sh [--concurrency "1 8 32"] [--seconds 60] [--max_tokens 200] [--context_shift N]
#                        [--threads N] [--max_clients N] [--max_requests 20000] [--out_dir out/quickstart] [--json]
# (GPT_BINARY=path/to/gpt to measure another build.) Takes about len(C) x D seconds plus the
# requests in flight at each deadline. Exit code 0 when no request failed.
set -euo pipefail
cd "$(dirname "$0")/.."
gpt=$(realpath "${GPT_BINARY:-build/gpt}")
[[ -x $gpt ]] || { echo "error: $gpt not found; build it first (docs/development.md)" >&2; exit 1; }
usage="usage: tools/bench_serve.sh [--concurrency \"1 8 32\"] [--seconds D] [--max_tokens M] [--context_shift N] [--threads N] [--max_clients N] [--max_requests N] [--out_dir DIR] [--json]"
concurrency="1 8 32" seconds=60 max_tokens=200 context_shift=0 max_requests=20000 out_dir=out/quickstart json=()
server_flags=() thread_flags=()
while (($#)); do
  case $1 in
    --concurrency) concurrency=${2:?$usage}; shift 2 ;;
    --seconds) seconds=${2:?$usage}; shift 2 ;;
    --max_tokens) max_tokens=${2:?$usage}; shift 2 ;;
    --context_shift) context_shift=${2:?$usage}; shift 2 ;;
    --threads) server_flags+=("$1" "${2:?$usage}"); thread_flags=("$1" "$2"); shift 2 ;;
    --max_clients) server_flags+=("$1" "${2:?$usage}"); shift 2 ;;
    --max_requests) max_requests=${2:?$usage}; shift 2 ;;
    --out_dir) out_dir=${2:?$usage}; shift 2 ;;
    --json) json=(--json); shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ $context_shift =~ ^[0-9]+$ ]] || { echo "error: --context_shift must be a whole number" >&2; exit 2; }
mode=$([[ $context_shift == 0 ]] && echo "exact" || echo "context_shift $context_shift")

if [[ ! -f $out_dir/model.safetensors ]]; then
  [[ $out_dir == out/quickstart ]] || { echo "error: no $out_dir/model.safetensors" >&2; exit 1; }
  tools/fetch_shakespeare.sh
  "$gpt" train --config configs/quickstart.json
fi

log=$(mktemp) results=$(mktemp)
server=
trap '[[ -z $server ]] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }; rm -f "$log" "$results"' EXIT
"$gpt" serve --out_dir "$out_dir" --host 127.0.0.1 --port 0 --context_shift "$context_shift" --quiet \
  "${server_flags[@]}" >"$log" 2>&1 &
server=$!
url=
for _ in $(seq 300); do
  url=$(sed -n 's|^gpt serve: \(http://127\.0\.0\.1:[0-9]*\)/ .*|\1|p' "$log")
  [[ -n $url ]] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
[[ -n $url ]] || { echo "error: gpt serve did not start:" >&2; cat "$log" >&2; exit 1; }

set +e
# The JSON lines to $results, the table (bench_serve.mjs's stderr under --json) to stdout.
node tools/bench_serve.mjs --url "$url" --pid "$server" --concurrency "$concurrency" --seconds "$seconds" \
  --max_tokens "$max_tokens" --max_requests "$max_requests" --mode "$mode" --json 3>&1 1>"$results" 2>&3
status=$?
set -e
kill -TERM "$server"
wait "$server" || { echo "error: gpt serve exited with $? on SIGTERM" >&2; status=1; }
server=
if grep -qv '^gpt serve: ' "$log"; then
  echo "server log (warnings and errors):" >&2
  grep -v '^gpt serve: ' "$log" | tail -n 20 >&2
fi
((${#json[@]})) && cat "$results"

# gpt sample's characters/s on the same model and settings, the median of three runs per C.
sample_rate() {
  local c=$1 runs=() begin end
  for _ in 1 2 3; do
    begin=$(date +%s.%N)
    "$gpt" sample --out_dir "$out_dir" --num_samples "$c" --max_new_tokens 2000 --context_shift "$context_shift" \
      "${thread_flags[@]}" --quiet >/dev/null || return 1
    end=$(date +%s.%N)
    runs+=("$(python3 -c "print($c * 2000 / ($end - $begin))")")
  done
  printf '%s\n' "${runs[@]}" | sort -g | sed -n 2p
}
echo "| C | gpt serve chars/s | gpt sample --num_samples C --max_new_tokens 2000 chars/s (median of 3) | serve / sample |"
echo "| --- | --- | --- | --- |"
for c in $concurrency; do
  served=$(python3 -c "import json,sys; print(next(r['chars_per_s'] for r in map(json.loads, open(sys.argv[1])) if r['concurrency'] == $c))" "$results")
  sampled=$(sample_rate "$c") || { echo "error: gpt sample failed" >&2; exit 1; }
  python3 -c "import sys; s, g = float(sys.argv[2]), float(sys.argv[3]); print(f'| {sys.argv[1]} | {s:,.0f} | {g:,.0f} | {s / g:.2f}x |')" "$c" "$served" "$sampled"
done
exit "$status"
