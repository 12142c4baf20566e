#include "kernels/gemm/row_times_transposed.h"

#include <algorithm>

#include "kernels/gemm.h"
#include "kernels/gemm/dispatch.h"
#include "kernels/parallel.h"

namespace gpt {

namespace gemm_detail {

namespace {

constexpr int64_t kDotBlock = 64;

void row_times_transposed_block(RowDots dots, int64_t j0, int64_t rows, int64_t K, const float* a, const float* B,
                                int64_t ldb, float* c, bool accumulate) {
  float out[kDotBlock];
  dots(a, B + j0 * ldb, ldb, K, rows, out);
  for (int64_t r = 0; r < rows; ++r) c[j0 + r] = accumulate ? c[j0 + r] + out[r] : out[r];
}

}  // namespace

void row_times_transposed(RowDots dots, int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                          bool accumulate) {
  // Fixed blocks of rows; with two or more threads each keeps its share of B in its own cache.
  const int64_t blocks = (N + kDotBlock - 1) / kDotBlock;
#pragma omp parallel for schedule(static) if (N * K >= kParallelMinMatVec && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk)
    row_times_transposed_block(dots, blk * kDotBlock, std::min(kDotBlock, N - blk * kDotBlock), K, a, B, ldb, c,
                               accumulate);
}

}  // namespace gemm_detail

void row_times_transposed_serial(int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                                 bool accumulate) {
  const gemm_detail::RowDots dots = gemm_detail::float32_family().row_dots;
  for (int64_t j0 = 0; j0 < N; j0 += gemm_detail::kDotBlock)
    gemm_detail::row_times_transposed_block(dots, j0, std::min(gemm_detail::kDotBlock, N - j0), K, a, B, ldb, c,
                                            accumulate);
}

}  // namespace gpt
