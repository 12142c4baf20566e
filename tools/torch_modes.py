#!/usr/bin/python3
"""nanoGPT's training step (tools/nanogpt_train.py --no_eval) in PyTorch's four CPU modes, eager and
torch.compile, float32 and bfloat16 autocast, each in a process of its own; prints the median
ms/iter and tokens/s of each and which was best.

    python3 tools/torch_modes.py configs/shakespeare_char_cpu.json [--max_iters 20] [--threads N]
        [--modes eager-float32,eager-bfloat16,compile-float32,compile-bfloat16] [--attention auto|sdpa|manual]
        [--all_modes] [--json]

The bfloat16 modes run only where the CPU multiplies bfloat16 natively (AVX512_BF16 or AMX, and
ONEDNN_MAX_CPU_ISA not below them): elsewhere PyTorch emulates the products, so slowly (259 s an
iteration on the 10.7M recipe on a Zen 3) that they are reported as skipped; --all_modes runs them.
PyTorch 2.6 runs in Debian 13's folder: tools/torch_peer.sh run python3 tools/torch_modes.py ...
On PyTorch 1.13 (Debian 12) the compile modes are reported as unavailable and skipped. The median
leaves out the first iteration (for compile, the compilation: first_iter_s). --json prints, as the
last line, the best mode's nanogpt_train.py result with 'modes': every mode's result (or why not),
and 'kernels': the instruction sets PyTorch chose and the cap variables it saw (blas_core.py).
"""
import argparse
import json
import os
import subprocess
import sys

import torch

from blas_core import native_bfloat16, torch_kernels

MODES = ['eager-float32', 'eager-bfloat16', 'compile-float32', 'compile-bfloat16']
TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'nanogpt_train.py')


def run_mode(mode, args):
    how, dtype = mode.split('-')
    if how == 'compile' and not hasattr(torch, 'compile'):
        return None, f'unavailable: torch {torch.__version__} has no torch.compile'
    if dtype == 'bfloat16' and not (args.all_modes or native_bfloat16()):
        return None, 'no native bfloat16 under this cap'
    cmd = [sys.executable, TRAIN, args.config, '--no_eval', '--json', '--max_iters', str(args.max_iters),
           '--dtype', dtype] + (['--compile'] if how == 'compile' else []) + \
        (['--threads', str(args.threads)] if args.threads else []) + ['--attention', args.attention]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ['no output'])[-1]
        return None, f'failed (exit {proc.returncode}): {err}'
    return json.loads(lines[-1]), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('config')
    ap.add_argument('--max_iters', type=int, default=20, help='iterations after the first (nanoGPT counts 0..N)')
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--modes', default=','.join(MODES))
    ap.add_argument('--attention', choices=['auto', 'sdpa', 'manual'], default='auto',
                    help="nanogpt_train.py's: auto is F.scaled_dot_product_attention when torch has it")
    ap.add_argument('--all_modes', action='store_true',
                    help='also the bfloat16 modes on a CPU (or under a cap) without native bfloat16 products')
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args()
    modes = args.modes.split(',')
    for mode in modes:
        if mode not in MODES:
            ap.error(f'unknown mode {mode}: one of {", ".join(MODES)}')

    results = {}
    for mode in modes:
        result, why = run_mode(mode, args)
        results[mode] = result if result is not None else {'skipped': why}
        if not args.json:
            if result is None:
                print(f'{mode:17s} {why}', flush=True)
            else:
                print(f"{mode:17s} {result['median_ms_per_iter']:9.1f} ms/iter {result['tokens_per_s']:9.0f} tokens/s  "
                      f"(first iteration {result['first_iter_s']:.1f} s, {result['threads']} threads, "
                      f"attention {result['attention']}, OpenBLAS {result['openblas_core']})", flush=True)
    ran = {m: r for m, r in results.items() if 'skipped' not in r}
    if not ran:
        sys.exit('no mode ran')
    best = min(ran, key=lambda m: ran[m]['median_ms_per_iter'])
    if args.json:
        print(json.dumps(dict(ran[best], best=best, modes=results, kernels=torch_kernels(torch))))
    else:
        kernels = torch_kernels(torch)
        print(f"best: {best}, {ran[best]['median_ms_per_iter']:.1f} ms/iter (torch {torch.__version__}, "
              f"attention {ran[best]['attention']}; ATen {kernels['aten']}, oneDNN {kernels['onednn']})")


if __name__ == '__main__':
    main()
