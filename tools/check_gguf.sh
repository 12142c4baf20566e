#!/usr/bin/env bash
# Checks `gpt export --format gguf` in a real llama.cpp (docs/checkpoints.md, "Running a model in
# llama.cpp"): installs node-llama-cpp (pinned; it brings llama.cpp's prebuilt CPU libraries) into a
# cache outside the repository, trains small models of every exported architecture in a temporary
# folder (gpt2 with and without biases, tied and untied, grouped-query attention, a byte vocabulary;
# llama with grouped-query attention, untied, and with biases, tied; qwen3), on an ASCII text and on
# one with multi-byte UTF-8 characters (é, —, ’), exports them, and has tools/check_gguf.mjs compare
# llama.cpp's tokenization, next-token log-probabilities and greedy text with ours. Also checks that
# a model llama.cpp cannot run is refused with the documented error and no file. ~1.5-2 minutes.
#   tools/check_gguf.sh            (GPT_BINARY=path/to/gpt to test another build)
# Exit code 0 when every check passes.
set -euo pipefail
cd "$(dirname "$0")/.."
gpt=$(realpath "${GPT_BINARY:-build/gpt}")
[[ -x $gpt ]] || { echo "error: $gpt not found; build it first (docs/development.md)" >&2; exit 1; }
start=$SECONDS
version=3.21.1
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpt/node-llama-cpp
installed=$(node -p "require('$cache/node_modules/node-llama-cpp/package.json').version" 2>/dev/null || true)
if [[ $installed != "$version" ]]; then
  mkdir -p "$cache"
  [[ -f $cache/package.json ]] || echo '{"private": true}' >"$cache/package.json"
  (cd "$cache" && npm i -E --no-audit --no-fund "node-llama-cpp@$version")
fi
export NODE_LLAMA_CPP_DIR=$cache
tools/fetch_shakespeare.sh >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 300000 data/tinyshakespeare.txt >"$work/ascii.txt"
# The same text with multi-byte characters: ’ (3 bytes) for ', — for !, é in " thé ".
sed "s/'/’/g; s/!/ —/g; s/ the / thé /g" "$work/ascii.txt" >"$work/utf8.txt"
printf 'ROMEO:\nWhat light' >"$work/ascii1.txt"
printf 'First Citizen:\nWe are accounted poor citizens; the' >"$work/ascii2.txt"
printf '\n\nKING' >"$work/ascii3.txt"
printf 'ROMEO:\nWhat light is thé sun’s —' >"$work/utf81.txt"
printf 'JULIET:\nO Romeo, Romeo —\nwherefore art' >"$work/utf82.txt"
printf 'I’ll go; thé\n' >"$work/utf83.txt"

small=(--n_layer 2 --n_head 4 --n_embd 64 --block_size 256 --dropout 0 --batch_size 8 --max_iters 200
       --lr_decay_iters 200 --warmup_iters 20 --eval_interval 200 --eval_iters 2 --learning_rate 4e-3 --seed 1 --quiet)
llama=(--pos_encoding rope --norm rmsnorm --mlp swiglu)
train() {  # name corpus flags...
  local name=$1 corpus=$2
  shift 2
  "$gpt" train --data_path "$work/$corpus.txt" --out_dir "$work/$name" "${small[@]}" "$@"
}
failures=0
# check NAME CORPUS TOLERANCE TENSOR_TYPE KV: export, our greedy text and log-probabilities, llama.cpp's.
check() {
  local name=$1 corpus=$2 tolerance=$3 type=$4 kv=$5 cases=() i
  "$gpt" export --out_dir "$work/$name" --format gguf --tensor_type "$type" --out "$work/$name-$type.gguf" --quiet
  for i in 1 2 3; do
    "$gpt" sample --out_dir "$work/$name" --prompt_file "$work/$corpus$i.txt" --temperature 0 --max_new_tokens 200 \
      --logprobs "$work/$name-$corpus$i.json" --quiet >/dev/null
    cases+=("$work/$corpus$i.txt:$work/$name-$corpus$i.json")
  done
  echo "== $name ($type weights, $kv KV cache; tolerance $tolerance)"
  node tools/check_gguf.mjs --model "$work/$name-$type.gguf" --tolerance "$tolerance" --kv "$kv" "${cases[@]}" |
    sed "s|$work/||g" || failures=$((failures + 1))
}

train gpt2_bias_tied ascii --bias true
train gpt2_untied_gqa_bytes utf8 --vocab bytes --tie_embeddings false --n_kv_head 2
train llama_gqa_untied utf8 "${llama[@]}" --n_kv_head 2 --tie_embeddings false
train llama_bias_tied ascii "${llama[@]}" --bias true --rope_theta 500
train qwen3_gqa utf8 "${llama[@]}" --qk_norm true --n_kv_head 2
echo "trained in $((SECONDS - start)) s"

# Tolerances: about twice the largest difference measured here (docs/checkpoints.md has the figures).
# gpt2: llama.cpp's GELU is the tanh approximation, looked up in a table of fp16 inputs; ours is
# erf's. The difference is what separates the numbers, and it grows with the activations' scale.
check gpt2_bias_tied ascii 1e-2 F32 f32
check gpt2_untied_gqa_bytes utf8 1e-2 F32 f32
check llama_gqa_untied utf8 1e-4 F32 f32
check llama_bias_tied ascii 1e-4 F32 f32
check qwen3_gqa utf8 1e-4 F32 f32
# llama.cpp's defaults and the smaller types, each against the F32 model's numbers.
check llama_gqa_untied utf8 1e-2 F32 f16
check llama_gqa_untied utf8 1e-2 F16 f32
check llama_gqa_untied utf8 1e-1 BF16 f32
check llama_gqa_untied utf8 2e-1 Q8_0 f32

# A model llama.cpp cannot run (configs/shakespeare_char_10min.json's architecture): refused, exit
# code 2, the blocking keys named, no file.
train refused ascii --pos_encoding rope --norm rmsnorm --mlp relu2 --qk_norm true --logit_softcap 30 --max_iters 1
set +e
message=$("$gpt" export --out_dir "$work/refused" --format gguf --out "$work/refused.gguf" 2>&1)
code=$?
set -e
echo "== refused: exit code $code"
if [[ $code != 2 || -e $work/refused.gguf || $message != *'mlp "relu2"'* || $message != *"logit_softcap"* ]] ||
  compgen -G "$work/refused.gguf*" >/dev/null; then
  echo "FAIL refusal: exit code $code, message: $message"
  failures=$((failures + 1))
fi
echo "check_gguf: $failures failing group(s), $((SECONDS - start)) s"
[[ $failures == 0 ]]
