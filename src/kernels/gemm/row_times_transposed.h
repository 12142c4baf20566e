// The one-row product: row-vector times transposed matrix (C[1,N] = a[1,K] B^T with B stored
// [N,K]), the shape of a Linear layer on one token while sampling. Packing would copy all of B for
// one row of output, so each output is a dot product instead, in 8 lanes (an FMA per term in k
// order within a lane, element k in lane k % 8), the lanes then added pairwise in a fixed tree.
// Each float32 family supplies its dot products (KernelFamily::row_dots); all give the same bits.
// Its summation order differs from the tiled path's, so only float32 products take it.
#pragma once

#include <cstdint>

#include "kernels/gemm/kernel_family.h"

namespace gpt::gemm_detail {

inline constexpr int kDotLanes = 8;

inline float reduce_lanes(const float* lanes) {
  return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

// The dot products of rows [0, rows) of B with a, into out (kernels/gemm/portable.cpp, avx2.cpp).
void row_dots_avx2(const float* a, const float* B, int64_t ldb, int64_t K, int64_t rows, float* out);

// c[0..N) (+)= a[0..K) B^T, over OpenMP threads when large.
void row_times_transposed(RowDots dots, int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                          bool accumulate);

}  // namespace gpt::gemm_detail
