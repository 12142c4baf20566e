// Row-wise layernorm kernels (eps 1e-5, biased variance, as PyTorch), forward and backward, on
// raw arrays. The layernorm ops and both executors of the model call them.
#pragma once

#include <cstdint>

namespace gpt {

// x, y: [rows, C]; w, b: [C] (b may be null). Saves each row's mean and 1/std for the backward.
void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t rows,
                       int64_t C);
// dx += d/dx (each of dx, dw, db skipped when null).
void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                        float* dx, float* dw, float* db, int64_t rows, int64_t C);

}  // namespace gpt
