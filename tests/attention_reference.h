// Causal self-attention written the textbook way from primitive ops, exactly as nanoGPT's
// CausalSelfAttention.forward does it; the fused op is tested against it.
#pragma once

#include <cmath>

#include "ops/ops.h"

namespace gpt::testing {

// qkv: [B, T, (H + 2 KV) hs] -> [B, T, H hs]. Grouped-query attention (n_kv_head < n_head) as
// PyTorch references write it: each kv head repeated for the H / KV query heads of its group.
inline Tensor attention_from_primitives(Graph& g, const Tensor& qkv, int n_head, int n_kv_head = 0) {
  if (n_kv_head == 0) n_kv_head = n_head;
  const int64_t B = qkv.shape[0], T = qkv.shape[1], hs = qkv.shape[2] / (n_head + 2 * n_kv_head), C = n_head * hs;
  auto parts = split_last(g, qkv, {C, n_kv_head * hs, n_kv_head * hs});
  auto repeat_kv = [&](const Tensor& x) {
    if (n_kv_head == n_head) return x;
    const std::vector<Tensor> kv = split_last(g, x, std::vector<int64_t>(static_cast<std::size_t>(n_kv_head), hs));
    std::vector<Tensor> repeated;
    for (int h = 0; h < n_head; ++h) repeated.push_back(kv[static_cast<std::size_t>(h / (n_head / n_kv_head))]);
    return concat_last(g, repeated);
  };
  auto heads = [&](const Tensor& x) { return transpose(g, reshape(x, Shape{B, T, n_head, hs}), 1, 2); };
  Tensor q = heads(parts[0]), k = heads(repeat_kv(parts[1])), v = heads(repeat_kv(parts[2]));     // [B, H, T, hs]
  Tensor att = scale(g, matmul(g, q, k, false, true), 1.0f / std::sqrt(static_cast<float>(hs)));  // [B, H, T, T]
  att = softmax(g, causal_mask_fill(g, att, -INFINITY));
  Tensor y = matmul(g, att, v);  // [B, H, T, hs]
  return reshape(transpose(g, y, 1, 2), Shape{B, T, C});
}

}  // namespace gpt::testing
