// The GPT architecture, written once. run_gpt() says which ops run in which order on which
// weights; an executor says how each op runs. Two executors exist:
//   TapeExecutor (model/gpt.cpp)       training and evaluation: differentiable ops on the tape;
//   StepExecutor (sample/generator.cpp) KV-cached generation: kernels inside one OpenMP region,
//                                       split by rows or by columns, last rows only at the end.
// An executor provides a Value type and these steps:
//   embed(wte, wpe, wbe)              token + position + bigram embeddings (then dropout in
//                                     training); wpe absent with RoPE, wbe without
//                                     bigram_embedding (its row: config.bigram_row())
//   norm_linear(x, norm, linear)      norm(x) W^T + b (layernorm or rmsnorm: norm.kind)
//   value_embed(qkv, ve)              v + ve[token] in each row's v (value embeddings)
//   qk_norm(qkv)                      weightless RMSNorm over each q and k head (QK-norm)
//   rope(qkv)                         rotary position embeddings on each q and k head, at each
//                                     row's position in its sequence
//   attention(qkv, layer)             causal multi-head self-attention over packed q|k|v
//                                     (grouped-query when config.kv_heads() < n_head)
//   residual(x, in, act, linear)      x + dropout(act(in) W^T + b), x's storage reused
//   softcap(logits, cap)              cap * tanh(logits / cap) (only with config.logit_softcap > 0)
// A new position encoding, norm or activation is a change here plus its kernel (and each
// executor's step if it is a new kind of step); the tests that compare the two executors
// (KV cache = recomputation) then cover it on both paths.
#pragma once

#include <cstdint>

#include "kernels/activation.h"
#include "model/gpt_config.h"
#include "model/gpt_weights.h"

namespace gpt {

// Returns the logits value. Position information enters once: in embed (learned absolute
// positions, as GPT-2) or, with pos_encoding rope, in every attention's q and k.
template <class Executor>
typename Executor::Value run_gpt(const GptConfig& config, const GptWeights& w, Executor& ex) {
  typename Executor::Value x = ex.embed(w.wte, w.wpe, w.wbe);
  for (int64_t l = 0; l < config.n_layer; ++l) {
    const BlockWeights& b = w.blocks[static_cast<std::size_t>(l)];
    // Pre-norm block: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
    typename Executor::Value qkv = ex.norm_linear(x, b.ln_1, b.c_attn);
    if (config.value_embeddings && l > 0) qkv = ex.value_embed(qkv, b.ve);  // block 0 has none
    if (config.qk_norm) qkv = ex.qk_norm(qkv);                              // before RoPE, as modded-nanogpt
    if (config.pos_encoding == PosEncoding::rope) qkv = ex.rope(qkv);
    const typename Executor::Value attended = ex.attention(qkv, l);
    x = ex.residual(x, attended, Activation::none, b.attn_proj);
    const typename Executor::Value hidden = ex.norm_linear(x, b.ln_2, b.c_fc);
    x = ex.residual(x, hidden, config.mlp, b.mlp_proj);  // gelu (nanoGPT), relu2 or swiglu
  }
  // lm_head is wte's tensor (tie_embeddings, GPT-2) or a weight of its own.
  const typename Executor::Value logits = ex.norm_linear(x, w.ln_f, w.lm_head);
  if (config.logit_softcap > 0) return ex.softcap(logits, static_cast<float>(config.logit_softcap));
  return logits;
}

}  // namespace gpt
