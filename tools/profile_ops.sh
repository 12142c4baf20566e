#!/usr/bin/env bash
# Builds gpt's core library and tools/profile_ops.cpp, then prints where a CPU-recipe training
# step spends its time, op by op (see the README's Performance section).
#   tools/profile_ops.sh [big] [bfloat16]   the 10.7M recipe's shapes; bfloat16 matrix products
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target gpt_core >/dev/null
# gpt_core links MPI when the build found it.
mpi_libs=$(grep -q "GPT_WITH_MPI" build/compile_commands.json && pkg-config --libs ompi-c || true)
# shellcheck disable=SC2086
g++ -std=c++20 -O3 -fopenmp -ffp-contract=off -fno-math-errno -Isrc tools/profile_ops.cpp -Lbuild/src -lgpt_core \
  $mpi_libs -o build/profile_ops
build/profile_ops "$@"
