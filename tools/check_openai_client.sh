#!/usr/bin/env bash
# Checks `gpt serve` (docs/serving.md) with OpenAI's own client: installs the `openai` npm package
# (pinned) into a cache outside the repository, starts `gpt serve --port 0` on a model and has
# tools/check_openai_client.mjs compare, through the client, a completion with `gpt sample`'s text
# for the same seed, a streamed one with it, logprobs, n: 2 (gpt sample --num_samples 2), stop
# sequences (streamed too), the same text while the server batches another request, the model
# list, a 400 surfacing as the client's APIError, and a wrong API key (the server requires one) as
# its AuthenticationError. Without --out_dir it trains a small model (2 layers, 64 wide, 100
# iterations: a few seconds) in a temporary folder. ~15-30 s once installed.
#   tools/check_openai_client.sh [--out_dir DIR]     (GPT_BINARY=path/to/gpt to test another build)
# Prints one line per check; exit code 0 when every check passes.
set -euo pipefail
cd "$(dirname "$0")/.."
gpt=$(realpath "${GPT_BINARY:-build/gpt}")
[[ -x $gpt ]] || { echo "error: $gpt not found; build it first (docs/development.md)" >&2; exit 1; }
out_dir=
while (($#)); do
  case $1 in
    --out_dir) out_dir=${2:?--out_dir needs a folder}; shift 2 ;;
    *) echo "usage: tools/check_openai_client.sh [--out_dir DIR]" >&2; exit 2 ;;
  esac
done
start=$SECONDS
# The last major that supports Node 20 (Debian's, and this machine's); 7.x declares node >= 22.
version=6.49.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpt/openai-client
installed=$(node -p "require('$cache/node_modules/openai/package.json').version" 2>/dev/null || true)
if [[ $installed != "$version" ]]; then
  mkdir -p "$cache"
  [[ -f $cache/package.json ]] || echo '{"private": true}' >"$cache/package.json"
  (cd "$cache" && npm i -E --no-audit --no-fund "openai@$version")
fi

work=$(mktemp -d)
server=
trap '[[ -z $server ]] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }; rm -rf "$work"' EXIT

if [[ -z $out_dir ]]; then
  tools/fetch_shakespeare.sh >/dev/null
  out_dir=$work/tiny
  "$gpt" train --data_path data/tinyshakespeare.txt --out_dir "$out_dir" --n_layer 2 --n_head 4 --n_embd 64 \
    --block_size 64 --dropout 0 --batch_size 8 --max_iters 100 --lr_decay_iters 100 --warmup_iters 10 \
    --eval_interval 100 --eval_iters 2 --learning_rate 4e-3 --seed 1 --quiet
  echo "trained $out_dir in $((SECONDS - start)) s"
fi
[[ -f $out_dir/model.safetensors ]] || { echo "error: no $out_dir/model.safetensors" >&2; exit 1; }

# The server picks a free port and prints it; wait for that line (or its death). It requires a key,
# which the client sends as OpenAI's does.
head -c 18 /dev/urandom | base64 >"$work/key"
"$gpt" serve --out_dir "$out_dir" --port 0 --quiet --api_key_file "$work/key" >"$work/serve.out" 2>"$work/serve.err" &
server=$!
url=
for _ in $(seq 300); do
  url=$(sed -n 's|^gpt serve: \(http://127\.0\.0\.1:[0-9]*\)/ .*|\1|p' "$work/serve.out")
  [[ -n $url ]] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $url ]]; then
  echo "FAIL server: no address printed" >&2
  cat "$work/serve.out" "$work/serve.err" >&2
  exit 1
fi

set +e
OPENAI_API_KEY=$(cat "$work/key") OPENAI_CLIENT_DIR=$cache timeout 120 node tools/check_openai_client.mjs --gpt "$gpt" --out_dir "$out_dir" --base_url "$url/v1"
status=$?
set -e
# SIGTERM must stop the server cleanly (exit code 0).
kill -TERM "$server"
set +e
wait "$server"
code=$?
set -e
server=
if [[ $code == 0 ]]; then
  echo "PASS shutdown: SIGTERM, exit code 0"
else
  echo "FAIL shutdown: SIGTERM, exit code $code"
  tail -n 20 "$work/serve.err"
  status=1
fi
echo "check_openai_client: openai $version, $(node --version), $((SECONDS - start)) s: $([[ $status == 0 ]] && echo "all passed" || echo FAILED)"
exit "$status"
