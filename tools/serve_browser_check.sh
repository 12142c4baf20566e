#!/usr/bin/env bash
# Checks the playground page of `gpt serve` in headless Chromium (tools/serve_browser_check.mjs):
# generate, inspect a character, the attention map, Stop, a server error, a phone-width screen.
# Installs playwright-core (pinned; it drives Debian's chromium, installed if missing) into a cache
# outside the repository. Takes a running server's address; saves desktop.png and phone.png.
#   build/gpt serve --out_dir out/quickstart --port 8080 &
#   tools/serve_browser_check.sh http://127.0.0.1:8080 /tmp/serve_shots
# Exit code 0 when every check passes.
set -euo pipefail
cd "$(dirname "$0")/.."
base_url=${1:?usage: tools/serve_browser_check.sh BASE_URL SCREENSHOT_DIR}
shot_dir=${2:?usage: tools/serve_browser_check.sh BASE_URL SCREENSHOT_DIR}
version=1.65.2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpt/playwright
command -v chromium > /dev/null || tools/install_deps.sh chromium
installed=$(node -p "require('$cache/node_modules/playwright-core/package.json').version" 2> /dev/null || true)
if [[ $installed != "$version" ]]; then
  mkdir -p "$cache"
  [[ -f $cache/package.json ]] || echo '{"private": true}' > "$cache/package.json"
  (cd "$cache" && npm i -E --no-audit --no-fund "playwright-core@$version")
fi
PLAYWRIGHT_CORE_DIR=$cache CHROMIUM=${CHROMIUM:-$(command -v chromium)} \
  timeout 300 node tools/serve_browser_check.mjs "$base_url" "$shot_dir"
