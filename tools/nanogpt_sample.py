#!/usr/bin/python3
"""nanoGPT's sample.py generation loop (no KV cache: a full forward over the cropped context for
every new token) on a gpt checkpoint (model.safetensors), with Debian's PyTorch, for the
side-by-side sampling benchmark. Prints JSON: tokens, seconds, tokens_per_s, threads.

    /usr/bin/python3 tools/nanogpt_sample.py out/shakespeare_char_cpu/model.safetensors \
        --max_new_tokens 500 --num_samples 1 [--threads N] [--prompt TEXT]
"""
import argparse
import json
import os
import sys
import time

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io  # noqa: E402
from blas_core import openblas_core  # noqa: E402
from nanogpt_model import GPT, GPTConfig  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('checkpoint')
    ap.add_argument('--prompt', default='\n')
    ap.add_argument('--max_new_tokens', type=int, default=500)
    ap.add_argument('--num_samples', type=int, default=1)
    ap.add_argument('--temperature', type=float, default=0.8)
    ap.add_argument('--top_k', type=int, default=200)
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--seed', type=int, default=1337)
    ap.add_argument('--show', action='store_true', help='print the text too')
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tensors, meta = safetensors_io.load(args.checkpoint)
    config = json.loads(meta['config'])
    chars = json.loads(meta['vocab'])
    # every architecture key the checkpoint records (norm, mlp, pos_encoding, n_kv_head, ...)
    arch = {k: v for k, v in config.items() if k in GPTConfig.__dataclass_fields__ and k != 'dropout'}
    model = GPT(GPTConfig(**arch, dropout=0.0))
    state = {k: torch.from_numpy(v) for k, v in tensors.items()}
    state.setdefault('lm_head.weight', state['transformer.wte.weight'])  # tied unless stored
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(k.endswith('.attn.bias') for k in missing), (missing, unexpected)
    model.eval()
    stoi = {c: i for i, c in enumerate(chars)}
    block_size = config['block_size']

    @torch.no_grad()
    def generate(idx):
        for _ in range(args.max_new_tokens):
            idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
            logits, _ = model(idx_cond)
            logits = logits[:, -1, :] / args.temperature
            v, _ = torch.topk(logits, min(args.top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx

    x = torch.tensor([[stoi[c] for c in args.prompt]], dtype=torch.long)
    start = time.time()
    for _ in range(args.num_samples):
        y = generate(x)
        if args.show:
            print(''.join(chars[i] for i in y[0].tolist()))
            print('---------------')
    seconds = time.time() - start
    tokens = args.max_new_tokens * args.num_samples
    print(json.dumps(dict(tokens=tokens, seconds=seconds, tokens_per_s=tokens / seconds, threads=torch.get_num_threads(),
                          openblas_core=openblas_core())))


if __name__ == '__main__':
    main()
