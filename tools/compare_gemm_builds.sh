#!/usr/bin/env bash
# Two builds' GEMMs side by side: runs OLD and NEW gemm_bench binaries (cmake --build BUILD
# --target gemm_bench, with libopenblas-dev) in interleaved rounds and prints each shape's median
# float32 and bfloat16 GFLOP/s with new / old. For a kernel change: build the old commit elsewhere.
#   tools/compare_gemm_builds.sh OLD_GEMM_BENCH NEW_GEMM_BENCH ROUNDS
set -euo pipefail
exec "$(dirname "$0")/compare_builds.py" gemm "$@"
