// The AVX-512 families' float packing of lines contiguous in k (A's rows when not transposed, B's
// columns when transposed: the forms whose portable packing moves one value at a time across
// lines): 16 lines at a time are read along k, rounded to bfloat16 in vector registers where the
// family needs it, and transposed in registers into the sliver's k steps. The same values as
// kernels/gemm/packing.h's loops (tests compare every kernel with the portable one). The pair
// packing of avx512-bf16 keeps packing.h's loops: their compiled code already waits on reading A,
// not on moving values (docs/benchmarks.md, GEMM schedule).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/gemm/packing.h"

#define GPT_AVX512_PACKING __attribute__((target("avx512f"))) inline

namespace gpt::gemm_detail::avx512 {

// rounded_bfloat16_bits (kernels/bfloat16.h) on 16 floats.
GPT_AVX512_PACKING __m512i rounded_bfloat16_bits(__m512 x) {
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

// Transposes 16 x 16 words in place: w[i] lane j becomes w[j] lane i.
GPT_AVX512_PACKING void transpose_16x16(__m512i w[16]) {
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

// The float packing of lines contiguous in k into one sliver of `width` lines, lines past `lines`
// zero: 16 values of 16 lines at a time, transposed into 16 steps. kRounded: rounded to bfloat16
// (kept as float32), k padded as float_steps says (packing.h's pack_a_floats).
template <bool kRounded>
GPT_AVX512_PACKING void pack_float_lines(int64_t width, const float* first_line, int64_t ld, int64_t lines, int64_t p0,
                                         int64_t kc, float* out) {
  const int64_t steps = float_steps<kRounded>(kc);
  for (int64_t l0 = 0; l0 < width; l0 += 16) {
    const __mmask16 group = first_lanes(width - l0);
    for (int64_t k0 = 0; k0 < steps; k0 += 16) {
      __m512i w[16];
      for (int64_t l = 0; l < 16; ++l) {
        if (l0 + l >= lines) {
          w[l] = _mm512_setzero_si512();
          continue;
        }
        const __m512 x = _mm512_maskz_loadu_ps(first_lanes(kc - k0), first_line + (l0 + l) * ld + p0 + k0);
        w[l] = kRounded ? rounded_bfloat16_bits(x) : _mm512_castps_si512(x);
      }
      transpose_16x16(w);
      for (int64_t k = 0; k < std::min<int64_t>(16, steps - k0); ++k)
        _mm512_mask_storeu_epi32(out + (k0 + k) * width + l0, group, w[k]);
    }
  }
}

}  // namespace gpt::gemm_detail::avx512

#undef GPT_AVX512_PACKING
