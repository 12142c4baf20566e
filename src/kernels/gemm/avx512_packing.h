// The AVX-512 families' float packing of lines contiguous in k (A's rows when not transposed, B's
// columns when transposed: the forms whose portable packing moves one value at a time across
// lines): 16 lines at a time are read along k, rounded to bfloat16 in vector registers where the
// family needs it, and transposed in registers into the sliver's k steps. The same values as
// kernels/gemm/packing.h's loops (tests compare every kernel with the portable one). The pair
// packing of avx512-bf16 (VDPBF16PS's slivers) has both forms here: lines contiguous in k, and
// lines across the sliver (A^T's rows, B's), a pair joined from two of them per step; its pair
// helpers also serve the AMX family's packing.
#pragma once

// GCC 12's AVX-512 shift intrinsics pass an "undefined" register built from itself, which its
// -Wmaybe-uninitialized reports once they are inlined into these loops (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/avx512_lanes.h"
#include "kernels/gemm/packing.h"

#define GPT_AVX512_PACKING __attribute__((target("avx512f"))) inline
#define GPT_AVX512_PAIR_PACKING __attribute__((target("avx512f,avx512bf16"))) inline

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

// Bfloat16 pairs (k, k+1) in 32-bit words, as kernels/bfloat16.h's bfloat16_pair: k in the high
// half, which VDPBF16PS and TDPBF16PS add first. Rounded by VCVTNE(2)PS2BF16, which rounds exactly as
// rounded_bfloat16_bits does (all 2^32 inputs compared on Zen 5) in two to six instructions per 32
// values where rounding by integer arithmetic takes about 25. Used by avx512-bf16's packing below
// and the AMX family's (amx_packing.h).

// 32 consecutive values of a line rounded and joined into 16 pairs: word i holds values 2i, 2i + 1.
// The instruction leaves value i in half i; rotating each word puts its first value high.
GPT_AVX512_PAIR_PACKING __m512i bfloat16_pairs_along(__m512 first16, __m512 next16) {
  return _mm512_rol_epi32(reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(next16, first16)), 16);
}

// 16 values rounded to bfloat16, each in the low half of its 32-bit word (the high half zero).
GPT_AVX512_PAIR_PACKING __m512i bfloat16_low_halves(__m512 x) {
  return _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)));
}

// Values of two lines rounded and joined lane by lane: word i holds first[i] high, second[i] low.
GPT_AVX512_PAIR_PACKING __m512i bfloat16_pairs_across(__m512 first, __m512 second) {
  return _mm512_or_si512(_mm512_slli_epi32(bfloat16_low_halves(first), 16), bfloat16_low_halves(second));
}

// Floats rounded to bfloat16 in place, kept as float32 (the FMA families' rounded inputs), by
// VCVTNEPS2BF16: three instructions per 16 values where rounded_bfloat16_bits takes about a dozen.
GPT_AVX512_PAIR_PACKING void round_to_bfloat16_in_place(float* values, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = first_lanes(n - i);
    const __m512i halves = bfloat16_low_halves(_mm512_maskz_loadu_ps(lanes, values + i));
    _mm512_mask_storeu_epi32(values + i, lanes, _mm512_slli_epi32(halves, 16));
  }
}

// VDPBF16PS's slivers: as packing.h's, each step a pair, the pair past an odd kc padded with zero.
//
// The pair packing of lines contiguous in k (an untransposed A, a transposed B) into one sliver of
// `width` lines, lines past `lines` zero: 32 values of 16 lines at a time, rounded, joined into 16
// pairs, transposed into 16 steps.
GPT_AVX512_PAIR_PACKING void pack_pair_lines(int64_t width, const float* first_line, int64_t ld, int64_t lines,
                                             int64_t p0, int64_t kc, uint32_t* out) {
  const int64_t steps = (kc + 1) / 2;
  // Values fetched ahead on each line: the hardware's prefetchers miss these 16 interleaved
  // streams, and without it the loop ran slower than scalar code from memory (Zen 5).
  constexpr int64_t kAhead = 64;
  for (int64_t l0 = 0; l0 < width; l0 += 16) {
    const __mmask16 group = first_lanes(width - l0);
    for (int64_t s0 = 0; s0 < steps; s0 += 16) {
      const int64_t k0 = 2 * s0;
      __m512i w[16];
      for (int64_t l = 0; l < 16; ++l) {
        if (l0 + l >= lines) {
          w[l] = _mm512_setzero_si512();
          continue;
        }
        const float* values = first_line + (l0 + l) * ld + p0 + k0;
        _mm_prefetch(reinterpret_cast<const char*>(values + kAhead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(values + kAhead + 16), _MM_HINT_T0);
        w[l] = bfloat16_pairs_along(_mm512_maskz_loadu_ps(first_lanes(kc - k0), values),
                                    _mm512_maskz_loadu_ps(first_lanes(kc - k0 - 16), values + 16));
      }
      transpose_16x16(w);
      for (int64_t s = 0; s < std::min<int64_t>(16, steps - s0); ++s)
        _mm512_mask_storeu_epi32(out + (s0 + s) * width + l0, group, w[s]);
    }
  }
}

// The pair packing of lines across the slivers (A^T's rows of k, B's): `count` values of each line
// go to slivers of `width` (the last one's width past them zero), step s joining values of lines
// k = 2s and 2s + 1 (zero past kc). The lines are read whole, in order, fetched a few ahead.
GPT_AVX512_PAIR_PACKING void pack_pair_rows(int64_t width, const float* first_line, int64_t ld, int64_t count,
                                            int64_t kc, uint32_t* out) {
  const int64_t steps = (kc + 1) / 2;
  constexpr int64_t kAhead = 16;  // lines fetched ahead of the two being read (measured best on Zen 5)
  for (int64_t s = 0; s < steps; ++s) {
    const float* first = first_line + 2 * s * ld;
    const bool has_second = 2 * s + 1 < kc;
    for (int64_t k = 2 * s + kAhead; k < std::min(kc, 2 * s + kAhead + 2); ++k)
      for (int64_t c = 0; c < count; c += 16)
        _mm_prefetch(reinterpret_cast<const char*>(first_line + k * ld + c), _MM_HINT_T0);
    for (int64_t q0 = 0; q0 < count; q0 += width) {
      uint32_t* step = out + q0 * steps + s * width;
      for (int64_t c0 = 0; c0 < width; c0 += 16) {
        const __mmask16 present = first_lanes(count - q0 - c0);
        const float* values = first + q0 + c0;
        const __m512 second = has_second ? _mm512_maskz_loadu_ps(present, values + ld) : _mm512_setzero_ps();
        _mm512_mask_storeu_epi32(step + c0, first_lanes(width - c0),
                                 bfloat16_pairs_across(_mm512_maskz_loadu_ps(present, values), second));
      }
    }
  }
}

}  // namespace gpt::gemm_detail::avx512

#undef GPT_AVX512_PACKING
#undef GPT_AVX512_PAIR_PACKING
#pragma GCC diagnostic pop
