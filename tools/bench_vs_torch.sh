#!/usr/bin/env bash
# gpt against PyTorch 2.6 at its best (nanoGPT's code in PyTorch's fastest mode on this machine),
# training and sampling, and our GEMM against OpenBLAS's own kernels and PyTorch's bfloat16
# torch.matmul, all measured in one run; prints Markdown tables with ratios (as in
# docs/benchmarks.md). Needs root: libopenblas-dev (gemm_bench) and PyTorch 2.6's folder
# (tools/torch_peer.sh setup, about 3 minutes and 1.7 GiB the first time).
#   tools/bench_vs_torch.sh [--quick]     --quick skips the full CPU-recipe runs
#   tools/bench_vs_torch.sh --training    only the training rows and the GEMMs
#   tools/bench_vs_torch.sh --gemm        only the GEMMs
#   ... [--rounds N]                      alternating rounds of the two best modes (default 3)
#   ... [--max_isa avx2]                  every side capped alike: gpt GPT_MAX_ISA=avx2, OpenBLAS
#                                         OPENBLAS_CORETYPE=Haswell, PyTorch ATEN_CPU_CAPABILITY=avx2
#                                         and ONEDNN_MAX_CPU_ISA=AVX2 (GPT_MAX_ISA's other x86 levels too;
#                                         default $GPT_MAX_ISA, else native: each side its own kernels)
#   ... [--all_modes]                     also PyTorch's bfloat16 modes where the CPU under the cap
#                                         has no native bfloat16 products (skipped otherwise: slow)
#   ... [--smoke]                         each part at its smallest: checks the script and its labels
# How each side's best mode is chosen and what the peers run: tools/bench_vs_torch.py.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh libopenblas-dev >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target gpt gemm_bench >&2
tools/fetch_shakespeare.sh >&2
tools/torch_peer.sh setup >&2
exec /usr/bin/python3 tools/bench_vs_torch.py "$@"
