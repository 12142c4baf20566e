// The AVX512_BF16 family: bfloat16 inputs on VDPBF16PS, a 12 x 32 tile like the AVX-512 float32
// family's, each instruction adding a pair of k to 16 accumulators. A is always packed, as pairs
// (kernels/gemm/avx512_packing.h). A subnormal accumulator loaded from c is read as zero by the
// instruction itself, so no MXCSR setting is needed.
#include <immintrin.h>

#include <utility>

#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/gemm/avx512_packing.h"
#include "kernels/gemm/kernel_family.h"

namespace gpt::gemm_detail {

namespace {

constexpr int64_t kMR = 12, kNR = 32;
static_assert(kFitsTheDriver<kMR, kNR>, "MC a multiple of MR, MR <= kMaxMR, MR x NR <= kMaxTile (kernel_family.h)");

template <int kRows>
__attribute__((target("avx512f,avx512bf16"))) void micro_kernel(int64_t steps, const uint32_t* a, int64_t /*lda*/,
                                                                const uint32_t* b, float* c, int64_t ldc, bool load_c) {
  __m512 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = load_c ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load_c ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t s = 0; s < steps; ++s) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + 16));
    for (int r = 0; r < kRows; ++r) {
      const __m512bh ar = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[s * kMR + r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
    }
    b += kNR;
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

template <std::size_t... R>
constexpr MicroKernels<uint32_t> kernels(std::index_sequence<R...>) {
  return {&micro_kernel<static_cast<int>(R) + 1>...};
}

// The pair packing rounds with AVX512_BF16's conversions.
__attribute__((target("avx512f,avx512bf16"))) void pack_a(int64_t MR, bool trans_a, const float* A, int64_t lda,
                                                          int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                                                          uint32_t* out) {
  if (trans_a) return avx512::pack_pair_rows(MR, A + p0 * lda + i0, lda, mc, kc, out);
  const int64_t steps = (kc + 1) / 2;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps)
    avx512::pack_pair_lines(MR, A + (i0 + ir) * lda, lda, std::min(MR, mc - ir), p0, kc, out);
}
__attribute__((target("avx512f,avx512bf16"))) void pack_b(int64_t NR, bool trans_b, const float* B, int64_t ldb,
                                                          int64_t p0, int64_t kc, int64_t j, int64_t cols,
                                                          uint32_t* out) {
  if (!trans_b) return avx512::pack_pair_rows(NR, B + p0 * ldb + j, ldb, cols, kc, out);
  for_each_sliver(NR, (kc + 1) / 2, j, cols, out, [&](int64_t first, int64_t width, uint32_t* sliver) {
    avx512::pack_pair_lines(NR, B + first * ldb, ldb, width, p0, kc, sliver);
  });
}

bool supported() { return cpu_features().avx512bf16; }

}  // namespace

constinit const KernelFamily<uint32_t> kAvx512Bf16{.name = kVdpbf16psKernel,
                                                   .supported = supported,
                                                   .MR = kMR,
                                                   .NR = kNR,
                                                   .vector_width = 16,
                                                   .packed_a = kernels(std::make_index_sequence<kMR>()),
                                                   .direct_a = {},
                                                   .columns_a = {},
                                                   .pack_a = pack_a,
                                                   .pack_b = pack_b,
                                                   .bfloat16_steps = true};

}  // namespace gpt::gemm_detail
