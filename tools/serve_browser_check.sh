#!/usr/bin/env bash
# Checks the playground page of `gpt serve` in headless Chromium (tools/serve_browser_check.mjs):
# generate, inspect a character, the attention map, Stop, a server error, a phone-width screen.
# Installs playwright-core (pinned; it drives Debian's chromium, installed if missing) into a cache
# outside the repository. Saves desktop.png and phone.png.
#   tools/serve_browser_check.sh [--out_dir RUN] [--shots DIR]
#       starts `gpt serve --port 0` with an API key (the page asks for it once) on RUN, or on a small
#       model it trains in a temporary folder (2 layers, 64 wide: a few seconds), runs the checks,
#       then stops the server with SIGTERM, which must exit 0; screenshots to DIR (default: none kept).
#       ~30-60 s once installed. GPT_BINARY=path/to/gpt to test another build.
#   tools/serve_browser_check.sh BASE_URL SHOTS_DIR
#       checks a running server (API_KEY=its key, if it has one):
#         build/gpt serve --out_dir out/quickstart --port 8080 &
#         tools/serve_browser_check.sh http://127.0.0.1:8080 /tmp/serve_shots
# Exit code 0 when every check passes.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: tools/serve_browser_check.sh [--out_dir RUN] [--shots DIR] | BASE_URL SHOTS_DIR"
base_url='' shot_dir='' out_dir=''
if [[ ${1:-} == http://* || ${1:-} == https://* ]]; then
  base_url=$1
  shot_dir=${2:?$usage}
else
  while (($#)); do
    case $1 in
      --out_dir) out_dir=${2:?--out_dir needs a folder}; shift 2 ;;
      --shots) shot_dir=${2:?--shots needs a folder}; shift 2 ;;
      *) echo "$usage" >&2; exit 2 ;;
    esac
  done
fi
start=$SECONDS
version=1.65.2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpt/playwright
command -v chromium > /dev/null || tools/install_deps.sh chromium
installed=$(node -p "require('$cache/node_modules/playwright-core/package.json').version" 2> /dev/null || true)
if [[ $installed != "$version" ]]; then
  mkdir -p "$cache"
  [[ -f $cache/package.json ]] || echo '{"private": true}' > "$cache/package.json"
  (cd "$cache" && npm i -E --no-audit --no-fund "playwright-core@$version")
fi
check_page() {  # BASE_URL SHOTS_DIR, with API_KEY in the environment
  PLAYWRIGHT_CORE_DIR=$cache CHROMIUM=${CHROMIUM:-$(command -v chromium)} \
    timeout 300 node tools/serve_browser_check.mjs "$1" "$2"
}
if [[ -n $base_url ]]; then
  check_page "$base_url" "$shot_dir"
  exit
fi

gpt=$(realpath "${GPT_BINARY:-build/gpt}")
[[ -x $gpt ]] || { echo "error: $gpt not found; build it first (docs/development.md)" >&2; exit 1; }
# shellcheck source=tools/serve_session.sh
source tools/serve_session.sh
use_model
start_server "$out_dir"
status=0
API_KEY=$(cat "$key_file") check_page "$url" "${shot_dir:-$work/shots}" || status=$?
stop_server || status=1
echo "serve_browser_check: playwright-core $version, $(chromium --version 2> /dev/null || echo chromium), \
$((SECONDS - start)) s: $([[ $status == 0 ]] && echo "all passed" || echo FAILED)"
exit "$status"
