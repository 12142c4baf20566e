# shellcheck shell=bash
# Sourced by the benchmarks that run a peer built on OpenBLAS (OpenBLAS itself, PyTorch's float32).
# These machines set OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE, which make OpenBLAS run its
# AVX2 kernels whatever the CPU: a handicapped peer on AVX-512 CPUs. `peer CMD ...` runs CMD
# without them, so OpenBLAS picks the kernels of the CPU it runs on; ours ignore both.
peer() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }
