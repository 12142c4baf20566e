// Row-wise RMSNorm kernels (eps 1e-5, learnable weight, no bias), forward and backward, on raw
// arrays: y = x / sqrt(mean(x^2) + eps) * w (Zhang & Sennrich 2019, "Root Mean Square Layer
// Normalization"). The rmsnorm op and, through kernels/norm.h, both executors of the model call them.
#pragma once

#include <cstdint>

namespace gpt {

// x, y: [rows, C]; w: [C]. Saves each row's 1/rms for the backward.
void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, int64_t rows, int64_t C);
// dx += d/dx, dw += d/dw (each skipped when null).
void rmsnorm_backward(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw,
                      int64_t rows, int64_t C);

// Weightless RMSNorm of each head vector (QK-norm; Henry et al. 2020, Dehghani et al. 2023): in
// each of `rows` rows of `stride` floats, the first `heads` vectors of hs floats become
// x / sqrt(mean(x^2) + eps); the rest of the row is not touched. y may be x. rstd: [rows, heads],
// or null when no backward follows.
void head_rmsnorm_forward(const float* x, float* y, float* rstd, int64_t rows, int64_t stride, int64_t heads,
                          int64_t hs);
// dx += d/dx over the same head vectors.
void head_rmsnorm_backward(const float* x, const float* rstd, const float* dy, float* dx, int64_t rows, int64_t stride,
                           int64_t heads, int64_t hs);

}  // namespace gpt
