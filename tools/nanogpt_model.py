"""nanoGPT's GPT model (model.py), restated for our reference scripts.

Same modules, parameter names and initialisation as karpathy/nanoGPT. Attention is nanoGPT's:
F.scaled_dot_product_attention(..., is_causal=True) when torch has it (2.0 and later), else the
explicit masked softmax, which PyTorch 1.13 runs and GPTConfig(attention='manual') forces (the
parity references, tools/make_parity_reference.py). Used only by tools/ scripts run with Debian's
python3-torch (Debian 12's 1.13, or 2.6 through tools/torch_peer.sh): never by the gpt binary.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    block_size: int = 256
    vocab_size: int = 65
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    dropout: float = 0.0
    bias: bool = False
    norm: str = 'layernorm'  # or 'rmsnorm' (no bias)
    mlp: str = 'gelu'  # or 'relu2': relu(x)^2, or 'swiglu': silu(x W_gate) * (x W_up)
    # attention (issue 22): rotary positions instead of wpe, grouped-query attention, QK-norm
    pos_encoding: str = 'learned'  # or 'rope' (GPT-NeoX/llama rotate-half; no wpe)
    rope_theta: float = 10000.0
    n_kv_head: int = 0  # 0: n_head
    qk_norm: bool = False  # weightless RMSNorm over each q and k head, before RoPE
    mlp_hidden: int = 0  # 0: 4 n_embd, for swiglu the multiple of 32 nearest to 8 n_embd / 3
    tie_embeddings: bool = True  # False: lm_head.weight of its own
    logit_softcap: float = 0.0  # > 0: logits = cap * tanh(logits / cap)
    bigram_embedding: bool = False  # wbe[(previous or V) * V + token] added to the token embedding
    value_embeddings: bool = False  # blocks 1.. add ve.<layer>[token] to v
    attention: str = 'auto'  # 'sdpa': F.scaled_dot_product_attention, 'manual': masked softmax, 'auto': sdpa if any

    def mlp_width(self):
        if self.mlp_hidden > 0:
            return self.mlp_hidden
        if self.mlp == 'swiglu':
            return max(32, (8 * self.n_embd + 48) // 96 * 32)
        return 4 * self.n_embd


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019); PyTorch 1.13 has no nn.RMSNorm."""
    def __init__(self, ndim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


def make_norm(config):
    return RMSNorm(config.n_embd) if config.norm == 'rmsnorm' else LayerNorm(config.n_embd, bias=config.bias)


def rope_tables(block_size, head_size, theta):
    """cos, sin [block_size, head_size]: pair (i, i + hs/2) turns by pos * theta^(-2i/hs); in float64,
    rounded once to float32, as gpt's make_rope_table."""
    freq = theta ** (-2.0 * torch.arange(head_size // 2, dtype=torch.float64) / head_size)
    angle = torch.outer(torch.arange(block_size, dtype=torch.float64), freq)
    angle = torch.cat([angle, angle], dim=-1)
    return torch.cos(angle).float(), torch.sin(angle).float()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def head_rms_norm(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_kv_head = config.n_kv_head or config.n_head
        assert config.n_head % self.n_kv_head == 0
        hs = config.n_embd // config.n_head
        self.kv_width = self.n_kv_head * hs
        self.qk_norm = config.qk_norm
        self.rope = config.pos_encoding == 'rope'
        if self.rope:
            cos, sin = rope_tables(config.block_size, hs, config.rope_theta)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        self.c_attn = nn.Linear(config.n_embd, config.n_embd + 2 * self.kv_width, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        has_sdpa = hasattr(F, 'scaled_dot_product_attention')
        assert config.attention in ('auto', 'sdpa', 'manual'), config.attention
        assert config.attention != 'sdpa' or has_sdpa, f'torch {torch.__version__} has no scaled_dot_product_attention'
        self.flash = config.attention == 'sdpa' or (config.attention == 'auto' and has_sdpa)
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))

    def forward(self, x, ve=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split([self.n_embd, self.kv_width, self.kv_width], dim=2)
        if ve is not None:  # value embeddings: the token's row added to v, before the head split
            v = v + ve
        k = k.view(B, T, self.n_kv_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_kv_head, C // self.n_head).transpose(1, 2)
        if self.qk_norm:
            q, k = head_rms_norm(q), head_rms_norm(k)
        if self.rope:
            cos, sin = self.rope_cos[:T], self.rope_sin[:T]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if self.n_kv_head != self.n_head:  # grouped-query: each kv head serves n_head / n_kv_head query heads
            k = k.repeat_interleave(self.n_head // self.n_kv_head, dim=1)
            v = v.repeat_interleave(self.n_head // self.n_kv_head, dim=1)
        if self.flash:  # as nanoGPT: fused attention (flash or memory-efficient kernels)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                                               is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class ReLU2(nn.Module):
    """relu(x)^2 (So et al. 2021, "Primer"; modded-nanogpt)."""
    def forward(self, x):
        return F.relu(x).square()


class SwiGLU(nn.Module):
    """silu(gate) * up for c_fc's output [gate | up] (Shazeer 2020; llama's MLP).

    c_fc.weight is llama's w1 (gate) and w3 (up) stacked, torch.cat([w1, w3]); c_proj is w2."""
    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = config.mlp_width()
        self.c_fc = nn.Linear(config.n_embd, 2 * hidden if config.mlp == 'swiglu' else hidden, bias=config.bias)
        self.gelu = {'gelu': nn.GELU, 'relu2': ReLU2, 'swiglu': SwiGLU}[config.mlp]()
        self.c_proj = nn.Linear(hidden, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = make_norm(config)
        self.mlp = MLP(config)

    def forward(self, x, ve=None):
        x = x + self.attn(self.ln_1(x), ve)
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        modules = dict(wte=nn.Embedding(config.vocab_size, config.n_embd))
        if config.pos_encoding == 'learned':  # RoPE has no position embedding
            modules['wpe'] = nn.Embedding(config.block_size, config.n_embd)
        if config.bigram_embedding:  # a row per (previous or none, token) pair
            modules['wbe'] = nn.Embedding((config.vocab_size + 1) * config.vocab_size, config.n_embd)
        if config.value_embeddings:  # blocks 1.. (block 0's input is the embedding itself)
            kv_width = (config.n_kv_head or config.n_head) * (config.n_embd // config.n_head)
            modules['ve'] = nn.ModuleDict({str(l): nn.Embedding(config.vocab_size, kv_width)
                                           for l in range(1, config.n_layer)})
        modules.update(
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=make_norm(config),
        )
        self.transformer = nn.ModuleDict(modules)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        for name, p in self.transformer.named_parameters():  # zero: the model starts as the one without them
            if name.startswith(('wbe.', 've.')):
                torch.nn.init.zeros_(p)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx)
        if self.config.pos_encoding == 'learned':
            x = x + self.transformer.wpe(pos)
        if self.config.bigram_embedding:  # the window's first position pairs with "none" (row V)
            V = self.config.vocab_size
            previous = torch.cat([torch.full_like(idx[:, :1], V), idx[:, :-1]], dim=1)
            x = x + self.transformer.wbe(previous * V + idx)
        x = self.transformer.drop(x)
        for l, block in enumerate(self.transformer.h):
            has_ve = self.config.value_embeddings and l > 0
            x = block(x, self.transformer.ve[str(l)](idx) if has_ve else None)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.softcap(self.lm_head(x))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.softcap(self.lm_head(x[:, [-1], :]))
            loss = None
        return logits, loss

    def softcap(self, logits):
        """cap * tanh(logits / cap) (Gemma 2; modded-nanogpt), or the logits unchanged."""
        cap = self.config.logit_softcap
        return cap * torch.tanh(logits / cap) if cap > 0 else logits

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        nodecay = [p for p in params.values() if p.dim() < 2]
        groups = [{'params': decay, 'weight_decay': weight_decay}, {'params': nodecay, 'weight_decay': 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)


def get_lr(it, learning_rate, warmup_iters, lr_decay_iters, min_lr):
    """nanoGPT's schedule: linear warmup, cosine decay, then min_lr."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def state_dict_without_tied(model):
    """Parameters under nanoGPT's names, without lm_head.weight when it is tied to transformer.wte.weight."""
    tied = model.config.tie_embeddings
    return {k: v for k, v in model.state_dict().items()
            if not (tied and k == 'lm_head.weight') and not k.endswith('.attn.bias')}
