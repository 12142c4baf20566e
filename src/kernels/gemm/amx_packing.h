// The AMX family's packing with AVX-512 (every CPU with AMX-BF16 has AVX512_BF16): the same words
// as amx_tiles.h's pack_a and pack_b, which the emulation keeps (a test compares the two word for
// word). A tile row holds 16 pairs of one line of A, 16 columns of B hold one pair each: the
// forms contiguous along those (A's rows, B's rows of k) are rounded straight into place, the
// others through the 16 x 16 transpose. Every word of a sliver is written, zeros included.
#pragma once

#include "kernels/gemm/amx_tiles.h"
#include "kernels/gemm/avx512_packing.h"

#define GPT_AMX_PACKING __attribute__((target("avx512f,avx512bf16"))) inline

namespace gpt::gemm_detail::amx {

// Pairs 16 t .. 16 t + 15 of a line contiguous in k (kc values from `line`), rounded; zero past kc.
GPT_AMX_PACKING __m512i tile_row_along(const float* line, int64_t kc, int64_t t) {
  const int64_t k0 = 32 * t;
  return avx512::bfloat16_pairs_along(_mm512_maskz_loadu_ps(first_lanes(kc - k0), line + k0),
                                      _mm512_maskz_loadu_ps(first_lanes(kc - k0 - 16), line + k0 + 16));
}

// Pair s of 16 lines lying side by side along rows of k (`lines` of them present, the rest zero),
// rows 2 s and 2 s + 1 of `first_row`, kc rows of k: zero past kc.
GPT_AMX_PACKING __m512i pair_across(const float* first_row, int64_t ld, int64_t lines, int64_t kc, int64_t s) {
  if (2 * s >= kc) return _mm512_setzero_si512();
  const __mmask16 present = first_lanes(lines);
  const float* first = first_row + 2 * s * ld;
  const __m512 second = 2 * s + 1 < kc ? _mm512_maskz_loadu_ps(present, first + ld) : _mm512_setzero_ps();
  return avx512::bfloat16_pairs_across(_mm512_maskz_loadu_ps(present, first), second);
}

// amx::pack_a: 16-row slivers of A tiles, rows past mc and pairs past kc zero.
GPT_AMX_PACKING void pack_a_avx512(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc,
                                   int64_t p0, int64_t kc, uint32_t* out) {
  const int64_t steps = padded_pairs(kc), tiles = steps / kTilePairs;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps) {
    const int64_t rows = std::min(MR, mc - ir);
    for (int64_t t = 0; t < tiles; ++t) {
      uint32_t* tile = out + t * kTileWords;
      if (!trans_a) {
        for (int64_t r = 0; r < 16; ++r) {
          const __m512i row = r < rows ? tile_row_along(A + (i0 + ir + r) * lda + p0, kc, t) : _mm512_setzero_si512();
          _mm512_storeu_si512(tile + r * kTilePairs, row);
        }
        continue;
      }
      __m512i w[16];  // w[q] lane r: pair 16 t + q of row r
      for (int64_t q = 0; q < 16; ++q) w[q] = pair_across(A + p0 * lda + i0 + ir, lda, rows, kc, 16 * t + q);
      avx512::transpose_16x16(w);
      for (int64_t r = 0; r < 16; ++r) _mm512_storeu_si512(tile + r * kTilePairs, w[r]);
    }
  }
}

// One 64-column sliver of amx::pack_b: columns first .. first + width of op(B).
GPT_AMX_PACKING void pack_b_sliver(bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t first,
                                   int64_t width, uint32_t* sliver) {
  const int64_t tiles = padded_pairs(kc) / kTilePairs;
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t g = 0; g < kCTiles; ++g) {
      uint32_t* tile = sliver + t * (kCTiles * kTileWords) + g * kTileWords;  // row q: pair 16 t + q
      const int64_t c0 = first + 16 * g, present = width - 16 * g;
      if (!trans_b) {
        for (int64_t q = 0; q < 16; ++q)
          _mm512_storeu_si512(tile + q * 16, pair_across(B + p0 * ldb + c0, ldb, present, kc, 16 * t + q));
        continue;
      }
      __m512i w[16];  // w[c] lane q: pair 16 t + q of column c0 + c
      for (int64_t c = 0; c < 16; ++c)
        w[c] = c < present ? tile_row_along(B + (c0 + c) * ldb + p0, kc, t) : _mm512_setzero_si512();
      avx512::transpose_16x16(w);
      for (int64_t q = 0; q < 16; ++q) _mm512_storeu_si512(tile + q * 16, w[q]);
    }
}

// amx::pack_b: 64-column slivers of B tiles, columns past cols and pairs past kc zero.
inline void pack_b_avx512(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                          int64_t cols, uint32_t* out) {
  for_each_sliver(NR, padded_pairs(kc), j, cols, out, [&](int64_t first, int64_t width, uint32_t* sliver) {
    pack_b_sliver(trans_b, B, ldb, p0, kc, first, width, sliver);
  });
}

}  // namespace gpt::gemm_detail::amx

#undef GPT_AMX_PACKING
