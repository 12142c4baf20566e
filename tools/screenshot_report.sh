#!/usr/bin/env bash
# A run report as a user's browser shows it: renders OUT_DIR/report.html (or any HTML file) in
# headless Chromium (installed from Debian if missing) at a laptop's and a phone's width.
#   tools/screenshot_report.sh OUT_DIR|FILE.html [PNG] [WIDTHxHEIGHT] [SCALE]   default docs/report.png, 1200x1500, 1
#   tools/screenshot_report.sh out/shakespeare_char_cpu docs/report_phone.png 390x1400
#   SCALE 0.5 lays the page out at WIDTHxHEIGHT and saves it at half that size (a smaller PNG).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: tools/screenshot_report.sh OUT_DIR|FILE.html [PNG] [WIDTHxHEIGHT] [SCALE]}
png=${2:-docs/report.png}
size=${3:-1200x1500}
scale=${4:-1}
command -v chromium > /dev/null || tools/install_deps.sh chromium
if [[ $target == *.html ]]; then
  html=$target
else
  html=$target/report.html
  [[ -f $html ]] || build/gpt report --out_dir "$target"
fi
mkdir -p "$(dirname "$png")"
rm -f "$png"
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="${size/x/,}" \
  --force-device-scale-factor="$scale" --screenshot="$(realpath -m "$png")" "file://$(realpath "$html")" 2> /dev/null
[[ -s $png ]] || { echo "chromium wrote no screenshot to $png" >&2; exit 1; }
echo "$png"
