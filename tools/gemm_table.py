#!/usr/bin/python3
"""Markdown rows from tools/gemm_bench's JSON lines (stdin), for tools/bench_vs_torch.sh."""
import json
import sys

cores = set()
for line in sys.stdin:
    d = json.loads(line)
    cores.add((d['openblas_core'], d['torch_openblas_core']))
    vdp = 'no AVX512_BF16'
    if d['vdpbf16ps_peak_gflops']:
        vdp = (f"{d['vdpbf16ps_gflops']:.0f} = {100 * d['vdpbf16ps_gflops'] / d['vdpbf16ps_peak_gflops']:.0f}% "
               f"of {d['vdpbf16ps_peak_gflops']:.0f}")
    print(f"| {d['shape']} | {d['M']} x {d['N']} x {d['K']} | {d['ours_gflops']:.0f} | {d['openblas_gflops']:.0f} | "
          f"{d['ratio']:.2f} | {d['bf16_gflops']:.0f} ({d['bf16_kernel']}) | "
          f"{100 * d['bf16_gflops'] / d['bf16_peak_gflops']:.0f}% of {d['bf16_peak_gflops']:.0f} | {vdp} | "
          f"{d['torch_bf16_gflops']:.0f} | {d['bf16_gflops'] / d['torch_bf16_gflops']:.2f} |")
for ours, torch in sorted(cores):
    print(f"\nOpenBLAS ran its {ours} kernels (gemm_bench); PyTorch's OpenBLAS: {torch}.")
