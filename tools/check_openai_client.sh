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

# shellcheck source=tools/serve_session.sh
source tools/serve_session.sh
use_model
# The server requires a key, which the client sends as OpenAI's does.
start_server "$out_dir"

set +e
OPENAI_API_KEY=$(cat "$key_file") OPENAI_CLIENT_DIR=$cache timeout 120 node tools/check_openai_client.mjs --gpt "$gpt" --out_dir "$out_dir" --base_url "$url/v1"
status=$?
set -e
stop_server || status=1
echo "check_openai_client: openai $version, $(node --version), $((SECONDS - start)) s: $([[ $status == 0 ]] && echo "all passed" || echo FAILED)"
exit "$status"
