// Packing op(A) and op(B) into the slivers the micro-kernels read, in the float formats: float32,
// and float32 rounded to bfloat16 (the FMA families' bfloat16 arithmetic). Bfloat16 pairs are
// packed in avx512_packing.h (avx512-bf16) and amx_packing.h / amx_tiles.h (the AMX families).
// Packing is pure copying and rounding (no arithmetic that could differ between paths) but a tenth
// of a training step: the bodies are inlined into each family's file, where they compile for its
// instruction set and move whole vector registers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/bfloat16.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm/kernel_family.h"

namespace gpt::gemm_detail {

// The k steps of a float sliver for kc values: kc, or kc padded with a zero to an even count when
// rounded to bfloat16 (the pairs VDPBF16PS takes).
template <bool kRounded>
constexpr int64_t float_steps(int64_t kc) {
  return kRounded ? (kc + 1) / 2 * 2 : kc;
}

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into MR-row slivers: for each k, MR consecutive values.
// Rows past mc are zero so the micro-kernel never branches on edges. kRounded: the values are
// rounded to bfloat16 (kept as float32) and k is padded with zeros to an even count, the steps
// VDPBF16PS takes, so that every bfloat16 path does the same multiply-adds.
template <bool kRounded>
GPT_ALWAYS_INLINE void pack_a_floats(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc,
                                     int64_t p0, int64_t kc, float* out) {
  const auto value = [](float x) { return kRounded ? round_through_bfloat16(x) : x; };
  const int64_t steps = float_steps<kRounded>(kc);
  if (trans_a) {
    // A stored [K, M]: each k is a contiguous run of the block's rows, read once for all its
    // slivers. Sliver by sliver, each of the kc stored rows would be fetched once per sliver, and
    // rows lda floats apart (a multiple of 128 or 512 bytes) share a few of L1's sets.
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = A + (p0 + k) * lda + i0;
      int64_t ir = 0;
      for (; ir + MR <= mc; ir += MR) {
        float* dst = out + ir * steps + k * MR;
        // memcpy: a plain loop here compiled with aliasing checks around every 6 or 12 floats.
        if constexpr (kRounded) {
          for (int64_t r = 0; r < MR; ++r) dst[r] = value(src[ir + r]);
        } else {
          std::memcpy(dst, src + ir, MR * sizeof(float));
        }
      }
      for (int64_t r = 0; ir < mc && r < MR; ++r)
        out[ir * steps + k * MR + r] = ir + r < mc ? value(src[ir + r]) : 0.0f;
    }
    for (int64_t ir = 0; ir < mc; ir += MR)
      for (int64_t i = kc * MR; i < steps * MR; ++i) out[ir * steps + i] = 0.0f;
    return;
  }
  // A stored [M, K]: each row is contiguous in k. Transpose in 8 x 8 tiles.
  constexpr int64_t kTile = 8;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps) {
    const int64_t rows = std::min(MR, mc - ir);
    const float* rows_begin = A + (i0 + ir) * lda + p0;
    for (int64_t k0 = 0; k0 < kc; k0 += kTile) {
      const int64_t kn = std::min(kTile, kc - k0);
      for (int64_t r0 = 0; r0 < MR; r0 += kTile)
        for (int64_t k = 0; k < kn; ++k) {
          float* dst = out + (k0 + k) * MR + r0;
          for (int64_t r = 0; r < std::min(kTile, MR - r0); ++r)
            dst[r] = r0 + r < rows ? value(rows_begin[(r0 + r) * lda + k0 + k]) : 0.0f;
        }
    }
    for (int64_t i = kc * MR; i < steps * MR; ++i) out[i] = 0.0f;
  }
}

// Packs op(B)[p0 : p0+kc, j : j+cols] into NR-column slivers: for each k, NR consecutive values,
// columns past cols zero (kRounded as for A). An untransposed B is read a line of k at a time
// across the slivers.
template <bool kRounded>
GPT_ALWAYS_INLINE void pack_b_floats(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc,
                                     int64_t j, int64_t cols, float* out) {
  const auto value = [](float x) { return kRounded ? round_through_bfloat16(x) : x; };
  const int64_t steps = float_steps<kRounded>(kc);
  if (!trans_b) {  // B stored [K, N]: each k is a contiguous run of columns
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t c0 = 0; c0 < cols; c0 += NR) {
        const float* src = B + (p0 + k) * ldb + j + c0;
        float* dst = out + c0 * steps + k * NR;
        const int64_t width = std::min(NR, cols - c0);
        for (int64_t c = 0; c < width; ++c) dst[c] = value(src[c]);
        for (int64_t c = width; c < NR; ++c) dst[c] = 0.0f;
      }
  } else {  // B stored [N, K]: each column is contiguous in k. Transpose in 8 x 8 tiles.
    constexpr int64_t kTile = 8;
    for_each_sliver(NR, steps, j, cols, out, [&](int64_t first, int64_t width, float* sliver) {
      for (int64_t k0 = 0; k0 < kc; k0 += kTile) {
        const int64_t kn = std::min(kTile, kc - k0);
        for (int64_t c0 = 0; c0 < NR; c0 += kTile)
          for (int64_t k = 0; k < kn; ++k) {
            float* dst = sliver + (k0 + k) * NR + c0;
            for (int64_t c = 0; c < kTile; ++c)
              dst[c] = value(c0 + c < width ? B[(first + c0 + c) * ldb + p0 + k0 + k] : 0.0f);
          }
      }
    });
  }
  if (kRounded && kc % 2 != 0)
    for (int64_t c0 = 0; c0 < cols; c0 += NR)
      for (int64_t c = 0; c < NR; ++c) out[c0 * steps + kc * NR + c] = 0.0f;
}

}  // namespace gpt::gemm_detail
