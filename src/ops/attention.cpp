// causal_self_attention: multi-head causal attention over a packed [B, T, (H + 2 KV) hs] q|k|v
// tensor (grouped-query when KV < H: a group of H / KV query heads shares one kv head), one
// (batch, head) per parallel work item in forward and one (batch, kv head) in backward, whose
// query heads run in order (so each kv head's gradient has one writer and a fixed sum order). Within a head, query rows
// go in blocks and each block only multiplies against the keys it can see (0 .. end of block), skipping most of the
// masked half. Nothing of size T x T is kept for backward: it recomputes each block's probabilities with the same calls
// as forward (so they are bit-identical) in per-thread scratch, and the dropout mask comes from the same counter-based
// hash. That keeps memory at O(T) per thread instead of the [B, H, T, T] probabilities (twice, with dropout) per layer,
// for one extra q k^T product. The same computation written with primitives (matmul, scale, causal_mask_fill, softmax,
// matmul) is the reference it is tested against.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/gemm.h"
#include "kernels/softmax_row.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace {

constexpr int64_t kRowBlock = 64;

struct AttentionDims {
  int64_t B, T, C, H, KV, hs;  // C = H hs: the output width
  int64_t width;               // of a q|k|v row: (H + 2 KV) hs
  int64_t group() const { return H / KV; }
  int64_t k_offset(int64_t h) const { return C + h / group() * hs; }  // of query head h's keys
  int64_t v_offset(int64_t h) const { return C + KV * hs + h / group() * hs; }
  int threads;  // the team size forward and backward both run with: the scratch has one part per thread
};

using detail::DropoutMask;

// Per-thread scratch: three blocks of kRowBlock x T floats.
int64_t scratch_floats_per_thread(const AttentionDims& d) { return 3 * std::min(kRowBlock, d.T) * d.T; }

// Probabilities of query rows i0..i1 of head (b, h) against keys 0..i1, rows with stride T:
// `probs` gets softmax(q k^T / sqrt(hs)) with zeros right of the diagonal, `dropped` the same with
// the dropout mask applied (it is left alone when dropout is off).
void block_probabilities(const AttentionDims& d, int64_t bh, const float* q, const float* k, int64_t i0, int64_t i1,
                         const DropoutMask& mask, float* probs, float* dropped) {
  const int64_t W = d.width, T = d.T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.hs));
  gemm(false, true, i1 - i0, i1, d.hs, q + i0 * W, W, k, W, probs, T, false);
  for (int64_t i = i0; i < i1; ++i) {
    float* row = probs + (i - i0) * T;
    softmax_row(row, i + 1, i1, scale);
    if (mask.active) {
      float* drow = dropped + (i - i0) * T;
      const int64_t base = (bh * T + i) * T;
      mask.apply_range(base, row, drow, i + 1);
      std::fill(drow + i + 1, drow + i1, 0.0f);
    }
  }
}

void attention_forward(const AttentionDims& d, const float* qkv, float* out, const DropoutMask& mask, float* scratch) {
  const int64_t W = d.width, T = d.T;
#pragma omp parallel for schedule(static) num_threads(d.threads)
  for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
    const int64_t b = bh / d.H, h = bh % d.H;
    const float* q = qkv + b * T * W + h * d.hs;
    const float* k = qkv + b * T * W + d.k_offset(h);
    const float* v = qkv + b * T * W + d.v_offset(h);
    float* p = scratch + static_cast<int64_t>(omp_get_thread_num()) * scratch_floats_per_thread(d);
    float* pd = mask.active ? p + std::min(kRowBlock, T) * T : p;
    for (int64_t i0 = 0; i0 < T; i0 += kRowBlock) {
      const int64_t i1 = std::min(T, i0 + kRowBlock), rows = i1 - i0;
      block_probabilities(d, bh, q, k, i0, i1, mask, p, pd);
      gemm(false, false, rows, d.hs, i1, pd, T, v, W, out + (b * T + i0) * d.C + h * d.hs, d.C, false);
    }
  }
}

void attention_backward(const AttentionDims& d, const float* qkv, const DropoutMask& mask, const float* dout,
                        float* dqkv, float* scratch) {
  const int64_t W = d.width, T = d.T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.hs));
#pragma omp parallel for schedule(static) num_threads(d.threads)
  for (int64_t bkv = 0; bkv < d.B * d.KV; ++bkv) {
    const int64_t b = bkv / d.KV, kvh = bkv % d.KV;
    const int64_t block = std::min(kRowBlock, T) * T;
    float* p = scratch + static_cast<int64_t>(omp_get_thread_num()) * scratch_floats_per_thread(d);
    float* pd = mask.active ? p + block : p;
    float* dp = p + 2 * block;
    for (int64_t h = kvh * d.group(); h < (kvh + 1) * d.group(); ++h) {
      const int64_t bh = b * d.H + h;
      const float* q = qkv + b * T * W + h * d.hs;
      const float* k = qkv + b * T * W + d.k_offset(h);
      const float* v = qkv + b * T * W + d.v_offset(h);
      float* dq = dqkv + b * T * W + h * d.hs;
      float* dk = dqkv + b * T * W + d.k_offset(h);
      float* dv = dqkv + b * T * W + d.v_offset(h);
      const float* dob = dout + b * T * d.C + h * d.hs;
      for (int64_t i0 = 0; i0 < T; i0 += kRowBlock) {
        const int64_t i1 = std::min(T, i0 + kRowBlock), rows = i1 - i0;
        block_probabilities(d, bh, q, k, i0, i1, mask, p, pd);
        gemm(false, true, rows, i1, d.hs, dob + i0 * d.C, d.C, v, W, dp, T, false);  // d(dropped probs)
        gemm(true, false, i1, d.hs, rows, pd, T, dob + i0 * d.C, d.C, dv, W, true);  // dv
        for (int64_t i = i0; i < i1; ++i) {
          float* row = dp + (i - i0) * T;
          const float* prow = p + (i - i0) * T;
          if (mask.active) {
            const int64_t base = (bh * T + i) * T;
            mask.apply_range(base, row, row, i + 1);
          }
          float dot = 0.0f;
          for (int64_t j = 0; j <= i; ++j) dot += row[j] * prow[j];
          for (int64_t j = 0; j <= i; ++j) row[j] = prow[j] * (row[j] - dot) * scale;  // d(scores before scaling)
          for (int64_t j = i + 1; j < i1; ++j) row[j] = 0.0f;
        }
        gemm(false, false, rows, d.hs, i1, dp, T, k, W, dq + i0 * W, W, true);  // dq
        gemm(true, false, i1, d.hs, rows, dp, T, q + i0 * W, W, dk, W, true);   // dk
      }
    }
  }
}

}  // namespace

Tensor causal_self_attention(Graph& g, const Tensor& qkv, int n_head, float dropout_p, Rng& rng, bool training,
                             int n_kv_head) {
  if (n_kv_head == 0) n_kv_head = n_head;
  GPT_CHECK(n_head > 0 && n_kv_head > 0 && n_head % n_kv_head == 0, "n_kv_head must divide n_head");
  GPT_CHECK(qkv.shape.rank == 3 && qkv.shape[2] % (n_head + 2 * n_kv_head) == 0,
            "attention input must be [B, T, (H + 2 KV) hs], got " + qkv.shape.str());
  AttentionDims d{.B = qkv.shape[0],
                  .T = qkv.shape[1],
                  .C = 0,
                  .H = n_head,
                  .KV = n_kv_head,
                  .hs = qkv.shape[2] / (n_head + 2 * n_kv_head),
                  .width = qkv.shape[2],
                  .threads = omp_get_max_threads()};
  d.C = d.H * d.hs;
  const DropoutMask mask = DropoutMask::make(dropout_p, rng, training);

  Tensor out = g.make(Shape{d.B, d.T, d.C}, qkv.requires_grad());
  // One scratch region serves forward and backward: they never run at the same time.
  float* scratch = g.scratch(static_cast<std::size_t>(d.threads * scratch_floats_per_thread(d)));
  attention_forward(d, qkv.data, out.data, mask, scratch);
  if (out.requires_grad()) {
    g.record(out, [=] { attention_backward(d, qkv.data, mask, out.grad(), qkv.grad_accumulator(), scratch); });
  }
  return out;
}

}  // namespace gpt
