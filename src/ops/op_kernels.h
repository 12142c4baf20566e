// The forward and backward kernels of ops that the fused ops (layernorm_linear,
// residual_projection) compose; each is defined in its own op's file, next to that op.
// Plain loops over raw arrays: no graph, no allocation. Backward kernels accumulate (+=) into
// every output gradient that is not null.
#pragma once

#include <cstdint>

namespace gpt::detail {

// y = x W^T + b (b may be null); x: [rows, in], W: [out, in], y: [rows, out].
void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t in, int64_t out);
// dx += dy W, dw += dy^T x, db += column sums of dy (each skipped when null).
void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, int64_t rows,
                     int64_t in, int64_t out);

// Row-wise layernorm; saves each row's mean and 1/std for the backward.
void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t rows,
                       int64_t C);
void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy, float* dx,
                        float* dw, float* db, int64_t rows, int64_t C);

// Exact GELU over n values, and dx += dy * GELU'(x).
void gelu_forward(const float* x, float* y, int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);

}  // namespace gpt::detail
