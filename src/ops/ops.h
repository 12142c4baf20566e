// The closed list of differentiable ops. Each op lives in one file of this folder with its
// forward kernel, its backward kernel right below, and the wrapper declared here that checks
// shapes, takes its output from the Graph's arena and records its backward on the tape.
// Backward kernels accumulate (+=) into every gradient that is not null. The fused block ops
// (token_position_embedding, layernorm_linear, residual_projection) call the kernels of the ops
// they fuse through op_kernels.h, and are tested to give exactly their compositions' numbers.
//
// Shapes: tensors are contiguous row-major; "rows" means all leading dimensions flattened.
// An absent optional tensor (bias) is a default-constructed Tensor (data == nullptr).
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/rng.h"
#include "kernels/activation.h"
#include "kernels/dtype.h"
#include "kernels/norm.h"
#include "kernels/rope.h"

namespace gpt {

inline bool defined(const Tensor& t) { return t.data != nullptr; }

// ---- primitives ------------------------------------------------------------------------------

// op(a) op(b) over matching leading (batch) dimensions; b may also be rank 2 and shared by every
// batch. a: [..., M, K] ([..., K, M] if trans_a), b: [..., K, N] ([..., N, K] if trans_b).
Tensor matmul(Graph& g, const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// a + b and a * b where b has a's shape or a's trailing dimensions (broadcast over the leading
// ones; its gradient is then the sum over them).
Tensor add(Graph& g, const Tensor& a, const Tensor& b);
Tensor mul(Graph& g, const Tensor& a, const Tensor& b);
Tensor scale(Graph& g, const Tensor& a, float factor);

// x: [..., T, T]; entries above the diagonal (key j > query i) become `value` (e.g. -inf).
Tensor causal_mask_fill(Graph& g, const Tensor& x, float value);

// Softmax over the last axis (max subtracted first, so exp never overflows).
Tensor softmax(Graph& g, const Tensor& x);

// Inverted dropout: in training, zeroes each element with probability p and scales survivors by
// 1/(1-p); one draw from `rng` seeds a counter-based hash per element, so the mask does not depend
// on the thread count. Identity (no op recorded) when !training or p == 0.
Tensor dropout(Graph& g, const Tensor& x, float p, Rng& rng, bool training);

// dropout(wte[ids] + wpe[t]) for ids [B, T] at positions t = 0 .. T-1: GPT's input embedding,
// fused (one [B, T, C] tensor instead of three; same values and Rng draw as the composition).
Tensor token_position_embedding(Graph& g, const Tensor& wte, const Tensor& wpe, const int32_t* ids, int64_t B,
                                int64_t T, float dropout_p, Rng& rng, bool training);

// Shape ops. reshape is a view (shares data and gradient). transpose swaps two axes (a copy).
Tensor reshape(const Tensor& x, Shape shape);
Tensor transpose(Graph& g, const Tensor& x, int axis0, int axis1);
// Splits the last axis into consecutive pieces of the given sizes; concat_last is its inverse.
std::vector<Tensor> split_last(Graph& g, const Tensor& x, const std::vector<int64_t>& sizes);
Tensor concat_last(Graph& g, const std::vector<Tensor>& parts);

// Reductions to a scalar (shape ()).
Tensor sum(Graph& g, const Tensor& x);
Tensor mean(Graph& g, const Tensor& x);

// ---- fused ops -------------------------------------------------------------------------------

// x W^T + b. x: [..., in], weight: [out, in] (PyTorch's layout), bias: [out] or absent.
// `inputs` (here and in the fused projections below): the matrix products' input format, float32
// or bfloat16 (mixed precision: inputs rounded, sums, outputs and gradients in float32).
Tensor linear(Graph& g, const Tensor& x, const Tensor& weight, const Tensor& bias, Dtype inputs = Dtype::float32);

// Rows of table [V, C] picked by ids (each in [0, V)); output ids_shape + (C). Backward scatter-adds.
Tensor embedding(Graph& g, const Tensor& table, const int32_t* ids, Shape ids_shape);
// x [..., W] with row i's columns column .. column + C - 1 plus table[ids[i]] (one id per row of
// x): the value embeddings, added to v inside q|k|v without splitting it.
Tensor add_embedding_at(Graph& g, const Tensor& x, const Tensor& table, const int32_t* ids, int64_t column);

// LayerNorm over the last axis with eps 1e-5 (PyTorch's default); bias may be absent.
Tensor layernorm(Graph& g, const Tensor& x, const Tensor& weight, const Tensor& bias);

// RMSNorm over the last axis: x / sqrt(mean(x^2) + 1e-5) * weight, no bias (kernels/rmsnorm.h).
Tensor rmsnorm(Graph& g, const Tensor& x, const Tensor& weight);

// act(x) (kernels/activation.h). gelu: the exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's
// nn.GELU() default, not the tanh form). swiglu, the one gated activation: x [..., 2H] holds rows
// [gate | up], the output [..., H] is silu(gate) * up.
Tensor activate(Graph& g, const Tensor& x, Activation act);
inline Tensor gelu(Graph& g, const Tensor& x) { return activate(g, x, Activation::gelu); }
inline Tensor swiglu(Graph& g, const Tensor& x) { return activate(g, x, Activation::swiglu); }

// Causal multi-head self-attention over packed projections.
// qkv: [B, T, (H + 2 KV) hs] holding q (H heads) | k (KV heads) | v (KV heads), H = n_head,
// KV = n_kv_head (0: H). Grouped-query attention when KV < H (Ainslie et al. 2023): query head h
// uses kv head h / (H / KV). Output [B, T, H hs] with heads concatenated: softmax(q k^T /
// sqrt(hs), causal) v per head, attention dropout p on the probabilities in training. `inputs`:
// the products' input format (bfloat16: q, k, v, the probabilities and the gradients rounded as
// they are packed; the softmax and every sum in float32).
Tensor causal_self_attention(Graph& g, const Tensor& qkv, int n_head, float dropout_p, Rng& rng, bool training,
                             int n_kv_head = 0, Dtype inputs = Dtype::float32);

// The per-head transforms of packed q|k|v ([B, T, (H + 2 KV) hs], as attention takes it), applied
// to the q and k heads; v passes through unchanged.
// rope: rotary position embeddings at positions 0 .. T-1 (kernels/rope.h; the table's head size
// is hs, and it has at least T positions; it must outlive the graph).
Tensor rope(Graph& g, const Tensor& qkv, int n_head, int n_kv_head, const RopeTable& table);
// qk_rmsnorm: QK-norm, each head x / sqrt(mean(x^2) + 1e-5), no weight.
Tensor qk_rmsnorm(Graph& g, const Tensor& qkv, int n_head, int n_kv_head);

// norm then linear: norm(x; ln_weight, ln_bias) W^T + b, keeping only per-row statistics (the
// normalised rows are recomputed in backward). Either bias may be absent (ln_bias always is with
// rmsnorm). layernorm_linear is the layernorm case.
Tensor norm_linear(Graph& g, Norm norm, const Tensor& x, const Tensor& ln_weight, const Tensor& ln_bias,
                   const Tensor& weight, const Tensor& bias, Dtype inputs = Dtype::float32);
inline Tensor layernorm_linear(Graph& g, const Tensor& x, const Tensor& ln_weight, const Tensor& ln_bias,
                               const Tensor& weight, const Tensor& bias, Dtype inputs = Dtype::float32) {
  return norm_linear(g, Norm::layernorm, x, ln_weight, ln_bias, weight, bias, inputs);
}

// residual + dropout(act(x) W^T + b): the projection that ends each half of a Transformer block,
// keeping neither act(x) nor the projection. x: [..., activation_input_width(act, in)] for a
// weight [out, in]. Same values and the same Rng draws as
// add(residual, dropout(linear(activate(x, act), weight, bias), p, rng, training)).
Tensor residual_projection(Graph& g, const Tensor& residual, const Tensor& x, Activation act, const Tensor& weight,
                           const Tensor& bias, float dropout_p, Rng& rng, bool training, Dtype inputs = Dtype::float32);

// cap * tanh(x / cap), elementwise (kernels/softcap.h): the logits' optional soft-cap; cap > 0.
Tensor softcap(Graph& g, const Tensor& x, float cap);

// Mean over rows of -log softmax(logits)[target]. logits: [N, V]; targets: N ids in [0, V).
Tensor cross_entropy(Graph& g, const Tensor& logits, const int32_t* targets);

// ---- helpers shared by op files --------------------------------------------------------------
namespace detail {
inline bool any_grad(const Tensor& a) { return a.requires_grad(); }
template <typename... Rest>
bool any_grad(const Tensor& a, const Rest&... rest) {
  return a.requires_grad() || any_grad(rest...);
}
}  // namespace detail

}  // namespace gpt
