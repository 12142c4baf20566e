#!/usr/bin/env bash
# What each modern key buys: trains configs/shakespeare_char_modern.json (dropout 0) and, one at a
# time, the same with one key turned back to GPT-2's value (and once with all of them), each for
# ITERS iterations (default 1000) on 1 thread, and prints a Markdown row per run with the whole
# validation split's loss (tools/search_10min.sh). By iterations, so the results are the same bits
# under any load: the runs may share the machine.
#   tools/ablate_modern.sh [ITERS] [SEED] [NAME ...]      default 1000 1337, every ablation
#   tools/ablate_modern.sh 1000 1 no-muon no-rope          two ablations, seed 1
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-1000}
seed=${2:-1337}
shift 2 || shift $#
declare -A gpt2=(
  [no-rmsnorm]="--norm layernorm" [gelu]="--mlp gelu" [no-rope]="--pos_encoding learned" [no-qknorm]="--qk_norm false"
  [tied]="--tie_embeddings true" [no-softcap]="--logit_softcap 0" [no-muon]="--optimizer adamw")
names=("${@:-modern gpt2 no-muon no-rope gelu no-qknorm no-rmsnorm tied no-softcap}")
read -r -a names <<< "${names[*]}"
common=(--dropout 0 --threads 1 --eval_interval 250)
for name in "${names[@]}"; do
  case $name in
    modern) flags=() ;;
    gpt2) read -r -a flags <<< "${gpt2[*]}" ;;
    *) read -r -a flags <<< "${gpt2[$name]:?unknown ablation $name; one of: modern gpt2 ${!gpt2[*]}}" ;;
  esac
  CONFIG=configs/shakespeare_char_modern.json ITERS=$iters WORK_DIR=${WORK_DIR:-out/ablate_modern} \
    tools/search_10min.sh "$name" "${common[*]} ${flags[*]}" "$seed"
done
