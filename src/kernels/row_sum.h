// Column sums of a row-major matrix, accumulated into a vector: the gradient of every bias or
// broadcast add. Parallel over columns, each summed in row order, so results do not depend on
// the thread count.
#pragma once

#include <cstdint>

namespace gpt {

// dst[j] += sum_r src[r * cols + j]
void accumulate_column_sums(const float* src, int64_t rows, int64_t cols, float* dst);

}  // namespace gpt
