#!/usr/bin/python3
"""gpt against PyTorch 2.6 at its best, measured in one run on this machine (run by
tools/bench_vs_torch.sh, which builds gpt and gemm_bench and sets up tools/torch_peer.sh first).

    tools/bench_vs_torch.sh [--quick | --training | --gemm] [--rounds N] [--max_isa CAP] [--all_modes]
        [--smoke]

Training: each side's best mode is chosen first, one run each: gpt float32 and bfloat16; PyTorch
2.6 running nanoGPT's code (tools/nanogpt_train.py) in its four modes (tools/torch_modes.py: eager
and torch.compile, float32 and bfloat16 autocast) with each attention path
(F.scaled_dot_product_attention, and the explicit masked softmax), on 2 threads with
OMP_WAIT_POLICY=PASSIVE, and its best of those again on 1 thread. Then the two best run in N
alternating rounds (default 3); the ratio is the median of the rounds' ratios. Sampling: gpt
sample against nanoGPT's sampling loop (tools/nanogpt_sample.py, eager, its better thread
setting). --quick skips the full CPU-recipe training runs; --training runs only training and the
GEMMs; --gemm only the GEMMs (ours against OpenBLAS, tools/gemm_bench.cpp, in alternating rounds;
and with bfloat16 inputs against PyTorch 2.6's torch.matmul).

--max_isa caps every side alike (default: $GPT_MAX_ISA, else native): avx2 runs gpt under
GPT_MAX_ISA=avx2, OpenBLAS under OPENBLAS_CORETYPE=Haswell (OPENBLAS_L2_SIZE as the machine sets
it) and PyTorch under ATEN_CPU_CAPABILITY=avx2 and ONEDNN_MAX_CPU_ISA=AVX2 (CAPS below). native
clears all of these, so each side runs its own kernels: the machine's OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE would hold OpenBLAS to its AVX2 kernels. Every table says its cap and the kernels
each side chose. PyTorch's bfloat16 modes run only where the CPU, under the cap, multiplies
bfloat16 natively (tools/blas_core.py's native_bfloat16); elsewhere they are listed as skipped
(they took 40 minutes on a Zen 3) unless --all_modes. --smoke runs each part at its smallest (the
CPU recipe only, 1 iteration, eager modes, 1 round, short samples, one small GEMM shape) to check
the script and its labels; its figures measure nothing. Markdown on stdout, progress (with each
child's command and cap variables) on stderr.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

from blas_core import CAP_VARIABLES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPT = os.path.join('build', 'gpt')
PEER = ['tools/torch_peer.sh', 'run']
PASSIVE = ['OMP_WAIT_POLICY=PASSIVE']  # PyTorch's default spin-waiting is much slower on 2 cores
RECIPES = [('shakespeare_char_cpu', 20), ('shakespeare_char', 3)]  # (config, timed iterations)
WORK = os.path.join('out', 'bench_vs_torch')
# Each --max_isa level as gpt's GPT_MAX_ISA and the nearest setting each peer has: OpenBLAS's core
# type (a type the CPU lacks falls back to what it has), ATen's vector kernels, oneDNN's instruction
# set (its floor is SSE4.1).
CAPS = {
    'native': {},
    'portable': dict(GPT_MAX_ISA='portable', OPENBLAS_CORETYPE='Prescott', ATEN_CPU_CAPABILITY='default',
                     ONEDNN_MAX_CPU_ISA='SSE41'),
    'avx2': dict(GPT_MAX_ISA='avx2', OPENBLAS_CORETYPE='Haswell', ATEN_CPU_CAPABILITY='avx2',
                 ONEDNN_MAX_CPU_ISA='AVX2'),
    'avx512': dict(GPT_MAX_ISA='avx512', OPENBLAS_CORETYPE='SkylakeX', ATEN_CPU_CAPABILITY='avx512',
                   ONEDNN_MAX_CPU_ISA='AVX512_CORE'),
    'avx512_bf16': dict(GPT_MAX_ISA='avx512_bf16', OPENBLAS_CORETYPE='Cooperlake', ATEN_CPU_CAPABILITY='avx512',
                        ONEDNN_MAX_CPU_ISA='AVX512_CORE_BF16'),
    'amx': dict(GPT_MAX_ISA='amx', OPENBLAS_CORETYPE='SapphireRapids', ATEN_CPU_CAPABILITY='avx512',
                ONEDNN_MAX_CPU_ISA='AVX512_CORE_AMX'),
}
SMOKE_MODES = 'eager-float32,eager-bfloat16'  # --smoke: no compilation


def log(message):
    print(f'[{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S}] {message}', file=sys.stderr, flush=True)


class Cap:
    """The environment every child runs in under one --max_isa level: this one less all the cap
    variables, plus the level's settings. torch_peer.sh clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE,
    so a PyTorch command gets the settings again as VAR=value words (peer)."""

    def __init__(self, name):
        self.name, self.settings = name, dict(CAPS[name])
        if self.settings and os.environ.get('OPENBLAS_L2_SIZE'):
            self.settings['OPENBLAS_L2_SIZE'] = os.environ['OPENBLAS_L2_SIZE']
        self.env = {k: v for k, v in os.environ.items() if k not in CAP_VARIABLES + ('GPT_MAX_ISA',)}
        self.env.update(self.settings)
        self.words = [f'{k}={v}' for k, v in self.settings.items() if k != 'GPT_MAX_ISA']

    def peer(self, cmd, passive=False):
        """cmd in PyTorch 2.6's folder; passive: with OMP_WAIT_POLICY=PASSIVE (2 threads)."""
        return PEER + self.words + (PASSIVE if passive else []) + cmd

    def describe(self):
        if not self.settings:
            return ('no cap (--max_isa native): each side its own kernels; ' + ', '.join(CAP_VARIABLES[:4]) +
                    ' and GPT_MAX_ISA unset')
        return f'--max_isa {self.name}: ' + ' '.join(f'{k}={v}' for k, v in self.settings.items())


def run(cmd, env, stdin_text=None):
    shown = [f'{k}={env[k]}' for k in CAP_VARIABLES + ('GPT_MAX_ISA',) if k in env]
    log('$ ' + ' '.join(shown + cmd))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, input=stdin_text, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        tail = '\n'.join(proc.stderr.strip().splitlines()[-5:])
        sys.exit(f'bench_vs_torch: {" ".join(cmd)} failed (exit {proc.returncode}):\n{tail}')
    return proc


def run_json(cmd, env):
    """The JSON object on the last line of cmd's output."""
    lines = run(cmd, env).stdout.strip().splitlines()
    return json.loads(lines[-1])


def config_path(name):
    return os.path.join('configs', name + '.json')


def gpt_bench(cap, name, iters, dtype):
    return run_json([GPT, 'bench', '--config', config_path(name), '--iters', str(iters), '--warmup', '1', '--json',
                     '--dtype', dtype], cap.env)


def torch_train(cap, name, iters, choice, extra=()):
    """nanogpt_train.py in PyTorch 2.6 as `choice` says (mode, attention, threads)."""
    how, dtype = choice['mode'].split('-')
    cmd = ['python3', 'tools/nanogpt_train.py', config_path(name), '--json', '--dtype', dtype,
           '--attention', choice['attention'], '--threads', str(choice['threads'])]
    cmd += ['--compile'] if how == 'compile' else []
    cmd += ['--no_eval', '--max_iters', str(iters)] if iters else []
    return run_json(cap.peer(cmd + list(extra), passive=choice['threads'] > 1), cap.env)


def choose_gpt(cap, name, iters):
    runs = {dtype: gpt_bench(cap, name, iters, dtype) for dtype in ('float32', 'bfloat16')}
    for dtype, r in runs.items():
        log(f'{name}: gpt {dtype} ({r["kernel"]}) {r["median_ms_per_iter"]:.1f} ms/iter')
    return max(runs, key=lambda d: runs[d]['tokens_per_s']), runs


def choose_torch(cap, args, name, iters):
    """Every mode with each attention path on 2 threads, then the best on 1 thread."""
    tried = []
    for attention in ('sdpa', 'manual'):
        cmd = ['python3', 'tools/torch_modes.py', config_path(name), '--max_iters', str(iters), '--threads', '2',
               '--attention', attention, '--json'] + (['--all_modes'] if args.all_modes else []) + \
            (['--modes', SMOKE_MODES] if args.smoke else [])
        out = run_json(cap.peer(cmd, passive=True), cap.env)
        log(f'{name}: PyTorch kernels {out["kernels"]}')
        for mode, r in out['modes'].items():
            tried.append(dict(mode=mode, attention=attention, threads=2, result=r, kernels=out['kernels']))
            log(f'{name}: PyTorch {mode} {attention} 2 threads: ' +
                (r['skipped'] if 'skipped' in r else f'{r["median_ms_per_iter"]:.1f} ms/iter'))
    ran = [t for t in tried if 'skipped' not in t['result']]
    if not ran:
        sys.exit(f'bench_vs_torch: no PyTorch mode ran on {name}')
    best = min(ran, key=lambda t: t['result']['median_ms_per_iter'])
    one = dict(best, threads=1)
    one['result'] = torch_train(cap, name, iters, one)
    log(f'{name}: PyTorch {one["mode"]} {one["attention"]} 1 thread: {one["result"]["median_ms_per_iter"]:.1f} ms/iter')
    tried.append(one)
    return min([best, one], key=lambda t: t['result']['median_ms_per_iter']), tried


def describe(choice):
    return f'{choice["mode"]}, {choice["attention"]} attention, {choice["threads"]} thread(s)'


def training(cap, args, caption):
    rows, mode_rows, chosen = [], [], {}
    for name, iters in args.recipes:
        ours_dtype, ours_runs = choose_gpt(cap, name, iters)
        theirs, tried = choose_torch(cap, args, name, iters)
        chosen[name] = theirs
        for dtype, r in ours_runs.items():
            mode_rows.append(f'| {name} | gpt | {dtype} ({r["kernel"]}) | 2 | {r["median_ms_per_iter"]:.1f} | '
                             f'{r["tokens_per_s"]:.0f} |')
        for t in tried:
            r, k = t['result'], t['kernels']
            timing = ('skipped: ' + r['skipped'], '') if 'skipped' in r else (
                f'{r["median_ms_per_iter"]:.1f}', f'{r["tokens_per_s"]:.0f}')
            kernels = '' if 'skipped' in r else f'ATen {k["aten"]}, OpenBLAS {r["openblas_core"]}'
            mode_rows.append(f'| {name} | PyTorch {t["mode"]}, {t["attention"]} | {kernels} | {t["threads"]} | '
                             f'{timing[0]} | {timing[1]} |')
        ours, peer = [], []
        for i in range(args.rounds):
            ours.append(gpt_bench(cap, name, iters, ours_dtype))
            peer.append(torch_train(cap, name, iters, theirs))
            log(f'{name} round {i + 1}/{args.rounds}: gpt {ours[-1]["median_ms_per_iter"]:.1f}, PyTorch '
                f'{peer[-1]["median_ms_per_iter"]:.1f} ms/iter')
        ratios = [o['tokens_per_s'] / p['tokens_per_s'] for o, p in zip(ours, peer)]
        median = statistics.median
        rows.append(f'| {name} training tokens/s: gpt {ours_dtype} ({ours[0]["kernel"]}) against PyTorch 2.6 '
                    f'{describe(theirs)} | '
                    f'{median(o["tokens_per_s"] for o in ours):.0f} | {median(p["tokens_per_s"] for p in peer):.0f} | '
                    f'{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |')
        rows.append(f'| {name} peak RSS MiB (same runs) | {median(o["peak_rss_mib"] for o in ours):.0f} | '
                    f'{median(p["peak_rss_mib"] for p in peer):.0f} | '
                    f'{median(o["peak_rss_mib"] for o in ours) / median(p["peak_rss_mib"] for p in peer):.2f}x |')
    print(f'\nEach side\'s modes, one run each (median ms/iter of '
          f'{", ".join(f"{i} iterations of {n}" for n, i in args.recipes)}'
          f'; PyTorch 2 threads with OMP_WAIT_POLICY=PASSIVE). {caption}\n')
    print('| recipe | side, mode | dtype (kernel) | threads | ms/iter | tokens/s |\n| --- | --- | --- | --- | --- | --- |')
    print('\n'.join(mode_rows))
    print(f'\nBest against best, medians of {args.rounds} alternating rounds (ratio: median of the rounds\' ratios, '
          f'and their range). {caption}\n')
    print('| measure | gpt | PyTorch 2.6 | ratio |\n| --- | --- | --- | --- |')
    print('\n'.join(rows))
    if not (args.quick or args.training or args.smoke):
        print(full_cpu_recipe(cap, chosen['shakespeare_char_cpu']))


def full_cpu_recipe(cap, theirs):
    """The CPU recipe's whole run (2000 iterations with evaluations), wall time and final loss."""
    log('full CPU-recipe runs')
    out_dir = os.path.join(WORK, 'full_gpt')
    start = datetime.datetime.now()
    run([GPT, 'train', '--config', config_path('shakespeare_char_cpu'), '--out_dir', out_dir, '--quiet'], cap.env)
    ours_wall = (datetime.datetime.now() - start).total_seconds()
    with open(os.path.join(ROOT, out_dir, 'metrics.jsonl')) as f:
        evals = [json.loads(line) for line in f if '"type":"eval"' in line]
    peer = torch_train(cap, 'shakespeare_char_cpu', 0, theirs)
    return (f'| shakespeare_char_cpu full run (2000 iterations with evals), wall s; gpt as configured (float32), '
            f'PyTorch {describe(theirs)} | '
            f'{ours_wall:.0f} | {peer["wall_seconds"]:.0f} | {ours_wall / peer["wall_seconds"]:.2f}x |\n'
            f'| shakespeare_char_cpu final val loss (eval_iters 20) | {evals[-1]["val_loss"]:.4f} | '
            f'{peer["final_val_loss"]:.4f} | |')


def gpt_sample_tokens_per_s(cap, checkpoint, n, samples, shift):
    """The generation loop's tokens/s as gpt sample logs it (model loading excluded)."""
    proc = run([GPT, 'sample', '--out_dir', checkpoint, '--max_new_tokens', str(n), '--num_samples', str(samples),
                '--context_shift', str(shift)], cap.env)
    for line in proc.stderr.splitlines():
        if ' tokens in ' in line and 'tokens/s' in line:
            return float(line.split(' tokens/s')[0].split()[-1])
    sys.exit(f'bench_vs_torch: no tokens/s line in gpt sample\'s log:\n{proc.stderr}')


def sampling(cap, args, caption):
    # --smoke: a model of one iteration of its own, short samples, one run each.
    checkpoint, train, n, short, samples, runs = \
        (os.path.join(WORK, 'sample_model_smoke'), ['1', '--eval_interval', '1', '--eval_iters', '1'], 20, 20, 2, 1) \
        if args.smoke else (os.path.join(WORK, 'sample_model'), ['200', '--eval_interval', '200'], 500, 60, 20, 3)
    if not os.path.exists(os.path.join(ROOT, checkpoint, 'model.safetensors')):
        run([GPT, 'train', '--config', config_path('shakespeare_char_cpu'), '--out_dir', checkpoint, '--quiet',
             '--max_iters'] + train, cap.env)
    modes = [(f'sampling tokens/s, {n} new tokens, exact mode', n, 1, 0),
             (f'sampling tokens/s, {n} new tokens, --context_shift 32 (PyTorch: exact)', n, 1, 32),
             (f'sampling tokens/s, {samples} samples x {short} tokens (fits in block_size)', short, samples, 0)]
    print(f'\nSampling (gpt: median of {runs} runs; PyTorch 2.6: nanoGPT\'s loop, eager float32, the better of 1 '
          f'thread and 2 with OMP_WAIT_POLICY=PASSIVE). {caption}\n')
    print('| measure | gpt | PyTorch 2.6 | ratio |\n| --- | --- | --- | --- |')
    for what, n, samples, shift in modes:
        log(what)
        ours = statistics.median(gpt_sample_tokens_per_s(cap, checkpoint, n, samples, shift) for _ in range(runs))
        cmd = ['python3', 'tools/nanogpt_sample.py', os.path.join(checkpoint, 'model.safetensors'),
               '--max_new_tokens', str(n), '--num_samples', str(samples)]
        theirs = max(run_json(cap.peer(cmd + ['--threads', '1']), cap.env)['tokens_per_s'],
                     run_json(cap.peer(cmd + ['--threads', '2'], passive=True), cap.env)['tokens_per_s'])
        print(f'| {what} | {ours:.0f} | {theirs:.0f} | {ours / theirs:.2f}x |', flush=True)


def gemm(cap, args, caption):
    log('GEMM')
    # --smoke: one round of one small shape.
    rounds, shapes = (1, ['cpu lm_head']) if args.smoke else (max(args.rounds, 3), [])
    lines = run([os.path.join('build', 'gemm_bench'), str(rounds)] + shapes,
                dict(cap.env, OPENBLAS_NUM_THREADS=str(os.cpu_count()))).stdout
    lines = run(cap.peer(['python3', 'tools/torch_matmul_bench.py'] + (['--all_modes'] if args.all_modes else [])),
                cap.env, stdin_text=lines).stdout
    results = [json.loads(line) for line in lines.strip().splitlines()]
    cores = sorted({(d['openblas_core'], d['kernel'], d['torch_kernels']['openblas']) for d in results})
    print(f'\nGEMM, {os.cpu_count()} threads, GFLOP/s: ours against OpenBLAS cblas_sgemm in float32 (medians of '
          f'{rounds} alternating rounds; the ratio is the median of the rounds\' ratios, and their range), and ours '
          'with bfloat16 inputs against the peak of the instruction its kernel runs on (VDPBF16PS or FMA) and against '
          'PyTorch 2.6\'s bfloat16 torch.matmul; "C +=" marks a weight gradient, which gpt and OpenBLAS (beta = 1) '
          f'accumulate into C as training does, and torch.matmul does not. {caption} ' +
          ' '.join(f'gemm_bench: gpt float32 {ours}, OpenBLAS {blas}; PyTorch 2.6\'s OpenBLAS {torch}.'
                   for blas, ours, torch in cores) + '\n')
    print('| shape | M x N x K | gpt | OpenBLAS | gpt / OpenBLAS | gpt / float32 peak | gpt bfloat16 (kernel) | '
          'bfloat16 / its peak | PyTorch bfloat16 | gpt bfloat16 / PyTorch |')
    print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for d in results:
        shape = d['shape'] + (' (C +=)' if d['accumulate'] else '')
        theirs = ('skipped: ' + d['torch_bf16_skipped'], '') if d['torch_bf16_gflops'] is None else (
            f"{d['torch_bf16_gflops']:.0f}", f"{d['bf16_gflops'] / d['torch_bf16_gflops']:.2f}")
        print(f"| {shape} | {d['M']} x {d['N']} x {d['K']} | {d['ours_gflops']:.0f} | {d['openblas_gflops']:.0f} | "
              f"{d['ratio']:.2f} ({d['ratio_min']:.2f}-{d['ratio_max']:.2f}) | "
              f"{100 * d['ours_gflops'] / d['fp32_peak_gflops']:.0f}% of {d['fp32_peak_gflops']:.0f} | "
              f"{d['bf16_gflops']:.0f} ({d['bf16_kernel']}) | "
              f"{100 * d['bf16_gflops'] / d['bf16_peak_gflops']:.0f}% of {d['bf16_peak_gflops']:.0f} | "
              f"{theirs[0]} | {theirs[1]} |")


def header(cap):
    """Prints the machine, the cap and each side's kernels; returns the line each table repeats."""
    model = run(['lscpu'], cap.env).stdout
    model = next((line.split(':', 1)[1].strip() for line in model.splitlines() if line.startswith('Model name')), '?')
    probe = run_json(cap.peer(['python3', '-c', 'import json, sys, torch; sys.path.insert(0, "tools"); '
                               'from blas_core import torch_kernels; '
                               'print(json.dumps(dict(torch_kernels(torch), torch=torch.__version__)))']), cap.env)
    kernels = {d: gpt_bench(cap, 'shakespeare_char_cpu', 1, d)['kernel'] for d in ('float32', 'bfloat16')}
    gib = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30
    seen = ' '.join(f'{k}={v}' for k, v in probe['env'].items() if v is not None) or 'none of them set'
    print(f'date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, machine: {model}, '
          f'{os.cpu_count()} cores, {gib:.0f} GiB')
    print(f'cap: {cap.describe()}')
    print(f'peer: PyTorch {probe["torch"]} (Debian 13, tools/torch_peer.sh); its process saw {seen}')
    chosen = (f'gpt float32 {kernels["float32"]}, bfloat16 {kernels["bfloat16"]}; PyTorch ATen {probe["aten"]}, '
              f'oneDNN {probe["onednn"]}, OpenBLAS {probe["openblas"]}')
    print(f'kernels: {chosen}')
    return f'Cap: {cap.describe()}. Kernels: {chosen}.'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    part = ap.add_mutually_exclusive_group()
    part.add_argument('--quick', action='store_true', help='skip the full CPU-recipe training runs')
    part.add_argument('--training', action='store_true', help='only the training rows and the GEMMs')
    part.add_argument('--gemm', action='store_true', help='only the GEMMs')
    ap.add_argument('--rounds', type=int, default=3, help='alternating rounds of the best modes and of the GEMMs')
    ap.add_argument('--max_isa', type=str.lower, default=os.environ.get('GPT_MAX_ISA') or 'native',
                    help=f'cap every side to this instruction set: {", ".join(CAPS)} (default: $GPT_MAX_ISA, '
                    'else native: no cap)')
    ap.add_argument('--all_modes', action='store_true',
                    help="also PyTorch's bfloat16 modes where the CPU under the cap has no native bfloat16 products")
    ap.add_argument('--smoke', action='store_true',
                    help='each part at its smallest, to check the script and its labels (its figures measure nothing)')
    args = ap.parse_args()
    if args.max_isa not in CAPS:
        ap.error(f'--max_isa (or GPT_MAX_ISA) {args.max_isa}: expected one of {", ".join(CAPS)}')
    if args.max_isa != 'native' and platform.machine() != 'x86_64':
        ap.error(f'--max_isa {args.max_isa} caps x86-64 kernels; this is {platform.machine()}')
    args.recipes = [('shakespeare_char_cpu', 1)] if args.smoke else RECIPES
    args.rounds = 1 if args.smoke else args.rounds
    cap = Cap(args.max_isa)
    os.makedirs(os.path.join(ROOT, WORK), exist_ok=True)
    caption = header(cap)
    if not args.gemm:
        training(cap, args, caption)
    if not (args.gemm or args.training):
        sampling(cap, args, caption)
    gemm(cap, args, caption)


if __name__ == '__main__':
    main()
