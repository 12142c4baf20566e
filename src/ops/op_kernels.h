// Kernels private to the ops: the dropout mask and the linear and embedding kernels that the fused
// ops (layernorm_linear, residual_projection, token_position_embedding) compose, each defined in
// its own op's file. Kernels the model's executors share live in kernels/.
// Plain loops over raw arrays: no graph, no allocation. Backward kernels accumulate (+=) into
// every output gradient that is not null.
#pragma once

#include <cstdint>

#include "kernels/activation.h"
#include "kernels/dropout_mask.h"
#include "kernels/layernorm.h"
#include "ops/ops.h"

namespace gpt::detail {

// Inverted dropout with the counter-based mask of kernels/dropout_mask.h: kept elements are scaled
// by 1/(1-p), the others zeroed. Inactive (identity) when not training or p == 0; make() draws the
// seed from `rng` only when active, as the dropout op does. Element indices count from 0 over the
// tensor the mask covers.
struct DropoutMask {
  bool active = false;
  DropoutKeys keys;

  static DropoutMask make(float p, Rng& rng, bool training);
  // Elements first .. first + n - 1, serially: out = mask(in) (in == out allowed; a copy when inactive).
  void apply_range(int64_t first, const float* in, float* out, int64_t n) const;
  // The whole tensor, in parallel: out = mask(in) (in == out allowed), and acc += mask(d).
  void apply(const float* in, float* out, int64_t n) const;
  void apply_in_place(float* values, int64_t n) const { apply(values, values, n); }
  void accumulate(const float* d, float* acc, int64_t n) const;
};

// Scatter-adds rows of dout (C values each, `stride` apart) into the rows of dtable picked by ids.
void embedding_backward(const int32_t* ids, int64_t n, const float* dout, int64_t stride, float* dtable, int64_t C);

// y = x W^T + b (b may be null); x: [rows, in], W: [out, in], y: [rows, out]. `inputs`: the
// products' input format (bfloat16: x, W and dy rounded as they are packed; sums in float32).
void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t in, int64_t out,
                    Dtype inputs);
// dx (+)= dy W (as dx.accumulate says), dw += dy^T x, db += column sums of dy (each skipped when
// null).
void linear_backward(const float* x, const float* w, const float* dy, Tensor::GradTarget dx, float* dw, float* db,
                     int64_t rows, int64_t in, int64_t out, Dtype inputs);

}  // namespace gpt::detail
