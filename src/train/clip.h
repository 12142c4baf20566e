// Global-norm gradient clipping as torch.nn.utils.clip_grad_norm_, in parts a sharded optimizer
// can use: sums of squares over fixed chunks of the parameter store's layout (each chunk summed in
// double in 8 lanes, chunks added in order), so the norm has the same bits whichever process or
// thread summed which chunk.
#pragma once

#include <cstdint>

#include "core/param_store.h"

namespace gpt {

inline constexpr int64_t kNormChunk = int64_t{1} << 14;  // floats per chunk of the norm's sum

inline int64_t norm_chunks(int64_t floats) { return (floats + kNormChunk - 1) / kNormChunk; }
// sums[c - first] = sum of g[k]^2 over chunk c, for chunks [first, last) of a buffer of `total` floats.
void chunk_sums_of_squares(const float* g, int64_t total, int64_t first, int64_t last, double* sums);
// sqrt of the chunk sums added in order.
double norm_of_chunk_sums(const double* sums, int64_t chunks);
// min(1, max_norm / (norm + 1e-6)), or 1 when clipping is off (max_norm 0) or the norm not finite.
float clip_coefficient(double norm, double max_norm);
void scale_floats(float* g, int64_t n, float coefficient);

// The global L2 norm of all gradients; when max_norm > 0 every gradient is scaled by
// clip_coefficient. Returns the norm before clipping.
double clip_grad_norm(ParamStore& params, double max_norm);

}  // namespace gpt
