#!/usr/bin/python3
"""gpt against PyTorch 2.6 at its best, measured in one run on this machine (run by
tools/bench_vs_torch.sh, which builds gpt and gemm_bench and sets up tools/torch_peer.sh first).

    tools/bench_vs_torch.sh [--quick | --training | --gemm] [--rounds N]

Training: each side's best mode is chosen first, one run each: gpt float32 and bfloat16; PyTorch
2.6 running nanoGPT's code (tools/nanogpt_train.py) in its four modes (tools/torch_modes.py: eager
and torch.compile, float32 and bfloat16 autocast) with each attention path
(F.scaled_dot_product_attention, and the explicit masked softmax), on 2 threads with
OMP_WAIT_POLICY=PASSIVE, and its best of those again on 1 thread. Then the two best run in N
alternating rounds (default 3); the ratio is the median of the rounds' ratios. Sampling: gpt
sample against nanoGPT's sampling loop (tools/nanogpt_sample.py, eager, its better thread
setting). --quick skips the full CPU-recipe training runs; --training runs only training and the
GEMMs; --gemm only the GEMMs (ours against OpenBLAS, tools/gemm_bench.cpp, in alternating rounds;
and with bfloat16 inputs against PyTorch 2.6's torch.matmul). OpenBLAS and PyTorch run without
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (tools/peer_env.sh, tools/torch_peer.sh); the output names
the kernels they chose. Markdown on stdout, progress on stderr.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPT = os.path.join('build', 'gpt')
PEER = ['tools/torch_peer.sh', 'run']
PASSIVE = ['OMP_WAIT_POLICY=PASSIVE']  # PyTorch's default spin-waiting is much slower on 2 cores
RECIPES = [('shakespeare_char_cpu', 20), ('shakespeare_char', 3)]  # (config, timed iterations)
WORK = os.path.join('out', 'bench_vs_torch')


def log(message):
    print(f'[{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S}] {message}', file=sys.stderr, flush=True)


def peer_env(**extra):
    """This environment without the variables that hold OpenBLAS to its AVX2 kernels."""
    env = {k: v for k, v in os.environ.items() if k not in ('OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE')}
    env.update(extra)
    return env


def run(cmd, env=None, stdin_text=None):
    proc = subprocess.run(cmd, cwd=ROOT, env=env, input=stdin_text, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        tail = '\n'.join(proc.stderr.strip().splitlines()[-5:])
        sys.exit(f'bench_vs_torch: {" ".join(cmd)} failed (exit {proc.returncode}):\n{tail}')
    return proc


def run_json(cmd, env=None):
    """The JSON object on the last line of cmd's output."""
    lines = run(cmd, env).stdout.strip().splitlines()
    return json.loads(lines[-1])


def config_path(name):
    return os.path.join('configs', name + '.json')


def gpt_bench(name, iters, dtype):
    return run_json([GPT, 'bench', '--config', config_path(name), '--iters', str(iters), '--warmup', '1', '--json',
                     '--dtype', dtype])


def torch_train(name, iters, choice, extra=()):
    """nanogpt_train.py in PyTorch 2.6 as `choice` says (mode, attention, threads)."""
    how, dtype = choice['mode'].split('-')
    env = PASSIVE if choice['threads'] > 1 else []
    cmd = PEER + env + ['python3', 'tools/nanogpt_train.py', config_path(name), '--json', '--dtype', dtype,
                        '--attention', choice['attention'], '--threads', str(choice['threads'])]
    cmd += ['--compile'] if how == 'compile' else []
    cmd += ['--no_eval', '--max_iters', str(iters)] if iters else []
    return run_json(cmd + list(extra))


def choose_gpt(name, iters):
    runs = {dtype: gpt_bench(name, iters, dtype) for dtype in ('float32', 'bfloat16')}
    for dtype, r in runs.items():
        log(f'{name}: gpt {dtype} ({r["kernel"]}) {r["median_ms_per_iter"]:.1f} ms/iter')
    return max(runs, key=lambda d: runs[d]['tokens_per_s']), runs


def choose_torch(name, iters):
    """Every mode with each attention path on 2 threads, then the best on 1 thread."""
    tried = []
    for attention in ('sdpa', 'manual'):
        out = run_json(PEER + PASSIVE + ['python3', 'tools/torch_modes.py', config_path(name), '--max_iters',
                                         str(iters), '--threads', '2', '--attention', attention, '--json'])
        for mode, r in out['modes'].items():
            tried.append(dict(mode=mode, attention=attention, threads=2, result=r))
            log(f'{name}: PyTorch {mode} {attention} 2 threads: ' +
                (r['skipped'] if 'skipped' in r else f'{r["median_ms_per_iter"]:.1f} ms/iter'))
    ran = [t for t in tried if 'skipped' not in t['result']]
    if not ran:
        sys.exit(f'bench_vs_torch: no PyTorch mode ran on {name}')
    best = min(ran, key=lambda t: t['result']['median_ms_per_iter'])
    one = dict(best, threads=1)
    one['result'] = torch_train(name, iters, one)
    log(f'{name}: PyTorch {one["mode"]} {one["attention"]} 1 thread: {one["result"]["median_ms_per_iter"]:.1f} ms/iter')
    tried.append(one)
    return min([best, one], key=lambda t: t['result']['median_ms_per_iter']), tried


def describe(choice):
    return f'{choice["mode"]}, {choice["attention"]} attention, {choice["threads"]} thread(s)'


def training(rounds, full_run):
    rows, mode_rows, chosen = [], [], {}
    for name, iters in RECIPES:
        ours_dtype, ours_runs = choose_gpt(name, iters)
        theirs, tried = choose_torch(name, iters)
        chosen[name] = theirs
        for dtype, r in ours_runs.items():
            mode_rows.append(f'| {name} | gpt | {dtype} ({r["kernel"]}) | 2 | {r["median_ms_per_iter"]:.1f} | '
                             f'{r["tokens_per_s"]:.0f} |')
        for t in tried:
            r = t['result']
            timing = ('skipped: ' + r['skipped'], '') if 'skipped' in r else (
                f'{r["median_ms_per_iter"]:.1f}', f'{r["tokens_per_s"]:.0f}')
            mode_rows.append(f'| {name} | PyTorch {t["mode"]}, {t["attention"]} | | {t["threads"]} | {timing[0]} | '
                             f'{timing[1]} |')
        ours, peer = [], []
        for i in range(rounds):
            ours.append(gpt_bench(name, iters, ours_dtype))
            peer.append(torch_train(name, iters, theirs))
            log(f'{name} round {i + 1}/{rounds}: gpt {ours[-1]["median_ms_per_iter"]:.1f}, PyTorch '
                f'{peer[-1]["median_ms_per_iter"]:.1f} ms/iter')
        ratios = [o['tokens_per_s'] / p['tokens_per_s'] for o, p in zip(ours, peer)]
        median = statistics.median
        rows.append(f'| {name} training tokens/s: gpt {ours_dtype} against PyTorch 2.6 {describe(theirs)} | '
                    f'{median(o["tokens_per_s"] for o in ours):.0f} | {median(p["tokens_per_s"] for p in peer):.0f} | '
                    f'{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |')
        rows.append(f'| {name} peak RSS MiB (same runs) | {median(o["peak_rss_mib"] for o in ours):.0f} | '
                    f'{median(p["peak_rss_mib"] for p in peer):.0f} | '
                    f'{median(o["peak_rss_mib"] for o in ours) / median(p["peak_rss_mib"] for p in peer):.2f}x |')
    print(f'\nEach side\'s modes, one run each (median ms/iter of {", ".join(f"{i} iterations of {n}" for n, i in RECIPES)}'
          '; PyTorch 2 threads with OMP_WAIT_POLICY=PASSIVE):\n')
    print('| recipe | side, mode | dtype (kernel) | threads | ms/iter | tokens/s |\n| --- | --- | --- | --- | --- | --- |')
    print('\n'.join(mode_rows))
    print(f'\nBest against best, medians of {rounds} alternating rounds (ratio: median of the rounds\' ratios, '
          'and their range):\n')
    print('| measure | gpt | PyTorch 2.6 | ratio |\n| --- | --- | --- | --- |')
    print('\n'.join(rows))
    if full_run:
        print(full_cpu_recipe(chosen['shakespeare_char_cpu']))


def full_cpu_recipe(theirs):
    """The CPU recipe's whole run (2000 iterations with evaluations), wall time and final loss."""
    log('full CPU-recipe runs')
    out_dir = os.path.join(WORK, 'full_gpt')
    start = datetime.datetime.now()
    run([GPT, 'train', '--config', config_path('shakespeare_char_cpu'), '--out_dir', out_dir, '--quiet'])
    ours_wall = (datetime.datetime.now() - start).total_seconds()
    with open(os.path.join(ROOT, out_dir, 'metrics.jsonl')) as f:
        evals = [json.loads(line) for line in f if '"type":"eval"' in line]
    peer = torch_train('shakespeare_char_cpu', 0, theirs)
    return (f'| shakespeare_char_cpu full run (2000 iterations with evals), wall s; gpt as configured (float32), '
            f'PyTorch {describe(theirs)} | '
            f'{ours_wall:.0f} | {peer["wall_seconds"]:.0f} | {ours_wall / peer["wall_seconds"]:.2f}x |\n'
            f'| shakespeare_char_cpu final val loss (eval_iters 20) | {evals[-1]["val_loss"]:.4f} | '
            f'{peer["final_val_loss"]:.4f} | |')


def gpt_sample_tokens_per_s(checkpoint, n, samples, shift):
    """The generation loop's tokens/s as gpt sample logs it (model loading excluded)."""
    proc = run([GPT, 'sample', '--out_dir', checkpoint, '--max_new_tokens', str(n), '--num_samples', str(samples),
                '--context_shift', str(shift)])
    for line in proc.stderr.splitlines():
        if ' tokens in ' in line and 'tokens/s' in line:
            return float(line.split(' tokens/s')[0].split()[-1])
    sys.exit(f'bench_vs_torch: no tokens/s line in gpt sample\'s log:\n{proc.stderr}')


def sampling():
    checkpoint = os.path.join(WORK, 'sample_model')
    if not os.path.exists(os.path.join(ROOT, checkpoint, 'model.safetensors')):
        run([GPT, 'train', '--config', config_path('shakespeare_char_cpu'), '--out_dir', checkpoint, '--max_iters',
             '200', '--eval_interval', '200', '--quiet'])
    modes = [('sampling tokens/s, 500 new tokens, exact mode', 500, 1, 0),
             ('sampling tokens/s, 500 new tokens, --context_shift 32 (PyTorch: exact)', 500, 1, 32),
             ('sampling tokens/s, 20 samples x 60 tokens (fits in block_size)', 60, 20, 0)]
    print('\nSampling (gpt: median of 3 runs; PyTorch 2.6: nanoGPT\'s loop, eager float32, the better of 1 thread '
          'and 2 with OMP_WAIT_POLICY=PASSIVE):\n')
    print('| measure | gpt | PyTorch 2.6 | ratio |\n| --- | --- | --- | --- |')
    for what, n, samples, shift in modes:
        log(what)
        ours = statistics.median(gpt_sample_tokens_per_s(checkpoint, n, samples, shift) for _ in range(3))
        cmd = ['python3', 'tools/nanogpt_sample.py', os.path.join(checkpoint, 'model.safetensors'),
               '--max_new_tokens', str(n), '--num_samples', str(samples)]
        theirs = max(run_json(PEER + cmd + ['--threads', '1'])['tokens_per_s'],
                     run_json(PEER + PASSIVE + cmd + ['--threads', '2'])['tokens_per_s'])
        print(f'| {what} | {ours:.0f} | {theirs:.0f} | {ours / theirs:.2f}x |', flush=True)


def gemm(rounds):
    log('GEMM')
    lines = run([os.path.join('build', 'gemm_bench'), str(rounds)],
                env=peer_env(OPENBLAS_NUM_THREADS=str(os.cpu_count()))).stdout
    lines = run(PEER + ['python3', 'tools/torch_matmul_bench.py'], stdin_text=lines).stdout
    print(f'\nGEMM, {os.cpu_count()} threads, GFLOP/s: ours against OpenBLAS cblas_sgemm in float32 (medians of '
          f'{rounds} alternating rounds; the ratio is the median of the rounds\' ratios, and their range), and ours '
          'with bfloat16 inputs against the peak of the instruction its kernel runs on (VDPBF16PS or FMA) and against '
          'PyTorch 2.6\'s bfloat16 torch.matmul; "C +=" marks a weight gradient, which gpt and OpenBLAS (beta = 1) '
          'accumulate into C as training does, and torch.matmul does not:\n')
    print('| shape | M x N x K | gpt | OpenBLAS | gpt / OpenBLAS | gpt / float32 peak | gpt bfloat16 (kernel) | '
          'bfloat16 / its peak | PyTorch bfloat16 | gpt bfloat16 / PyTorch |')
    print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    cores = set()
    for line in lines.strip().splitlines():
        d = json.loads(line)
        cores.add((d['openblas_core'], d['torch_openblas_core']))
        shape = d['shape'] + (' (C +=)' if d['accumulate'] else '')
        print(f"| {shape} | {d['M']} x {d['N']} x {d['K']} | {d['ours_gflops']:.0f} | {d['openblas_gflops']:.0f} | "
              f"{d['ratio']:.2f} ({d['ratio_min']:.2f}-{d['ratio_max']:.2f}) | "
              f"{100 * d['ours_gflops'] / d['fp32_peak_gflops']:.0f}% of {d['fp32_peak_gflops']:.0f} | "
              f"{d['bf16_gflops']:.0f} ({d['bf16_kernel']}) | "
              f"{100 * d['bf16_gflops'] / d['bf16_peak_gflops']:.0f}% of {d['bf16_peak_gflops']:.0f} | "
              f"{d['torch_bf16_gflops']:.0f} | {d['bf16_gflops'] / d['torch_bf16_gflops']:.2f} |")
    for ours, torch in sorted(cores):
        print(f'\nOpenBLAS ran its {ours} kernels (gemm_bench); PyTorch 2.6\'s OpenBLAS: {torch}.')


def header():
    model = run(['lscpu']).stdout
    model = next((line.split(':', 1)[1].strip() for line in model.splitlines() if line.startswith('Model name')), '?')
    peer = run(PEER + ['python3', '-c', 'import sys, torch; sys.path.insert(0, "tools"); '
                       'from blas_core import openblas_core; print(torch.__version__, openblas_core())']).stdout.split()
    kernels = {d: gpt_bench('shakespeare_char_cpu', 1, d)['kernel'] for d in ('float32', 'bfloat16')}
    gib = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30
    print(f'date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, machine: {model}, '
          f'{os.cpu_count()} cores, {gib:.0f} GiB')
    print(f'peer: PyTorch {peer[0]} (Debian 13, tools/torch_peer.sh), OpenBLAS kernels {peer[1]} '
          '(OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset)')
    print(f'gpt kernels: float32 {kernels["float32"]}, bfloat16 {kernels["bfloat16"]}')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    part = ap.add_mutually_exclusive_group()
    part.add_argument('--quick', action='store_true', help='skip the full CPU-recipe training runs')
    part.add_argument('--training', action='store_true', help='only the training rows and the GEMMs')
    part.add_argument('--gemm', action='store_true', help='only the GEMMs')
    ap.add_argument('--rounds', type=int, default=3, help='alternating rounds of the best modes and of the GEMMs')
    args = ap.parse_args()
    os.makedirs(os.path.join(ROOT, WORK), exist_ok=True)
    header()
    if not args.gemm:
        training(args.rounds, full_run=not (args.quick or args.training))
    if not (args.gemm or args.training):
        sampling()
    gemm(max(args.rounds, 3))


if __name__ == '__main__':
    main()
