// Sums accumulated into a destination: elementwise (the gradient of every residual or identity
// path) and column sums of a row-major matrix (the gradient of every bias or broadcast add).
// Parallel over disjoint outputs, each summed in one order, so results do not depend on the
// thread count.
#pragma once

#include <cstdint>

namespace gpt {

// dst[i] += src[i] for i < n
void accumulate(const float* src, float* dst, int64_t n);

// dst[j] += sum_r src[r * cols + j]
void accumulate_column_sums(const float* src, int64_t rows, int64_t cols, float* dst);

}  // namespace gpt
