#!/usr/bin/env bash
# Data-parallel training on this machine, measured in one run: the 10.7M recipe
# (configs/shakespeare_char.json, 64 x 256 tokens per iteration) as 1 process x 2 threads against
# 2 processes x 1 thread over shared memory and over TCP on loopback, with the gradient exchange's
# time and size per iteration. Prints a Markdown table. Median over the timed iterations.
#   tools/bench_mpi.sh [iterations]     (default 4; the first is not timed)
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-4}
tools/install_deps.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target gpt >&2
tools/fetch_shakespeare.sh >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gpt=build/gpt
work=out/bench_mpi
mkdir -p "$work"
py=/usr/bin/python3
# Only the timed iterations: no checkpoints, one evaluation batch at the start and the end.
common=(train --config configs/shakespeare_char.json --max_iters "$iters" --eval_interval 1000000 --eval_iters 1
        --log_interval 1)

# run NAME LAUNCHER... -- FLAGS...: trains, then prints "median_ms median_exchange_ms MB_per_iteration"
run() {
  local name=$1; shift
  local launcher=()
  while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
  shift
  rm -rf "${work:?}/$name"
  "${launcher[@]}" $gpt "${common[@]}" --out_dir "$work/$name" "$@" > "$work/$name.log" 2>&1
  $py - "$work/$name/metrics.jsonl" "$work/$name.log" <<'PY'
import json, re, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l][1:]
ms = statistics.median(r['ms_per_iter'] for r in rows)
ex = statistics.median(r.get('exchange_ms', 0.0) for r in rows)
m = re.search(r'([0-9.]+) MB exchanged', open(sys.argv[2]).read())
print(f"{ms:.0f} {ex:.1f} {m.group(1) if m else 0}")
PY
}

mpirun=(mpirun --oversubscribe --bind-to core --map-by core -np 2)
tcp=(--mca btl self,tcp --mca btl_tcp_if_include lo)
read -r base_ms _ _ < <(run one_2threads -- --threads 2)
read -r half_ms _ _ < <(run one_2threads_b32 -- --threads 2 --batch_size 32 --gradient_accumulation_steps 2)
read -r shm_ms shm_ex shm_mb < <(run two_shm "${mpirun[@]}" -- --threads 1 --batch_size 32 --gradient_accumulation_steps 2)
read -r tcp_ms tcp_ex tcp_mb < <(run two_tcp "${mpirun[@]}" "${tcp[@]}" -- --threads 1 --batch_size 32 --gradient_accumulation_steps 2)
read -r z1_ms z1_ex z1_mb < <(run two_shm_zero1 "${mpirun[@]}" -- --threads 1 --batch_size 32 --gradient_accumulation_steps 2 --zero_stage 1)

tokens=$((64 * 256))
tps() { $py -c "print(f'{$tokens / ($1 / 1000):.0f}')"; }
ratio() { $py -c "print(f'{$1:.2f}')"; }
pct() { $py -c "print(f'{100 * $1:.1f}%')"; }
echo "date: $(date -u +%F), machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, Open MPI $(mpirun --version | head -1 | awk '{print $NF}')"
echo
echo "| run (10.7M recipe, 64 x 256 tokens per iteration) | ms/iter | tokens/s | vs 1 x 2 threads | exchange ms/iter | exchange share | MB sent + received per process |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
echo "| 1 process x 2 threads, batch 64 | $base_ms | $(tps "$base_ms") | 1.00 | | | |"
echo "| 1 process x 2 threads, 2 micro-batches of 32 | $half_ms | $(tps "$half_ms") | $(ratio "$base_ms / $half_ms") | | | |"
echo "| 2 processes x 1 thread, shared memory | $shm_ms | $(tps "$shm_ms") | $(ratio "$base_ms / $shm_ms") | $shm_ex | $(pct "$shm_ex / $shm_ms") | $shm_mb |"
echo "| 2 processes x 1 thread, TCP on loopback | $tcp_ms | $(tps "$tcp_ms") | $(ratio "$base_ms / $tcp_ms") | $tcp_ex | $(pct "$tcp_ex / $tcp_ms") | $tcp_mb |"
echo "| 2 processes x 1 thread, shared memory, zero_stage 1 | $z1_ms | $(tps "$z1_ms") | $(ratio "$base_ms / $z1_ms") | $z1_ex | $(pct "$z1_ex / $z1_ms") | $z1_mb |"

# The scaling model: N machines like this one (each running the 1 x 2 threads configuration's
# compute on its share), one micro-batch per process per iteration, so each process sends and
# receives 2 (N-1)/N of the gradient's bytes G per iteration (the reduce-scatter and the gather);
# no overlap of exchange and compute, latency ignored. Compute is measured (10.7M) or scaled by
# the parameter count (100M, same tokens per iteration); G = 4 bytes per parameter.
echo
echo "Modelled efficiency, N machines (compute per step / N, plus the exchange at the link's bandwidth):"
echo
$py - "$base_ms" <<'PY'
import sys
compute_ms = float(sys.argv[1])
models = {"10.7M recipe": (10.65e6, compute_ms), "100M parameters": (100e6, compute_ms * 100e6 / 10.65e6)}
links = [10, 25, 100]
print("| model | compute per step, 1 machine | N | " + " | ".join(f"{b} Gbit/s: step, efficiency" for b in links) + " |")
print("| --- | --- | --- | " + " | ".join("---" for _ in links) + " |")
for name, (params, c_ms) in models.items():
    g_bytes = 4 * params
    for n in (2, 4, 8, 16, 64):
        cells = []
        for gbit in links:
            x_ms = 2 * (n - 1) / n * g_bytes / (gbit * 1e9 / 8) * 1e3
            step = c_ms / n + x_ms
            cells.append(f"{step / 1e3:.2f} s, {100 * (c_ms / n) / step:.0f}%")
        print(f"| {name} | {c_ms / 1e3:.1f} s | {n} | " + " | ".join(cells) + " |")
PY
