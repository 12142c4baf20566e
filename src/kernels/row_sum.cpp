#include "kernels/row_sum.h"
#include "kernels/parallel.h"

#include <algorithm>

namespace gpt {

void accumulate(const float* src, float* dst, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

void accumulate_column_sums(const float* src, int64_t rows, int64_t cols, float* dst) {
  // Blocks of 64 columns: each thread streams whole rows of its block (contiguous, vectorisable).
  const int64_t blocks = column_blocks(cols);
#pragma omp parallel for schedule(static) if (rows * cols > kParallelMinElementwise && blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const auto [j0, j1] = column_block(b, cols);
    float acc[kColumnBlock];
    for (int64_t j = j0; j < j1; ++j) acc[j - j0] = dst[j];
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = src + r * cols;
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
    }
    for (int64_t j = j0; j < j1; ++j) dst[j] = acc[j - j0];
  }
}

}  // namespace gpt
