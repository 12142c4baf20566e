// Causal self-attention written the textbook way from primitive ops, exactly as nanoGPT's
// CausalSelfAttention.forward does it; the fused op is tested against it.
#pragma once

#include <cmath>

#include "ops/ops.h"

namespace gpt::testing {

// qkv: [B, T, 3C] -> [B, T, C]
inline Tensor attention_from_primitives(Graph& g, const Tensor& qkv, int n_head) {
  const int64_t B = qkv.shape[0], T = qkv.shape[1], C = qkv.shape[2] / 3, hs = C / n_head;
  auto parts = split_last(g, qkv, {C, C, C});
  auto heads = [&](const Tensor& x) { return transpose(g, reshape(x, Shape{B, T, n_head, hs}), 1, 2); };
  Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);                           // [B, H, T, hs]
  Tensor att = scale(g, matmul(g, q, k, false, true), 1.0f / std::sqrt(static_cast<float>(hs)));  // [B, H, T, T]
  att = softmax(g, causal_mask_fill(g, att, -INFINITY));
  Tensor y = matmul(g, att, v);  // [B, H, T, hs]
  return reshape(transpose(g, y, 1, 2), Shape{B, T, C});
}

}  // namespace gpt::testing
