#include "kernels/row_sum.h"

#include <algorithm>

namespace gpt {

void accumulate_column_sums(const float* src, int64_t rows, int64_t cols, float* dst) {
  // Blocks of 64 columns: each thread streams whole rows of its block (contiguous, vectorisable).
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 16) && blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t j0 = b * kBlock, j1 = std::min(cols, j0 + kBlock);
    float acc[kBlock];
    for (int64_t j = j0; j < j1; ++j) acc[j - j0] = dst[j];
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = src + r * cols;
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
    }
    for (int64_t j = j0; j < j1; ++j) dst[j] = acc[j - j0];
  }
}

}  // namespace gpt
