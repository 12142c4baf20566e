#!/usr/bin/env bash
# Ours against PyTorch (nanoGPT's code, Debian's python3-torch) on this machine, measured in one
# run, and our GEMM against OpenBLAS and against PyTorch's bfloat16 torch.matmul (oneDNN: AMX
# where the CPU has it). Prints a Markdown table with ratios (as in
# docs/benchmarks.md). Needs root for the first apt-get of python3-torch and libopenblas-dev.
#   tools/bench_vs_torch.sh [--quick]     --quick skips the full CPU-recipe runs (about 6 minutes)
#   tools/bench_vs_torch.sh --training    only the training rows (float32 and bfloat16) and the GEMMs
#   tools/bench_vs_torch.sh --gemm        only the GEMMs
# The peers run without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (tools/peer_env.sh); the output
# names the OpenBLAS kernels they ran.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/peer_env.sh
quick=${1:-}
tools/install_deps.sh python3-torch python3-numpy libopenblas-dev >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target gpt >&2
tools/fetch_shakespeare.sh >&2
gpt=build/gpt
work=out/bench_vs_torch
mkdir -p "$work"
py=/usr/bin/python3
json() { $py -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d$1)"; }
ratio() { $py -c "print(f'{$1:.2f}x')"; }

# PyTorch's best thread setting: 1 thread, or 2 with OMP_WAIT_POLICY=PASSIVE (its default 2-thread
# spin-waiting is much slower on 2 cores). Prints the better JSON line.
torch_best() {
  local a b
  a=$(peer "$py" "$@" --threads 1)
  b=$(peer OMP_WAIT_POLICY=PASSIVE "$py" "$@" --threads 2)
  $py - "$a" "$b" <<'PY'
import json, sys
a, b = (json.loads(x.strip().splitlines()[-1]) for x in sys.argv[1:3])
key = 'tokens_per_s'
print(json.dumps(a if a[key] >= b[key] else b))
PY
}

echo "date: $(date -u +%F), machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
echo "peers: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset; PyTorch's OpenBLAS kernels: $(peer $py -c 'import sys, torch; sys.path.insert(0, "tools"); from blas_core import openblas_core; print(openblas_core())')"
echo "gpt kernel: $($gpt bench --config configs/shakespeare_char_cpu.json --iters 1 --warmup 0 --json --peak_gflops 1 | json "['kernel']")"
peak=$($gpt bench --config configs/shakespeare_char_cpu.json --iters 1 --warmup 0 --json | json "['peak_gflops']")
configs=(shakespeare_char_cpu:20 shakespeare_char:3)
if [[ $quick == --gemm ]]; then
  configs=()
else
  printf '\n| measure | gpt | PyTorch | ratio |\n| --- | --- | --- | --- |\n'
fi
for cfg in "${configs[@]}"; do
  name=${cfg%%:*}; iters=${cfg##*:}
  ours=$($gpt bench --config "configs/$name.json" --iters "$iters" --warmup 1 --json --peak_gflops "$peak")
  theirs=$(torch_best tools/nanogpt_train.py "configs/$name.json" --no_eval --max_iters "$iters" --json)
  o_tps=$(echo "$ours" | json "['tokens_per_s']"); t_tps=$(echo "$theirs" | json "['tokens_per_s']")
  o_rss=$(echo "$ours" | json "['peak_rss_mib']"); t_rss=$(echo "$theirs" | json "['peak_rss_mib']")
  mfu=$(echo "$ours" | json "['mfu']*100")
  echo "| $name training tokens/s (median; gpt MFU $(printf %.0f "$mfu")% of ${peak%.*} GFLOP/s; PyTorch $(echo "$theirs" | json "['threads']") thread(s)) | $(printf %.0f "$o_tps") | $(printf %.0f "$t_tps") | $(ratio "$o_tps/$t_tps") |"
  echo "| $name peak RSS MiB | $(printf %.0f "$o_rss") | $(printf %.0f "$t_rss") | $(ratio "$o_rss/$t_rss") |"
  if [[ $name == shakespeare_char ]]; then
    one=$($gpt bench --config "configs/$name.json" --iters "$iters" --warmup 1 --json --peak_gflops "$peak" --threads 1)
    o1_tps=$(echo "$one" | json "['tokens_per_s']")
    echo "| $name training tokens/s, gpt on 2 threads against gpt on 1 thread | $(printf %.0f "$o_tps") | $(printf %.0f "$o1_tps") (gpt, 1 thread) | $(ratio "$o_tps/$o1_tps") |"
  fi
  # dtype bfloat16: ours against our float32 (above) and against PyTorch's CPU autocast.
  ours16=$($gpt bench --config "configs/$name.json" --iters "$iters" --warmup 1 --json --dtype bfloat16)
  theirs16=$(torch_best tools/nanogpt_train.py "configs/$name.json" --no_eval --max_iters "$iters" --json --dtype bfloat16)
  o16_tps=$(echo "$ours16" | json "['tokens_per_s']"); t16_tps=$(echo "$theirs16" | json "['tokens_per_s']")
  kernel16=$(echo "$ours16" | json "['kernel']"); mfu16=$(echo "$ours16" | json "['mfu']*100")
  peak16=$(echo "$ours16" | json "['peak_gflops']")
  echo "| $name bfloat16 training tokens/s, gpt bfloat16 ($kernel16 kernel, MFU $(printf %.0f "$mfu16")% of ${peak16%.*} GFLOP/s) against gpt float32 | $(printf %.0f "$o16_tps") | $(printf %.0f "$o_tps") (gpt float32) | $(ratio "$o16_tps/$o_tps") |"
  echo "| $name bfloat16 training tokens/s, gpt bfloat16 against PyTorch bfloat16 autocast ($(echo "$theirs16" | json "['threads']") thread(s)) | $(printf %.0f "$o16_tps") | $(printf %.0f "$t16_tps") | $(ratio "$o16_tps/$t16_tps") |"
  echo "| $name PyTorch bfloat16 autocast against PyTorch float32 | | $(printf %.0f "$t16_tps") / $(printf %.0f "$t_tps") | $(ratio "$t16_tps/$t_tps") |"
done

if [[ $quick != --training && $quick != --gemm ]]; then
ckpt=$work/sample_model
if [[ ! -f $ckpt/model.safetensors ]]; then
  $gpt train --config configs/shakespeare_char_cpu.json --out_dir "$ckpt" --max_iters 200 --eval_interval 200 --quiet
fi
for mode in "exact:500:1:0" "shift:500:1:32" "fits:60:20:0"; do
  IFS=: read -r label n samples shift <<<"$mode"
  # Tokens/s of the generation loop as gpt logs it (model loading excluded, as the PyTorch script
  # excludes its own); the median of three runs.
  o_tps=$(for _ in 1 2 3; do
    $gpt sample --out_dir "$ckpt" --max_new_tokens "$n" --num_samples "$samples" --context_shift "$shift" 2>&1 >/dev/null |
      sed -n 's/.* tokens in .* s: \([0-9]*\) tokens\/s.*/\1/p'
  done | sort -n | sed -n 2p)
  theirs=$(torch_best tools/nanogpt_sample.py "$ckpt/model.safetensors" --max_new_tokens "$n" --num_samples "$samples")
  t_tps=$(echo "$theirs" | json "['tokens_per_s']")
  case $label in
    exact) what="sampling tokens/s, 500 new tokens, exact mode" ;;
    shift) what="sampling tokens/s, 500 new tokens, --context_shift 32 (PyTorch: exact)" ;;
    fits) what="sampling tokens/s, 20 samples x 60 tokens (fits in block_size)" ;;
  esac
  echo "| $what | $(printf %.0f "$o_tps") | $(printf %.0f "$t_tps") | $(ratio "$o_tps/$t_tps") |"
done

fi

if [[ $quick == "" ]]; then
  start=$(date +%s.%N)
  $gpt train --config configs/shakespeare_char_cpu.json --out_dir "$work/full_gpt" --quiet
  o_wall=$($py -c "print($(date +%s.%N)-$start)")
  o_val=$(grep -h '"type":"eval"' "$work/full_gpt/metrics.jsonl" | tail -1 | json "['val_loss']")
  theirs=$(peer OMP_WAIT_POLICY=PASSIVE $py tools/nanogpt_train.py configs/shakespeare_char_cpu.json --threads 2 --json)
  t_wall=$(echo "$theirs" | json "['wall_seconds']"); t_val=$(echo "$theirs" | json "['final_val_loss']")
  echo "| shakespeare_char_cpu full run (2000 iterations with evals), wall s | $(printf %.0f "$o_wall") | $(printf %.0f "$t_wall") | $(ratio "$o_wall/$t_wall") |"
  echo "| shakespeare_char_cpu final val loss (eval_iters 20) | $(printf %.4f "$o_val") | $(printf %.4f "$t_val") | |"
fi

echo
echo "GEMM, ours vs OpenBLAS cblas_sgemm, and ours with bfloat16 inputs against the measured peak of the instruction its kernel runs on (VDPBF16PS, or FMA) ($(nproc) threads, GFLOP/s):"
echo
echo "| shape | M x N x K | gpt | OpenBLAS | gpt / OpenBLAS | gpt bfloat16 (kernel) | bfloat16 / its peak | VDPBF16PS kernel / its peak | PyTorch bfloat16 torch.matmul | gpt bfloat16 / PyTorch bfloat16 |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
cmake --build build -j "$(nproc)" --target gemm_bench >&2
peer OPENBLAS_NUM_THREADS="$(nproc)" build/gemm_bench | peer $py tools/torch_matmul_bench.py | $py tools/gemm_table.py
