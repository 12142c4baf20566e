#!/usr/bin/env bash
# What the sampler's context modes cost in quality and buy in speed, on a trained checkpoint:
# the mean log-likelihood of held-out text (the first N characters of the validation split)
# with every character conditioned as `gpt sample` conditions it, and sampling tokens/s for 500
# new tokens, for the exact mode and shifting windows of block_size/4, /2 and 3/4.
#   tools/context_modes.sh OUT_DIR [N]      (default N 20000; OUT_DIR from gpt train)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: tools/context_modes.sh OUT_DIR [CHARS]}
chars=${2:-20000}
gpt=${GPT_BINARY:-build/gpt}
val=$(mktemp)
trap 'rm -f "$val"' EXIT
python3 - "$out/config.json" "$val" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
text = open(config['data_path'], encoding='utf-8').read()
open(sys.argv[2], 'w', encoding='utf-8').write(text[int(len(text) * (1 - config.get('val_fraction', 0.1))):])
PY
block=$(python3 -c "import json; print(json.load(open('$out/config.json'))['block_size'])")
echo "| mode | loss (nats/char) on $chars held-out characters | bits/char | sampling tokens/s (500 new tokens) |"
echo "| --- | --- | --- | --- |"
for shift in 0 $((block / 4)) $((block / 2)) $((3 * block / 4)); do
  loss=$("$gpt" eval --out_dir "$out" --data "$val" --sampler_context --context_shift "$shift" --max_chars "$chars" --json)
  speed=$("$gpt" sample --out_dir "$out" --max_new_tokens 500 --context_shift "$shift" 2>&1 >/dev/null | sed -n 's/.*: \([0-9]*\) tokens\/s/\1/p')
  mode=$([[ $shift == 0 ]] && echo "exact" || echo "--context_shift $shift")
  python3 -c "import json; d=json.loads('$loss'); print(f\"| $mode | {d['loss']:.4f} | {d['bpc']:.4f} | $speed |\")"
done
