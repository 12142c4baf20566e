#!/usr/bin/env bash
# From a fresh clone to generated Shakespeare: installs what is missing, builds gpt (Release),
# fetches Tiny Shakespeare, trains configs/quickstart.json (about a minute on 2 cores) and
# samples from it.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target gpt
tools/fetch_shakespeare.sh
build/gpt train --config configs/quickstart.json
build/gpt sample --out_dir out/quickstart --prompt "ROMEO:" --max_new_tokens 300
