// The AVX512_BF16 family: bfloat16 inputs on VDPBF16PS, a 12 x 32 tile like the AVX-512 float32
// family's, each instruction adding a pair of k to 16 accumulators. A is always packed, as pairs
// (kernels/gemm/packing.h). A subnormal accumulator loaded from c is read as zero by the
// instruction itself, so no MXCSR setting is needed.
// GCC 12's AVX-512 intrinsics start many results from an undefined register, `__Y = __Y`, which
// -Wmaybe-uninitialized reports once they are inlined at -O3; the values are all overwritten.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/gemm/kernel_family.h"
#include "kernels/gemm/packing.h"

namespace gpt::gemm_detail {

namespace {

constexpr int64_t kMR = 12, kNR = 32;

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

// rounded_bfloat16_bits (kernels/bfloat16.h) on 16 floats.
__attribute__((target("avx512f"))) __m512i rounded_bfloat16_bits(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i nearest =
      _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd), high);
  const __m512i quiet_nan = _mm512_and_si512(_mm512_or_si512(bits, _mm512_set1_epi32(0x00400000)), high);
  const __m512i signed_zero = _mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  const __mmask16 tiny = _mm512_cmplt_epu32_mask(magnitude, _mm512_set1_epi32(0x00800000));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_blend_epi32(nan, _mm512_mask_blend_epi32(tiny, nearest, signed_zero), quiet_nan);
}

// The first n of 16 lanes.
inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << std::max<int64_t>(n, 0)) - 1);
}

// 8 pairs of rounded bits as words: a 64-bit lane holds a pair, first (k) in its low half, second
// in its high half; the word takes first's bfloat16 bits high and second's low (bfloat16_pair).
__attribute__((target("avx512f"))) __m256i pair_words(__m512i lanes) {
  return _mm512_cvtepi64_epi32(_mm512_or_si512(lanes, _mm512_srli_epi64(lanes, 48)));
}

// The pairs of 32 consecutive floats (`count` of them read, the rest zero) as bfloat16_pair words.
__attribute__((target("avx512f"))) __m512i bfloat16_pairs(const float* x, int64_t count) {
  const __m512i low = rounded_bfloat16_bits(_mm512_maskz_loadu_ps(first_lanes(count), x));
  const __m512i high = rounded_bfloat16_bits(_mm512_maskz_loadu_ps(first_lanes(count - 16), x + 16));
  return _mm512_inserti64x4(_mm512_castsi256_si512(pair_words(low)), pair_words(high), 1);
}

// Transposes 16 x 16 words in place: w[i] lane j becomes w[j] lane i.
__attribute__((target("avx512f"))) void transpose_16x16(__m512i w[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {  // per 128-bit lane: pairs of rows interleaved
    t[i] = _mm512_unpacklo_epi32(w[i], w[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(w[i], w[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // w[4 g + m], lane L: column 4 L + m of rows 4 g .. 4 g + 3
    w[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    w[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    w[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    w[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int m = 0; m < 4; ++m) {  // columns m, 8 + m (0x88) and 4 + m, 12 + m (0xdd) of rows 0-7, 8-15
    t[m] = _mm512_shuffle_i32x4(w[m], w[m + 4], 0x88);
    t[m + 4] = _mm512_shuffle_i32x4(w[m], w[m + 4], 0xdd);
    t[m + 8] = _mm512_shuffle_i32x4(w[m + 8], w[m + 12], 0x88);
    t[m + 12] = _mm512_shuffle_i32x4(w[m + 8], w[m + 12], 0xdd);
  }
  for (int m = 0; m < 4; ++m) {
    w[m] = _mm512_shuffle_i32x4(t[m], t[m + 8], 0x88);
    w[m + 8] = _mm512_shuffle_i32x4(t[m], t[m + 8], 0xdd);
    w[m + 4] = _mm512_shuffle_i32x4(t[m + 4], t[m + 12], 0x88);
    w[m + 12] = _mm512_shuffle_i32x4(t[m + 4], t[m + 12], 0xdd);
  }
}

// The pair packing of lines contiguous in k (A's rows when not transposed, B's columns when
// transposed) into one sliver of `width` lines, lines past `lines` zero: 16 pairs of 16 lines at a
// time, converted along the lines and transposed in registers into 16 steps.
__attribute__((target("avx512f"))) void pack_pairs_of_lines(int64_t width, const float* first_line, int64_t ld,
                                                            int64_t lines, int64_t p0, int64_t kc, uint32_t* out) {
  const int64_t steps = (kc + 1) / 2;
  for (int64_t l0 = 0; l0 < width; l0 += 16) {
    const __mmask16 group = first_lanes(width - l0);
    for (int64_t s0 = 0; s0 < steps; s0 += 16) {
      __m512i w[16];
      for (int64_t l = 0; l < 16; ++l)
        w[l] = l0 + l < lines ? bfloat16_pairs(first_line + (l0 + l) * ld + p0 + 2 * s0, kc - 2 * s0)
                              : _mm512_setzero_si512();
      transpose_16x16(w);
      for (int64_t s = 0; s < std::min<int64_t>(16, steps - s0); ++s)
        _mm512_mask_storeu_epi32(out + (s0 + s) * width + l0, group, w[s]);
    }
  }
}

// The pair packing moves 32-bit words: AVX-512F is all it needs.
__attribute__((target("avx512f"))) void pack_a(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0,
                                               int64_t mc, int64_t p0, int64_t kc, uint32_t* out) {
  if (trans_a) return pack_a_bfloat16_pairs(MR, trans_a, A, lda, i0, mc, p0, kc, out);
  const int64_t steps = (kc + 1) / 2;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps)
    pack_pairs_of_lines(MR, A + (i0 + ir) * lda, lda, std::min(MR, mc - ir), p0, kc, out);
}
__attribute__((target("avx512f"))) void pack_b(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0,
                                               int64_t kc, int64_t j, int64_t cols, uint32_t* out) {
  if (!trans_b) return pack_b_bfloat16_pairs(NR, trans_b, B, ldb, p0, kc, j, cols, out);
  pack_pairs_of_lines(NR, B + j * ldb, ldb, cols, p0, kc, out);
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
                                                   .pack_a = pack_a,
                                                   .pack_b = pack_b,
                                                   .bfloat16_steps = true};

}  // namespace gpt::gemm_detail
