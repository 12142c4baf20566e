#!/usr/bin/env bash
# A run report as a user's browser shows it: renders OUT_DIR/report.html in headless Chromium
# (installed from Debian if missing) at a laptop's and a phone's width.
#   tools/screenshot_report.sh OUT_DIR [PNG] [WIDTHxHEIGHT]   default docs/report.png, 1200x1500
#   tools/screenshot_report.sh out/shakespeare_char_cpu docs/report_phone.png 390x1400
set -euo pipefail
cd "$(dirname "$0")/.."
out_dir=${1:?usage: tools/screenshot_report.sh OUT_DIR [PNG] [WIDTHxHEIGHT]}
png=${2:-docs/report.png}
size=${3:-1200x1500}
command -v chromium > /dev/null || tools/install_deps.sh chromium
[[ -f $out_dir/report.html ]] || build/gpt report --out_dir "$out_dir"
mkdir -p "$(dirname "$png")"
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="${size/x/,}" \
  --screenshot="$PWD/$png" "file://$(realpath "$out_dir/report.html")" 2> /dev/null
echo "$png"
