// The NEON family (aarch64): a 6 x 16 tile in 24 q-register accumulators plus four B vectors and
// one broadcast, and the one-row path's dot products (8 lanes: two q registers). vfmaq_f32 is a
// fused multiply-add, one per term in k order in every lane, so it gives the portable family's
// bits (and the x86 families'). bfloat16 inputs run on the portable family's rounded form.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/cpu_features.h"
#include "kernels/gemm/kernel_family.h"
#include "kernels/gemm/packing.h"
#include "kernels/gemm/row_times_transposed.h"

namespace gpt::gemm_detail {

namespace {

constexpr int64_t kMR = 6, kNR = 16;
static_assert(kFitsTheDriver<kMR, kNR>, "MC a multiple of MR, MR <= kMaxMR, MR x NR <= kMaxTile (kernel_family.h)");

template <int kRows, ARead kRead>
void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc, bool load_c) {
  float32x4_t acc[kRows][4];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < 4; ++v) acc[r][v] = load_c ? vld1q_f32(c + r * ldc + 4 * v) : vdupq_n_f32(0.0f);
  for (int64_t k = 0; k < kc; ++k) {
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8), b3 = vld1q_f32(b + 12);
    for (int r = 0; r < kRows; ++r) {
      const float32x4_t ar = vdupq_n_f32(a[a_index<kRead, kMR>(lda, r, k)]);
      acc[r][0] = vfmaq_f32(acc[r][0], ar, b0);
      acc[r][1] = vfmaq_f32(acc[r][1], ar, b1);
      acc[r][2] = vfmaq_f32(acc[r][2], ar, b2);
      acc[r][3] = vfmaq_f32(acc[r][3], ar, b3);
    }
    b += kNR;
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < 4; ++v) vst1q_f32(c + r * ldc + 4 * v, acc[r][v]);
}

template <ARead kRead, std::size_t... R>
constexpr MicroKernels<float> kernels(std::index_sequence<R...>) {
  return {&micro_kernel<static_cast<int>(R) + 1, kRead>...};
}

// kMR, the family's MR, so that the copies compile for 6 rows.
void pack_a(int64_t, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            float* out) {
  pack_a_floats<false>(kMR, trans_a, A, lda, i0, mc, p0, kc, out);
}
void pack_b(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j, int64_t cols,
            float* out) {
  pack_b_floats<false>(NR, trans_b, B, ldb, p0, kc, j, cols, out);
}

// Eight outputs at a time so their FMA chains overlap; the lanes of kernels/gemm/portable.cpp
// (lanes 0-3 in the first register, 4-7 in the second).
void row_dots(const float* a, const float* B, int64_t ldb, int64_t K, int64_t rows, float* out) {
  constexpr int kRows = 8;
  for (int64_t j0 = 0; j0 < rows; j0 += kRows) {
    const int64_t n = std::min<int64_t>(kRows, rows - j0);
    float32x4_t acc[kRows][2];
    for (auto& row : acc) row[0] = row[1] = vdupq_n_f32(0.0f);
    int64_t k = 0;
    for (; k + kDotLanes <= K; k += kDotLanes) {
      const float32x4_t a0 = vld1q_f32(a + k), a1 = vld1q_f32(a + k + 4);
      for (int r = 0; r < kRows; ++r)
        if (r < n) {
          const float* b = B + (j0 + r) * ldb + k;
          acc[r][0] = vfmaq_f32(acc[r][0], vld1q_f32(b), a0);
          acc[r][1] = vfmaq_f32(acc[r][1], vld1q_f32(b + 4), a1);
        }
    }
    for (int r = 0; r < n; ++r) {
      float lanes[kDotLanes];
      vst1q_f32(lanes, acc[r][0]);
      vst1q_f32(lanes + 4, acc[r][1]);
      for (int64_t kk = k, lane = 0; kk < K; ++kk, ++lane)
        lanes[lane] = std::fma(B[(j0 + r) * ldb + kk], a[kk], lanes[lane]);
      out[j0 + r] = reduce_lanes(lanes);
    }
  }
}

bool supported() { return cpu_features().neon; }

}  // namespace

constinit const KernelFamily<float> kNeon{.name = "neon",
                                          .supported = supported,
                                          .MR = kMR,
                                          .NR = kNR,
                                          .vector_width = 4,
                                          .packed_a = kernels<ARead::packed>(std::make_index_sequence<kMR>()),
                                          .direct_a = kernels<ARead::rows>(std::make_index_sequence<kMR>()),
                                          .columns_a = kernels<ARead::columns>(std::make_index_sequence<kMR>()),
                                          .pack_a = pack_a,
                                          .pack_b = pack_b,
                                          .row_dots = row_dots};

}  // namespace gpt::gemm_detail
