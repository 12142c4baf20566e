// The portable family, plain C++ for any CPU: a 6 x 16 tile with the same FMA chain per element
// as the SIMD families (std::fma), and its bfloat16 form, which flushes subnormal accumulators in
// code (kernels/bfloat16.h) where the SIMD families set MXCSR. The reference the others match.
#include <cmath>
#include <utility>

#include "kernels/bfloat16.h"
#include "kernels/gemm/kernel_family.h"
#include "kernels/gemm/packing.h"
#include "kernels/gemm/row_times_transposed.h"

namespace gpt::gemm_detail {

namespace {

constexpr int64_t kMR = 6, kNR = 16;
static_assert(kFitsTheDriver<kMR, kNR>, "MC a multiple of MR, MR <= kMaxMR, MR x NR <= kMaxTile (kernel_family.h)");

// kFlush: the bfloat16 arithmetic (A always packed).
template <int kRows, ARead kRead, bool kFlush = false>
void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc, bool load_c) {
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t j = 0; j < kNR; ++j) {
      float acc = load_c ? c[r * ldc + j] : 0.0f;
      if constexpr (kFlush) {
        acc = flush_subnormal(acc);
        for (int64_t k = 0; k < kc; ++k) acc = bfloat16_multiply_add(a[k * kMR + r], b[k * kNR + j], acc);
      } else {
        for (int64_t k = 0; k < kc; ++k) acc = std::fma(a[a_index<kRead, kMR>(lda, r, k)], b[k * kNR + j], acc);
      }
      c[r * ldc + j] = acc;
    }
  }
}

template <ARead kRead, bool kFlush, std::size_t... R>
constexpr MicroKernels<float> kernels(std::index_sequence<R...>) {
  return {&micro_kernel<static_cast<int>(R) + 1, kRead, kFlush>...};
}

// kMR, the family's MR, so that the copies compile for 6 rows.
template <bool kRounded>
void pack_a(int64_t, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            float* out) {
  pack_a_floats<kRounded>(kMR, trans_a, A, lda, i0, mc, p0, kc, out);
}
template <bool kRounded>
void pack_b(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j, int64_t cols,
            float* out) {
  pack_b_floats<kRounded>(NR, trans_b, B, ldb, p0, kc, j, cols, out);
}

// The one-row path's dot products in the lanes the SIMD version keeps in a vector register.
void dots(const float* a, const float* B, int64_t ldb, int64_t K, int64_t rows, float* out) {
  for (int64_t j = 0; j < rows; ++j) {
    const float* b = B + j * ldb;
    float lanes[kDotLanes] = {};
    int64_t k = 0;
    for (; k + kDotLanes <= K; k += kDotLanes)
      for (int r = 0; r < kDotLanes; ++r) lanes[r] = std::fma(b[k + r], a[k + r], lanes[r]);
    for (int64_t lane = 0; k < K; ++k, ++lane) lanes[lane] = std::fma(b[k], a[k], lanes[lane]);
    out[j] = reduce_lanes(lanes);
  }
}

bool always() { return true; }

}  // namespace

constinit const KernelFamily<float> kPortable{
    .name = "portable",
    .supported = always,
    .MR = kMR,
    .NR = kNR,
    .vector_width = 1,
    .packed_a = kernels<ARead::packed, false>(std::make_index_sequence<kMR>()),
    .direct_a = kernels<ARead::rows, false>(std::make_index_sequence<kMR>()),
    .columns_a = kernels<ARead::columns, false>(std::make_index_sequence<kMR>()),
    .pack_a = pack_a<false>,
    .pack_b = pack_b<false>,
    .row_dots = dots};

constinit const KernelFamily<float> kPortableRounded{
    .name = "portable-bf16",
    .supported = always,
    .MR = kMR,
    .NR = kNR,
    .vector_width = 1,
    .packed_a = kernels<ARead::packed, true>(std::make_index_sequence<kMR>()),
    .direct_a = {},
    .columns_a = {},
    .pack_a = pack_a<true>,
    .pack_b = pack_b<true>,
    .bfloat16_steps = true};

}  // namespace gpt::gemm_detail
