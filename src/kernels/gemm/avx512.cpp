// The AVX-512 family: a 12 x 32 tile in 24 zmm accumulators, and its float32-rounded-to-bfloat16
// form (bfloat16 inputs on FMAs: CPUs whose VDPBF16PS is slower than their FMAs, such as Intel
// Sapphire Rapids). One-row products use the AVX2 family's dot products.
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "kernels/cpu_features.h"
#include "kernels/gemm/avx512_packing.h"
#include "kernels/gemm/kernel_family.h"
#include "kernels/gemm/packing.h"
#include "kernels/gemm/row_times_transposed.h"

#define GPT_TARGET_AVX512F __attribute__((target("avx512f")))

namespace gpt::gemm_detail {

namespace {

constexpr int64_t kMR = 12, kNR = 32;
static_assert(kFitsTheDriver<kMR, kNR>, "MC a multiple of MR, MR <= kMaxMR, MR x NR <= kMaxTile (kernel_family.h)");

template <int kRows, ARead kRead>
GPT_TARGET_AVX512F void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                     bool load_c) {
  __m512 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = load_c ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load_c ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
    for (int r = 0; r < kRows; ++r) {
      const __m512 ar = _mm512_set1_ps(a[a_index<kRead, kMR>(lda, r, k)]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
    b += kNR;
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

template <ARead kRead, std::size_t... R>
constexpr MicroKernels<float> kernels(std::index_sequence<R...>) {
  return {&micro_kernel<static_cast<int>(R) + 1, kRead>...};
}

// kMR (the family's MR): A^T's copies compile for 12 rows.
template <bool kRounded>
GPT_TARGET_AVX512F void pack_a(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc,
                               int64_t p0, int64_t kc, float* out) {
  if (trans_a) return pack_a_floats<kRounded>(kMR, trans_a, A, lda, i0, mc, p0, kc, out);
  const int64_t steps = float_steps<kRounded>(kc);
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps)
    avx512::pack_float_lines<kRounded>(MR, A + (i0 + ir) * lda, lda, std::min(MR, mc - ir), p0, kc, out);
}
template <bool kRounded>
GPT_TARGET_AVX512F void pack_b(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                               int64_t cols, float* out) {
  if (!trans_b) return pack_b_floats<kRounded>(NR, trans_b, B, ldb, p0, kc, j, cols, out);
  for_each_sliver(NR, float_steps<kRounded>(kc), j, cols, out, [&](int64_t first, int64_t width, float* sliver) {
    avx512::pack_float_lines<kRounded>(NR, B + first * ldb, ldb, width, p0, kc, sliver);
  });
}

bool supported() { return cpu_features().avx512f; }

// Floats packed before they are rounded in place: 32 KB, which stays in the L1 data cache (48 KB
// on Zen 5 and Sapphire Rapids) between the two passes.
constexpr int64_t kRoundingGroupFloats = 8192;

// pack_plain(first, count, out) packs lines [first, first + count) as float32 into slivers of
// `width` at out, kc steps each; they are rounded in place a group of whole slivers at a time. An
// odd kc (the head's input gradient: K = the vocabulary) takes a zero pad step per sliver, so
// those go one at a time.
template <typename PackPlain>
void pack_then_round(int64_t width, int64_t count, int64_t kc, float* out, const PackPlain& pack_plain) {
  if (kc <= 0) return;
  const int64_t steps = float_steps<true>(kc), sliver = width * steps;
  const int64_t group = kc == steps ? std::max<int64_t>(1, kRoundingGroupFloats / sliver) * width : width;
  for (int64_t first = 0; first < count; first += group, out += group * steps) {
    const int64_t lines = std::min(group, count - first), slivers = (lines + width - 1) / width;
    pack_plain(first, lines, out);
    if (kc == steps) {
      avx512::round_to_bfloat16_in_place(out, slivers * sliver);
    } else {
      avx512::round_to_bfloat16_in_place(out, width * kc);
      std::fill(out + width * kc, out + sliver, 0.0f);
    }
  }
}

void pack_a_then_round(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                       int64_t kc, float* out) {
  pack_then_round(MR, mc, kc, out, [&](int64_t first, int64_t count, float* group_out) {
    pack_a<false>(MR, trans_a, A, lda, i0 + first, count, p0, kc, group_out);
  });
}
void pack_b_then_round(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                       int64_t cols, float* out) {
  pack_then_round(NR, cols, kc, out, [&](int64_t first, int64_t count, float* group_out) {
    pack_b<false>(NR, trans_b, B, ldb, p0, kc, j + first, count, group_out);
  });
}

}  // namespace

namespace avx512_rounded {
constinit const PackA<float> pack_a_by_integers = pack_a<true>, pack_a_by_conversion = pack_a_then_round;
constinit const PackB<float> pack_b_by_integers = pack_b<true>, pack_b_by_conversion = pack_b_then_round;
}  // namespace avx512_rounded

namespace {

void pack_a_rounded(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                    int64_t kc, float* out) {
  using namespace avx512_rounded;
  (cpu_features().avx512bf16 ? pack_a_by_conversion : pack_a_by_integers)(MR, trans_a, A, lda, i0, mc, p0, kc, out);
}
void pack_b_rounded(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                    int64_t cols, float* out) {
  using namespace avx512_rounded;
  (cpu_features().avx512bf16 ? pack_b_by_conversion : pack_b_by_integers)(NR, trans_b, B, ldb, p0, kc, j, cols, out);
}

}  // namespace

constinit const KernelFamily<float> kAvx512{.name = "avx512",
                                            .supported = supported,
                                            .MR = kMR,
                                            .NR = kNR,
                                            .vector_width = 16,
                                            .packed_a = kernels<ARead::packed>(std::make_index_sequence<kMR>()),
                                            .direct_a = kernels<ARead::rows>(std::make_index_sequence<kMR>()),
                                            .columns_a = kernels<ARead::columns>(std::make_index_sequence<kMR>()),
                                            .pack_a = pack_a<false>,
                                            .pack_b = pack_b<false>,
                                            .row_dots = row_dots_avx2};

constinit const KernelFamily<float> kAvx512Rounded{.name = "avx512-fma-bf16",
                                                   .supported = supported,
                                                   .MR = kMR,
                                                   .NR = kNR,
                                                   .vector_width = 16,
                                                   .packed_a = kernels<ARead::packed>(std::make_index_sequence<kMR>()),
                                                   .direct_a = {},
                                                   .columns_a = {},
                                                   .pack_a = pack_a_rounded,
                                                   .pack_b = pack_b_rounded,
                                                   .bfloat16_steps = true,
                                                   .flush_with_mxcsr = true};

}  // namespace gpt::gemm_detail
