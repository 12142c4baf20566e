"""Writes tests/data/muon_reference.safetensors: a few Muon steps in PyTorch, float32, on small
matrices, for tests/test_optimizers.cpp (MuonReference.*) to compare ours with.

Muon is modded-nanogpt's (Keller Jordan's train_gpt.py, Oct 2024: `Muon` and
`zeropower_via_newtonschulz5`), with three changes that keep the arithmetic ours: float32 where the
speedrun runs Newton-Schulz in bfloat16; the Nesterov update as `g + momentum * buf` (PyTorch's
`g.add(buf, alpha=momentum)` fuses the multiply-add on vector lanes only); and the step as
`p - (lr * scale) * X`, the scale formed in Python (double) as ours is. Only the matrix products
then sum in another order than our GEMM's.

Usage: /usr/bin/python3 tools/muon_reference.py [out_path]   (torch and numpy, nothing else)
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

A, B, C = 3.4445, -4.7750, 2.0315
MOMENTUM = 0.95
LRS = [0.02, 0.015, 0.01]  # Muon's learning rate at each step
# Parameter names as the model's (Muon's rule picks block matrices by name and rank); tall (rows >
# cols, orthogonalised transposed), wide and square.
SHAPES = {
    'transformer.h.0.mlp.c_fc.weight': (24, 8),
    'transformer.h.0.mlp.c_proj.weight': (8, 24),
    'transformer.h.1.attn.c_proj.weight': (12, 12),
}


def zeropower_via_newtonschulz5(G, steps=5, eps=1e-7):
    assert len(G.shape) == 2
    X = G.float()
    X = X / (X.norm() + eps)  # ensure top singular value <= 1
    if G.size(0) > G.size(1):
        X = X.T
    for _ in range(steps):
        A_ = X @ X.T
        B_ = B * A_ + C * A_ @ A_  # (C * A) @ A, as Python's precedence reads it
        X = A * X + B_ @ X
    if G.size(0) > G.size(1):
        X = X.T
    return X


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'tests', 'data',
                                                            'muon_reference.safetensors')
    torch.manual_seed(0)
    tensors = {}
    params = {name: torch.randn(shape) * 0.2 for name, shape in SHAPES.items()}
    buffers = {name: torch.zeros(shape) for name, shape in SHAPES.items()}
    for name, p in params.items():
        tensors['param.' + name] = p.clone()
        g = torch.randn(p.shape)
        tensors['ns_in.' + name] = g
        tensors['ns_out.' + name] = zeropower_via_newtonschulz5(g)
    for step, lr in enumerate(LRS):
        for name, p in params.items():
            g = torch.randn(p.shape)
            if step == 1:
                g = g * 3.0  # a larger gradient: the normalisation must not care
            buf = buffers[name]
            buf.mul_(MOMENTUM).add_(g)
            update = g + MOMENTUM * buf  # Nesterov
            X = zeropower_via_newtonschulz5(update)
            scale = lr * max(1, p.size(0) / p.size(1))**0.5
            params[name] = p - scale * X
            tensors[f'grad.{step}.{name}'] = g
            tensors[f'after.{step}.{name}'] = params[name].clone()
            tensors[f'momentum_buffer.{step}.{name}'] = buf.clone()
    metadata = {'momentum': repr(MOMENTUM), 'lrs': json.dumps(LRS), 'torch': torch.__version__}
    safetensors_io.save(out, {k: v.numpy() for k, v in tensors.items()}, metadata)
    print(f'wrote {out}: {len(SHAPES)} matrices, {len(LRS)} steps')


if __name__ == '__main__':
    main()
