#!/usr/bin/python3
"""PyTorch's bfloat16 matrix product (torch.matmul on bfloat16 tensors: oneDNN, AMX where the CPU
has it) on the shapes of tools/gemm_bench's JSON lines (stdin), same threads; each line comes back
with "torch_bf16_gflops" added (null, and "torch_bf16_skipped" saying why, where the CPU under
this process's caps has no native bfloat16 products: emulated, they are slow; --all_modes times
them anyway) and "torch_kernels" (blas_core.py's torch_kernels). Used by tools/bench_vs_torch.sh;
benchmark only."""
import json
import sys
import time

import torch

from blas_core import native_bfloat16, torch_kernels


def median_seconds(f, reps):
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


timed = '--all_modes' in sys.argv[1:] or native_bfloat16()
kernels = torch_kernels(torch)
for line in sys.stdin:
    d = json.loads(line)
    d['torch_kernels'] = kernels
    if not timed:
        d['torch_bf16_gflops'], d['torch_bf16_skipped'] = None, 'no native bfloat16 under this cap'
        print(json.dumps(d), flush=True)
        continue
    torch.set_num_threads(d['threads'])
    M, N, K = d['M'], d['N'], d['K']
    # The stored layouts gemm_bench multiplies: A is K x M when transposed, B is N x K when transposed.
    a = torch.randn(K, M).bfloat16().t() if d['ta'] else torch.randn(M, K).bfloat16()
    b = torch.randn(N, K).bfloat16().t() if d['tb'] else torch.randn(K, N).bfloat16()
    flops = 2.0 * M * N * K
    seconds = median_seconds(lambda: torch.matmul(a, b), 5 if flops > 1e10 else 50)
    d['torch_bf16_gflops'] = flops / seconds * 1e-9
    print(json.dumps(d), flush=True)
