#!/usr/bin/python3
"""nanoGPT's train.py loop on one of our JSON configs, with Debian's PyTorch, for side-by-side
reference figures (val loss, wall time, ms/iter, tokens/s, peak RSS). Faithful to nanoGPT:
torch.manual_seed(seed), get_batch with torch.randint, estimate_loss in eval mode, AdamW groups,
warmup + cosine lr, clip_grad_norm_, iterations 0..max_iters with an eval every eval_interval.

    /usr/bin/python3 tools/nanogpt_train.py configs/shakespeare_char_cpu.json [--threads N]
        [--max_iters N] [--json] [--dtype float32|bfloat16] [--compile] [--attention auto|sdpa|manual]

--dtype bfloat16 runs forward and loss under torch.autocast("cpu", dtype=torch.bfloat16), as
nanoGPT's train.py does with dtype = 'bfloat16' (its ctx), float32 master weights. --compile
trains torch.compile(model), as nanoGPT's compile = True (PyTorch 2; on 1.13 it stops with an
error); the first iteration, which compiles, is left out of the median (first_iter_s reports it).
tools/torch_modes.py runs the four modes (eager or compiled, float32 or bfloat16) and picks the best.
"""
import contextlib
import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from blas_core import openblas_core  # noqa: E402
from nanogpt_model import GPT, GPTConfig, get_lr  # noqa: E402

DEFAULTS = dict(val_fraction=0.1, n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2, bias=False,
                batch_size=64, max_iters=5000, eval_interval=250, eval_iters=200, log_interval=10,
                learning_rate=1e-3, decay_lr=True, warmup_iters=100, lr_decay_iters=5000, min_lr=1e-4,
                weight_decay=0.1, beta1=0.9, beta2=0.99, grad_clip=1.0, gradient_accumulation_steps=1, seed=1337)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('config')
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--max_iters', type=int)
    ap.add_argument('--no_eval', action='store_true', help='skip evaluations (throughput runs)')
    ap.add_argument('--json', action='store_true')
    ap.add_argument('--save', help='write the final model as a gpt-compatible model.safetensors')
    ap.add_argument('--seed', type=int)
    ap.add_argument('--dtype', choices=['float32', 'bfloat16'], default='float32')
    ap.add_argument('--compile', action='store_true', help='train torch.compile(model) (PyTorch 2)')
    ap.add_argument('--attention', choices=['auto', 'sdpa', 'manual'], default='auto',
                    help='auto: F.scaled_dot_product_attention when torch has it, else the masked softmax')
    args = ap.parse_args()
    if args.compile and not hasattr(torch, 'compile'):
        sys.exit(f'--compile: torch {torch.__version__} has no torch.compile (PyTorch 2 has; tools/torch_peer.sh)')
    ctx = torch.autocast('cpu', dtype=torch.bfloat16) if args.dtype == 'bfloat16' else contextlib.nullcontext()
    cfg = dict(DEFAULTS)
    with open(args.config) as f:
        cfg.update({k: v for k, v in json.load(f).items() if k in DEFAULTS or k == 'data_path'})
    if args.seed is not None:
        cfg['seed'] = args.seed
    if args.max_iters is not None:
        cfg['max_iters'] = args.max_iters
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(cfg['seed'])

    with open(cfg['data_path'], encoding='utf-8') as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    n = int(len(data) * (1 - cfg['val_fraction']))
    splits = {'train': torch.from_numpy(data[:n]), 'val': torch.from_numpy(data[n:])}
    B, T = cfg['batch_size'], cfg['block_size']

    def get_batch(split):
        d = splits[split]
        ix = torch.randint(len(d) - T, (B,))
        x = torch.stack([d[i:i + T] for i in ix])
        y = torch.stack([d[i + 1:i + 1 + T] for i in ix])
        return x, y

    model = GPT(GPTConfig(block_size=T, vocab_size=len(chars), n_layer=cfg['n_layer'], n_head=cfg['n_head'],
                          n_embd=cfg['n_embd'], dropout=cfg['dropout'], bias=cfg['bias'], attention=args.attention))
    optimizer = model.configure_optimizers(cfg['weight_decay'], cfg['learning_rate'], (cfg['beta1'], cfg['beta2']))
    raw_model = model
    if args.compile:
        model = torch.compile(model)  # as nanoGPT, after the optimizer is made from the raw model

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ('train', 'val'):
            losses = torch.zeros(cfg['eval_iters'])
            for k in range(cfg['eval_iters']):
                x, y = get_batch(split)
                with ctx:
                    _, loss = model(x, y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    evals, step_times = [], []
    start = time.time()
    x, y = get_batch('train')
    it = 0
    while True:
        lr = get_lr(it, cfg['learning_rate'], cfg['warmup_iters'], cfg['lr_decay_iters'], cfg['min_lr']) \
            if cfg['decay_lr'] else cfg['learning_rate']
        for group in optimizer.param_groups:
            group['lr'] = lr
        if it % cfg['eval_interval'] == 0 and not args.no_eval:
            losses = estimate_loss()
            evals.append((it, losses['train'], losses['val']))
            if not args.json:
                print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}", flush=True)
        t0 = time.time()
        for _ in range(cfg['gradient_accumulation_steps']):
            with ctx:
                _, loss = model(x, y)
            loss = loss / cfg['gradient_accumulation_steps']
            x, y = get_batch('train')
            loss.backward()
        if cfg['grad_clip'] != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg['grad_clip'])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step_times.append(time.time() - t0)
        if it % cfg['log_interval'] == 0 and not args.json:
            print(f"iter {it}: loss {loss.item() * cfg['gradient_accumulation_steps']:.4f}, "
                  f"time {step_times[-1] * 1000:.2f}ms", flush=True)
        it += 1
        if it > cfg['max_iters']:
            break
    wall = time.time() - start
    if args.save:
        import safetensors_io
        from nanogpt_model import state_dict_without_tied
        model_config = dict(n_layer=cfg['n_layer'], n_head=cfg['n_head'], n_embd=cfg['n_embd'], block_size=T,
                            vocab_size=len(chars), dropout=cfg['dropout'], bias=cfg['bias'])
        safetensors_io.save(args.save, {k: v.detach().numpy() for k, v in state_dict_without_tied(raw_model).items()},
                            {'format': 'pt', 'config': json.dumps(model_config), 'vocab': json.dumps(chars)})
    ms = float(np.median(step_times[1:] if len(step_times) > 1 else step_times)) * 1000
    result = dict(final_val_loss=evals[-1][2] if evals else None, evals=evals, wall_seconds=wall,
                  median_ms_per_iter=ms, tokens_per_s=B * T * cfg['gradient_accumulation_steps'] / ms * 1000,
                  peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  threads=torch.get_num_threads(), openblas_core=openblas_core(), torch=torch.__version__,
                  mode=('compile' if args.compile else 'eager') + '-' + args.dtype,
                  attention='sdpa' if raw_model.transformer.h[0].attn.flash else 'manual',
                  first_iter_s=step_times[0])
    print(json.dumps(result) if args.json else
          f"final val loss {result['final_val_loss']}, wall {wall:.1f} s, median {ms:.1f} ms/iter, "
          f"peak RSS {result['peak_rss_mib']:.0f} MiB, {result['threads']} threads, "
          f"OpenBLAS {result['openblas_core']}, torch {result['torch']} {result['mode']}, "
          f"attention {result['attention']}")


if __name__ == '__main__':
    main()
