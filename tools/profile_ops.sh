#!/usr/bin/env bash
# Builds gpt's core library and tools/profile_ops.cpp, then prints where a CPU-recipe training
# step spends its time, op by op (see the README's Performance section).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target gpt_core >/dev/null
g++ -std=c++20 -O3 -fopenmp -ffp-contract=off -fno-math-errno -Isrc tools/profile_ops.cpp -Lbuild/src -lgpt_core \
  -o build/profile_ops
build/profile_ops
