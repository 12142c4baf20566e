#!/usr/bin/env bash
# Peak resident memory of each process of a short 10.7M-recipe run that saves a checkpoint: one
# process, then two under mpirun with the optimizer state replicated (zero_stage 0) and sharded
# (zero_stage 1). Small batches (2 x 256 tokens, 2 micro-batches), so the weights, gradients and
# optimizer state dominate: the figures in docs/distributed.md.
#   tools/zero_memory.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
gpt=${1:-build}/gpt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -f data/tinyshakespeare.txt ]] || tools/fetch_shakespeare.sh
flags=(--config configs/shakespeare_char.json --batch_size 2 --gradient_accumulation_steps 2 --max_iters 2
       --eval_interval 2 --eval_iters 1 --threads 1 --quiet)
peak() {  # peak RSS in MiB of each rank, from GNU time's %M (KiB)
  sort "$1" | awk '/^rank [0-9]+ peak_kib / { printf " rank %s %.0f", $2, $4 / 1024 }'
}
timed() {  # the command under GNU time, its line naming the rank (Open MPI's variable; 0 alone)
  exec /usr/bin/time -f "rank ${OMPI_COMM_WORLD_RANK:-0} peak_kib %M" "$@"
}
export -f timed
bash -c 'timed "$@"' _ "$gpt" train "${flags[@]}" --out_dir "$work/one" 2>"$work/one.log"
echo "1 process:                 peak RSS (MiB):$(peak "$work/one.log")"
for stage in 0 1; do
  mpirun --allow-run-as-root --oversubscribe -np 2 bash -c 'timed "$@"' _ "$gpt" train "${flags[@]}" \
    --zero_stage "$stage" --out_dir "$work/two$stage" 2>"$work/two$stage.log"
  echo "2 processes, zero_stage $stage: peak RSS (MiB):$(peak "$work/two$stage.log")"
done
