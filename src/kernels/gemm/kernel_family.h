// A GEMM micro-kernel family: the register tile, the micro-kernels for 1 .. MR rows, the packing
// they read, and how they get the bfloat16 arithmetic. Each family is defined in its own file
// (portable.cpp, portable_amx_bf16.cpp; avx2.cpp, avx512.cpp, avx512_bf16.cpp, amx_bf16.cpp on
// x86-64; neon.cpp on aarch64) and listed in dispatch.cpp, which picks one per call; the blocked
// driver (kernels/gemm.cpp) runs any of them.
//
// Every micro-kernel computes c[rows x NR] (row stride ldc) = (load_c ? c : 0) + sum_k a[k] b[k]
// with one fused multiply-add per term in k order, so all of them round identically; the AMX
// families sum in the tile instruction's order instead (kernels/gemm.h, Bf16Arithmetic). A is read
// packed or, where the family has the kernels for it, in place from the stored matrix (ARead).
// B is always packed.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

namespace gpt::gemm_detail {

// Cache blocks (in elements): an MC x KC block of A (packed, or read in place) and the KC-deep
// slivers of B that a work item reads stay in L2; one KC x NR sliver of B stays in L1. The
// register tile MR x NR depends on the family.
// Packed operands hold k steps: one float per k (float32 inputs), or one bfloat16 pair (k, k+1)
// in a uint32 (bfloat16 inputs, the layout VDPBF16PS reads), so KC is even. KC counts 4-byte
// steps: a K block of pairs spans 2 KC values of k (KernelFamily::kc_values), which halves how
// often C is read and written back, the same cache footprint.
inline constexpr int64_t KC = 256;
inline constexpr int64_t MC = 48;  // a multiple of every family's MR
inline constexpr int64_t kMaxMR = 16;
inline constexpr int64_t kMaxTile = 16 * 64;  // MR x NR of the largest register or tile block

// A^T B with a long K (a weight gradient over a batch's tokens) and more columns than rows runs as
// C^T = B^T A, transposed into C, when a K block of packed B is wider than 1 MiB (a 384 x 1536 MLP
// projection's is 1.5 MiB), the L2 of a Zen 4 or 5 core: B^T A packs the narrow operand instead,
// which stays in L2 while every work item reads it. Each element is the same products summed in the
// same k order, so the bits are the same (but for which payload survives a product of two NaNs);
// the transposes are two passes over C, small beside K multiply-adds per element. Where B's block
// fits in L2 the swap measured slower, and a long K is where it was measured faster
// (docs/benchmarks.md), hence both bounds.
inline constexpr int64_t kTransposedMinK = 4096;
// A^T read in place puts a tile's k steps on lines lda floats apart, which share a few of L1's sets
// when lda is a multiple of 128 or 512 bytes: with K = 768 (the CPU recipe's weight gradients) the
// in-place read was faster on Sapphire Rapids, with K = 16384 (the 10.7M recipe's) packing was,
// so from a long K on A^T is packed even by a family that can read it in place.
inline constexpr int64_t kPackedTransposedAMinK = 4096;
inline constexpr int64_t kL2PackedBytes = int64_t{1} << 20;
inline constexpr bool runs_transposed(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K) {
  return trans_a && !trans_b && M < N && K >= kTransposedMinK && KC * N * int64_t{sizeof(float)} > kL2PackedBytes;
}

// What the blocked driver (kernels/gemm.cpp) takes for granted of a register tile: MC rows are
// whole MR-row slivers (so a work item's rows never straddle two), a micro-kernel exists for every
// row count up to MR, and an edge tile fits its kMaxTile stack buffer. Each family's file asserts
// it of its own MR and NR, so a new or retuned family cannot break it unnoticed.
template <int64_t kMR, int64_t kNR>
inline constexpr bool kFitsTheDriver = kMR >= 1 && kMR <= kMaxMR&& MC % kMR == 0 && kNR >= 1 && kMR* kNR <= kMaxTile;

// Where a micro-kernel finds a[r][k], row r of its tile at step k: packed in MR-row slivers, or in
// place in the stored row-major A (leading dimension lda), as op(A) = A (`rows`: each tile row
// contiguous in k) or op(A) = A^T (`columns`: the tile's rows side by side in one stored row per k,
// so a transposed operand needs no packing either).
enum class ARead { packed, rows, columns };
template <ARead kRead, int64_t kMR>
constexpr int64_t a_index(int64_t lda, int64_t r, int64_t k) {
  if constexpr (kRead == ARead::packed) return k * kMR + r;
  if constexpr (kRead == ARead::rows) return r * lda + k;
  return k * lda + r;
}

template <typename Packed>
using MicroKernel = void (*)(int64_t steps, const Packed* a, int64_t lda, const Packed* b, float* c, int64_t ldc,
                             bool load_c);
template <typename Packed>
using MicroKernels = std::array<MicroKernel<Packed>, kMaxMR>;  // [rows - 1]

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into MR-row slivers, or op(B)[p0 : p0+kc, j : j+cols]
// into NR-column slivers, one after another (the last one's columns past cols zero): a run of
// slivers lets an untransposed B be read a whole line of k at a time (kernels/gemm/packing.h).
template <typename Packed>
using PackA = void (*)(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                       int64_t kc, Packed* out);
template <typename Packed>
using PackB = void (*)(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                       int64_t cols, Packed* out);

// pack_sliver(j, cols, out) for each NR-column sliver of columns [j, j + cols), the slivers one
// after another in out, each `steps` x NR: for the packings that go one sliver at a time.
template <typename Packed, typename PackSliver>
inline void for_each_sliver(int64_t NR, int64_t steps, int64_t j, int64_t cols, Packed* out,
                            const PackSliver& pack_sliver) {
  for (int64_t c = 0; c < cols; c += NR) pack_sliver(j + c, std::min(NR, cols - c), out + c * steps);
}

// The one-row path's dot products (kernels/gemm/row_times_transposed.h).
using RowDots = void (*)(const float* a, const float* B, int64_t ldb, int64_t K, int64_t rows, float* out);

// Packed is float (one k per step) or uint32_t (a bfloat16 pair per step).
template <typename Packed>
struct KernelFamily {
  using PackedType = Packed;
  const char* name;
  bool (*supported)();  // whether this CPU can run it
  int64_t MR, NR;
  int vector_width;  // in floats (1: portable)
  MicroKernels<Packed> packed_a;
  // A read in place (float32 families only: k is never padded to pairs there, so the kernels'
  // steps are the stored k values). Empty when that storage order of A must be packed.
  MicroKernels<Packed> direct_a;   // ARead::rows: op(A) = A
  MicroKernels<Packed> columns_a;  // ARead::columns: op(A) = A^T
  PackA<Packed> pack_a;
  PackB<Packed> pack_b;
  // A work item's tiles go B sliver by B sliver (BLIS's order): one KC x NR sliver of B stays in L1
  // while the item's A (packed, or its MC rows in place) streams from L2, so the item's B block need
  // not fit in L2 (a 384-column weight gradient's is 384 KiB: more than half a Zen 3 core's L2; a
  // 1152-column forward's 1.1 MiB). Else A sliver by A sliver, the item's B block in L2.
  bool b_slivers_outer = false;
  RowDots row_dots = nullptr;  // float32 families: the dot products of a one-row product

  // bfloat16 arithmetic: k padded to pairs (VDPBF16PS's steps); for float kernels, subnormals
  // flushed by MXCSR while the micro-kernels run.
  bool bfloat16_steps = false;
  bool flush_with_mxcsr = false;
  // Pairs padded to a multiple of this (AMX: the 16 pairs of one tile row).
  int64_t pair_multiple = 1;

  // Packed elements per row or column for kc values of k.
  int64_t steps(int64_t kc) const {
    if (!bfloat16_steps) return kc;
    if (std::is_same_v<Packed, float>) return (kc + 1) / 2 * 2;
    return ((kc + 1) / 2 + pair_multiple - 1) / pair_multiple * pair_multiple;
  }
  // Values of k per K block: KC steps.
  int64_t kc_values() const { return std::is_same_v<Packed, float> ? KC : 2 * KC; }
  // The kernels that read op(A) in place for this storage order of A (empty: A is packed).
  const MicroKernels<Packed>& in_place_a(bool trans_a) const { return trans_a ? columns_a : direct_a; }
  bool reads_a_in_place(bool trans_a, int64_t K) const {
    return in_place_a(trans_a)[0] != nullptr && !(trans_a && K >= kPackedTransposedAMinK);
  }
};

// The families (each defined in its own file). The float32 ones multiply float32 inputs; the
// `rounded` ones are the same micro-kernels on inputs rounded to bfloat16 while packed, with
// subnormals flushed: the bfloat16 arithmetic on FMAs. kAvx512Bf16 runs it on VDPBF16PS.
extern const KernelFamily<float> kPortable, kPortableRounded;
extern const KernelFamily<float> kAvx2, kAvx2Rounded;
extern const KernelFamily<float> kAvx512, kAvx512Rounded;
// kAvx512Rounded's packing both ways, which tests compare: rounding inside the packing loops by
// integer arithmetic (any AVX-512 CPU), or packing float32 and then rounding it by VCVTNEPS2BF16
// (AVX512_BF16 only: the family's choice where the CPU has it).
namespace avx512_rounded {
extern const PackA<float> pack_a_by_integers, pack_a_by_conversion;
extern const PackB<float> pack_b_by_integers, pack_b_by_conversion;
}  // namespace avx512_rounded
extern const KernelFamily<uint32_t> kAvx512Bf16;
extern const KernelFamily<float> kNeon;  // aarch64; bfloat16 inputs run on kPortableRounded there
// The tiles arithmetic: AMX's TDPBF16PS, and the same instructions emulated in C++ (any CPU).
extern const KernelFamily<uint32_t> kPortableAmxBf16;
extern const KernelFamily<uint32_t> kAmxBf16;  // x86-64
// Four independent chains of `rounds` TDPBF16PS each (16 x 16 x 32 multiply-adds), for the peak
// probe; only where kAmxBf16 is supported.
double amx_tile_chains(int64_t rounds);

}  // namespace gpt::gemm_detail
