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

}  // namespace gpt
