#!/usr/bin/env bash
# Builds tools/profile_ops.cpp (a CMake target outside `all`), then prints where a CPU-recipe training
# step spends its time, op by op (see docs/benchmarks.md).
#   tools/profile_ops.sh [big] [bfloat16]   the 10.7M recipe's shapes; bfloat16 matrix products
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target profile_ops >/dev/null
build/profile_ops "$@"
