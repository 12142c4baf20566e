#!/usr/bin/env bash
# What a machine with AMX has to confirm, in one command (docs/benchmarks.md#amx-amx-bf16): the
# CPU's flags; that Linux grants the tile state (the automatic bfloat16 kernel is then amx-bf16);
# the tests of the tiles family running on the hardware, not skipped; and the tiles arithmetic
# against the sequential one and float32 on both recipes, alternating, medians. Without AMX it says
# so and stops (exit 0); with AMX flags but no usable tiles, or a failing or skipped test, exit 1.
#   tools/amx_check.sh [ROUNDS]       rounds of the alternating runs (default 3)
#   TORCH=1 tools/amx_check.sh        then tools/bench_vs_torch.sh --training (against PyTorch)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: tools/amx_check.sh [ROUNDS], ROUNDS a positive number" >&2; exit 2; }

flags=$(grep -o -w -E 'amx_tile|amx_bf16|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ' || true)
echo "date: $(date -u '+%F %H:%M') UTC, machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
echo "CPU flags: ${flags:-none of amx_tile, amx_bf16, avx512_bf16}"
if [[ $flags != *amx_bf16* || $flags != *amx_tile* ]]; then
  echo "no AMX on this CPU: nothing to check here (the tiles family is tested through its emulation by ctest)"
  exit 0
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
tools/fetch_shakespeare.sh >/dev/null

bench() {  # bench CONFIG ITERS DTYPE ARITHMETIC: one JSON line (gpt's log and errors go to stderr)
  build/gpt bench --config "$1" --iters "$2" --dtype "$3" --bf16_arithmetic "$4" --json | tail -1
}
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

kernel=$(field "$(bench configs/shakespeare_char_cpu.json 1 bfloat16 auto)" kernel)
echo "automatic bfloat16 kernel: $kernel"
if [[ $kernel != amx-bf16 ]]; then
  echo "FAIL: the CPU shows AMX but the automatic choice is $kernel: Linux did not grant the tile state" \
    "(arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), or AVX512_BF16 is hidden"
  exit 1
fi

echo "tests of the tiles arithmetic and the bfloat16 kernels:"
log=$(cd build && ctest -R 'GemmTiles|GemmBfloat16|Tiles|Gemm\.KernelLists' --no-tests=error --output-on-failure 2>&1) || {
  echo "$log"
  echo "FAIL: a test failed (or none ran: is build/ configured without tests?)"
  exit 1
}
echo "$log" | grep -E 'tests passed|Skipped' || true
if grep -q 'Skipped' <<<"$log"; then
  echo "FAIL: a test was skipped on a machine that has AMX"
  exit 1
fi

# tokens/s of each setting, alternating, then the medians and the ratios to float32.
compare() {  # compare CONFIG ITERS
  local config=$1 iters=$2
  declare -A runs=()
  for ((r = 0; r < rounds; r++)); do
    for setting in "float32 auto" "bfloat16 sequential" "bfloat16 tiles"; do
      read -r dtype arithmetic <<<"$setting"
      runs[$setting]+="$(field "$(bench "$config" "$iters" "$dtype" "$arithmetic")" tokens_per_s) "
    done
  done
  python3 - "$config" "${runs[float32 auto]}" "${runs[bfloat16 sequential]}" "${runs[bfloat16 tiles]}" <<'PY'
import statistics, sys
config, *columns = sys.argv[1:]
medians = [statistics.median(float(x) for x in c.split()) for c in columns]
names = ["float32", "bfloat16 sequential", "bfloat16 tiles (AMX)"]
for name, m in zip(names, medians):
    print(f"| {config} | {name} | {m:.0f} | {m / medians[0]:.2f}x |")
PY
}
echo
echo "| config | products | tokens/s (median of $rounds alternating rounds) | against float32 |"
echo "| --- | --- | --- | --- |"
compare configs/shakespeare_char_cpu.json 50
compare configs/shakespeare_char.json 3

if [[ ${TORCH:-} == 1 ]]; then
  echo
  tools/bench_vs_torch.sh --training
fi
