// What both AMX families share (kernels/gemm/amx_bf16.cpp on the hardware, portable_amx_bf16.cpp
// emulated): the tile layout of the packed operands, the 16 x 64 micro-kernel written against a
// Tiles type (registers and the four tile instructions), and the emulated registers; and the
// scalar packing, which the emulation runs and the hardware family's AVX-512 packing
// (amx_packing.h) must equal word for word.
//
// The arithmetic (Bf16Arithmetic::tiles, kernels/gemm.h) is the instruction's, measured on Sapphire
// Rapids (../shared/amx): for each output and each 32 values of k (one instruction), two float32
// sums from +0, one over the even k's products and one over the odd k's, each a chain of fused
// multiply-adds in k order, then c = c + (even + odd); round to nearest even at every step,
// subnormal inputs (c included) read as zero and subnormal results flushed to zero (to a zero of
// the result's sign; tiny as x86 decides it: bfloat16_multiply_add in kernels/bfloat16.h. That AMX
// flushes the few exact results just below FLT_MIN alike is assumed, to be confirmed by
// GemmBfloat16.EveryKernelFlushesTinyResultsAsX86Decides on the first machine with AMX.) The
// 32-value groups start at k = 0 of the whole product (K blocks hold 512 values) and the last one
// is padded with zeros, which take part in the sums (0 x 0 added to a flushed -0 gives +0), so the
// bits do not depend on blocking, threads or which family runs.
//
// Micro-kernel: 16 rows x 64 columns, four C tiles (tmm0-3), one A tile (tmm4) and two B tiles
// (tmm5, tmm6) taking turns. Packed A: per 16 pairs of k, 16 rows of 16 pairs (one 1 KB tile);
// packed B: per 16 pairs, four 1 KB tiles of 16 pairs x 16 columns (the pair-interleaved layout
// TDPBF16PS reads as B). k is padded with zeros in both A and B to whole tiles (0 x NaN would
// leak otherwise).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/bfloat16.h"
#include "kernels/gemm/kernel_family.h"

namespace gpt::gemm_detail::amx {

inline constexpr int64_t kMR = 16, kNR = 64;
inline constexpr int64_t kTilePairs = 16;               // pairs of k per tile row: 32 values of k
inline constexpr int64_t kTileWords = 16 * kTilePairs;  // 32-bit words in one tile (1 KB)
inline constexpr int64_t kRowBytes = 64;                // bytes per tile row
inline constexpr int64_t kCTiles = kNR / 16;            // C tiles side by side

inline int64_t padded_pairs(int64_t kc) { return ((kc + 1) / 2 + kTilePairs - 1) / kTilePairs * kTilePairs; }

// Where pair s of row r sits in an A sliver, and pair s of column c in a B sliver.
inline int64_t a_word(int64_t s, int64_t r) { return s / kTilePairs * kTileWords + r * kTilePairs + s % kTilePairs; }
inline int64_t b_word(int64_t s, int64_t c) {
  return s / kTilePairs * (kCTiles * kTileWords) + c / 16 * kTileWords + s % kTilePairs * 16 + c % 16;
}

// Writes the bfloat16 pairs of `lines` rows (of A) or columns (of B) of one K block, kc values of k
// from `block`, line l's pair s at out[word(s, l)]; a last odd k is paired with zero. Steps of
// `along_lines` and `along_k` floats move between lines and along k.
template <typename Word>
void pack_pairs(const float* block, int64_t along_lines, int64_t along_k, int64_t lines, int64_t kc, Word word,
                uint32_t* out) {
  const int64_t whole = kc / 2;
  for (int64_t s = 0; s < whole; ++s)
    for (int64_t l = 0; l < lines; ++l) {
      const float* first = block + l * along_lines + 2 * s * along_k;
      out[word(s, l)] = bfloat16_pair(first[0], first[along_k]);
    }
  if (kc % 2 != 0)
    for (int64_t l = 0; l < lines; ++l)
      out[word(whole, l)] = bfloat16_pair(block[l * along_lines + 2 * whole * along_k], 0.0f);
}

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into 16-row slivers of A tiles, rows past mc and pairs past
// kc zero.
inline void pack_a(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, uint32_t* out) {
  const int64_t steps = padded_pairs(kc);
  const int64_t along_k = trans_a ? lda : 1, along_rows = trans_a ? 1 : lda;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps) {
    std::fill(out, out + MR * steps, 0u);
    pack_pairs(A + (i0 + ir) * along_rows + p0 * along_k, along_rows, along_k, std::min(MR, mc - ir), kc, a_word, out);
  }
}

// Packs op(B)[p0 : p0+kc, j : j+cols] into 64-column slivers of B tiles, columns past cols and
// pairs past kc zero.
inline void pack_b(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                   int64_t cols, uint32_t* out) {
  const int64_t along_k = trans_b ? 1 : ldb, along_cols = trans_b ? ldb : 1, steps = padded_pairs(kc);
  for_each_sliver(NR, steps, j, cols, out, [&](int64_t first, int64_t width, uint32_t* sliver) {
    std::fill(sliver, sliver + NR * steps, 0u);
    pack_pairs(B + first * along_cols + p0 * along_k, along_cols, along_k, width, kc, b_word, sliver);
  });
}

// The tile registers in C++: eight tiles of 16 rows x 64 bytes, and what TILELOADD, TILEZERO,
// TILESTORED and TDPBF16PS do to them (in the configuration below: every tile 16 x 64 bytes).
class EmulatedTiles {
 public:
  template <int T>
  void load(const void* base, int64_t stride) {
    for (int r = 0; r < 16; ++r) std::memcpy(tiles_[T][r], static_cast<const char*>(base) + r * stride, kRowBytes);
  }
  template <int T>
  void zero() {
    std::memset(tiles_[T], 0, sizeof tiles_[T]);
  }
  template <int T>
  void store(void* base, int64_t stride) {
    for (int r = 0; r < 16; ++r) std::memcpy(static_cast<char*>(base) + r * stride, tiles_[T][r], kRowBytes);
  }
  template <int C, int A, int B>
  void multiply_add() {
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        float even = 0.0f, odd = 0.0f;
        for (int p = 0; p < kTilePairs; ++p) {
          const uint32_t a = tiles_[A][m][p], b = tiles_[B][p][n];
          // bfloat16_pair puts the pair's first (even) k in the high half.
          even = bfloat16_multiply_add(high(a), high(b), even);
          odd = bfloat16_multiply_add(low(a), low(b), odd);
        }
        float c;
        std::memcpy(&c, &tiles_[C][m][n], sizeof c);
        c = flush_subnormal(flush_subnormal(c) + flush_subnormal(even + odd));
        std::memcpy(&tiles_[C][m][n], &c, sizeof c);
      }
  }

 private:
  static float high(uint32_t pair) { return bfloat16_to_float(static_cast<uint16_t>(pair >> 16)); }
  static float low(uint32_t pair) { return bfloat16_to_float(static_cast<uint16_t>(pair & 0xffffu)); }
  uint32_t tiles_[8][16][16];
};

// c[kRows x 64] (+)= the packed sliver products, `steps` pairs of k (a multiple of 16). A partial
// row block runs on a local 16-row block.
template <class Tiles, int kRows>
void micro_kernel(int64_t steps, const uint32_t* a, int64_t /*lda*/, const uint32_t* b, float* c, int64_t ldc,
                  bool load_c) {
  Tiles tiles;
  alignas(64) float local[kRows < kMR ? kMR * kNR : 1];
  float* out = c;
  int64_t ld = ldc;
  if constexpr (kRows < kMR) {
    out = local;
    ld = kNR;
    std::fill(local, local + kMR * kNR, 0.0f);
    if (load_c)
      for (int r = 0; r < kRows; ++r) std::memcpy(local + r * kNR, c + r * ldc, kNR * sizeof(float));
  }
  const int64_t stride = ld * static_cast<int64_t>(sizeof(float));
  if (load_c) {
    tiles.template load<0>(out, stride);
    tiles.template load<1>(out + 16, stride);
    tiles.template load<2>(out + 32, stride);
    tiles.template load<3>(out + 48, stride);
  } else {
    tiles.template zero<0>();
    tiles.template zero<1>();
    tiles.template zero<2>();
    tiles.template zero<3>();
  }
  for (int64_t s = 0; s < steps; s += kTilePairs) {
    const uint32_t* bs = b + s * kNR;
    tiles.template load<4>(a + s * kMR, kRowBytes);
    tiles.template load<5>(bs, kRowBytes);
    tiles.template multiply_add<0, 4, 5>();
    tiles.template load<6>(bs + kTileWords, kRowBytes);
    tiles.template multiply_add<1, 4, 6>();
    tiles.template load<5>(bs + 2 * kTileWords, kRowBytes);
    tiles.template multiply_add<2, 4, 5>();
    tiles.template load<6>(bs + 3 * kTileWords, kRowBytes);
    tiles.template multiply_add<3, 4, 6>();
  }
  tiles.template store<0>(out, stride);
  tiles.template store<1>(out + 16, stride);
  tiles.template store<2>(out + 32, stride);
  tiles.template store<3>(out + 48, stride);
  if constexpr (kRows < kMR)
    for (int r = 0; r < kRows; ++r) std::memcpy(c + r * ldc, local + r * kNR, kNR * sizeof(float));
}

template <class Tiles, std::size_t... R>
constexpr MicroKernels<uint32_t> kernels(std::index_sequence<R...>) {
  return {&micro_kernel<Tiles, static_cast<int>(R) + 1>...};
}

}  // namespace gpt::gemm_detail::amx
