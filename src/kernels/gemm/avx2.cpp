// The AVX2 + FMA family: a 6 x 16 tile in 12 ymm accumulators plus two B vectors and one
// broadcast, its float32-rounded-to-bfloat16 form, and the one-row path's dot products (which
// the AVX-512 family shares: 8 lanes are one ymm register).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/cpu_features.h"
#include "kernels/gemm/kernel_family.h"
#include "kernels/gemm/packing.h"
#include "kernels/gemm/row_times_transposed.h"

#define GPT_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))

namespace gpt::gemm_detail {

namespace {

constexpr int64_t kMR = 6, kNR = 16;
static_assert(kFitsTheDriver<kMR, kNR>, "MC a multiple of MR, MR <= kMaxMR, MR x NR <= kMaxTile (kernel_family.h)");

template <int kRows, ARead kRead>
GPT_TARGET_AVX2_FMA void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                      bool load_c) {
  __m256 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = load_c ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = load_c ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  // Unrolled: a k step's counter and pointer updates would be 5 of its 25 instructions.
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    for (int r = 0; r < kRows; ++r) {
      const __m256 ar = _mm256_set1_ps(a[a_index<kRead, kMR>(lda, r, k)]);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
    b += kNR;
  }
  for (int r = 0; r < kRows; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

template <ARead kRead, std::size_t... R>
constexpr MicroKernels<float> kernels(std::index_sequence<R...>) {
  return {&micro_kernel<static_cast<int>(R) + 1, kRead>...};
}

// A^T (a weight gradient's dy^T) is packed rather than read in place: read in place, each k step
// of a tile is a cache line lda floats from the last, and lda a multiple of 128 or 512 bytes maps
// them to a few of L1's sets, so every micro-kernel call refetched its A lines from L2. kMR, not
// the family's MR it equals, so that the copies compile for 6 rows.
template <bool kRounded>
GPT_TARGET_AVX2_FMA void pack_a(int64_t, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                                int64_t kc, float* out) {
  pack_a_floats<kRounded>(kMR, trans_a, A, lda, i0, mc, p0, kc, out);
}
template <bool kRounded>
GPT_TARGET_AVX2_FMA void pack_b(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc,
                                int64_t j, int64_t cols, float* out) {
  pack_b_floats<kRounded>(NR, trans_b, B, ldb, p0, kc, j, cols, out);
}

bool supported() { return cpu_features().avx2 && cpu_features().fma; }

// reduce_lanes of eight rows' lanes at once, the same additions in the same tree: row r's result
// in element r. The halves' sums first (lanes l + l+4, rows i and i+4 in one register), then
// (l0+l4)+(l2+l6) beside (l1+l5)+(l3+l7), then their sum.
GPT_TARGET_AVX2_FMA __m256 reduce_eight_rows(const __m256* acc) {
  __m256 halves[4];
  for (int i = 0; i < 4; ++i)
    halves[i] = _mm256_add_ps(_mm256_permute2f128_ps(acc[i], acc[i + 4], 0x20),
                              _mm256_permute2f128_ps(acc[i], acc[i + 4], 0x31));
  __m256 pairs[2];
  for (int i = 0; i < 2; ++i)
    pairs[i] = _mm256_add_ps(_mm256_shuffle_ps(halves[2 * i], halves[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(halves[2 * i], halves[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm256_add_ps(_mm256_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace

// Eight outputs at a time so their FMA chains overlap; the lanes of kernels/gemm/portable.cpp.
GPT_TARGET_AVX2_FMA void row_dots_avx2(const float* a, const float* B, int64_t ldb, int64_t K, int64_t rows,
                                       float* out) {
  constexpr int kRows = 8;
  for (int64_t j0 = 0; j0 < rows; j0 += kRows) {
    const int64_t n = std::min<int64_t>(kRows, rows - j0);
    __m256 acc[kRows];
    for (auto& x : acc) x = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + kDotLanes <= K; k += kDotLanes) {
      const __m256 av = _mm256_loadu_ps(a + k);
      for (int r = 0; r < kRows; ++r)
        if (r < n) acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(B + (j0 + r) * ldb + k), av, acc[r]);
    }
    if (n == kRows && k == K) {
      _mm256_storeu_ps(out + j0, reduce_eight_rows(acc));
      continue;
    }
    for (int r = 0; r < n; ++r) {
      alignas(32) float lanes[kDotLanes];
      _mm256_store_ps(lanes, acc[r]);
      for (int64_t kk = k, lane = 0; kk < K; ++kk, ++lane)
        lanes[lane] = std::fma(B[(j0 + r) * ldb + kk], a[kk], lanes[lane]);
      out[j0 + r] = reduce_lanes(lanes);
    }
  }
}

constinit const KernelFamily<float> kAvx2{.name = "avx2-fma",
                                          .supported = supported,
                                          .MR = kMR,
                                          .NR = kNR,
                                          .vector_width = 8,
                                          .packed_a = kernels<ARead::packed>(std::make_index_sequence<kMR>()),
                                          .direct_a = kernels<ARead::rows>(std::make_index_sequence<kMR>()),
                                          .columns_a = {},
                                          .pack_a = pack_a<false>,
                                          .pack_b = pack_b<false>,
                                          .b_slivers_outer = true,
                                          .row_dots = row_dots_avx2};

constinit const KernelFamily<float> kAvx2Rounded{.name = "avx2-fma-bf16",
                                                 .supported = supported,
                                                 .MR = kMR,
                                                 .NR = kNR,
                                                 .vector_width = 8,
                                                 .packed_a = kernels<ARead::packed>(std::make_index_sequence<kMR>()),
                                                 .direct_a = {},
                                                 .columns_a = {},
                                                 .pack_a = pack_a<true>,
                                                 .pack_b = pack_b<true>,
                                                 .bfloat16_steps = true,
                                                 .flush_with_mxcsr = true};

}  // namespace gpt::gemm_detail
