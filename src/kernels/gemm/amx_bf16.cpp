// The AMX family: bfloat16 products on Intel's tile registers (TDPBF16PS), the `tiles` arithmetic
// (kernels/gemm/amx_tiles.h) on the hardware. x86-64 only; the emulation is portable_amx_bf16.cpp.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/gemm/amx_packing.h"
#include "kernels/gemm/amx_tiles.h"
#include "kernels/gemm/kernel_family.h"

namespace gpt::gemm_detail {

namespace {

using amx::kMR;
using amx::kNR;
static_assert(kFitsTheDriver<kMR, kNR>, "MC a multiple of MR, MR <= kMaxMR, MR x NR <= kMaxTile (kernel_family.h)");
using amx::kRowBytes;
using amx::kTilePairs;

// The hardware's tile registers. The instructions name their registers in the opcode, hence one
// case per register; the compiler barriers make the stores that fill a buffer happen before a
// tile load reads it (GCC's tile-load asm does not say it reads memory).
#define GPT_TILE_CASES(macro) macro(0) macro(1) macro(2) macro(3) macro(4) macro(5) macro(6) macro(7)

struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

class HardwareTiles {
 public:
  __attribute__((target("amx-tile"))) HardwareTiles() {
    thread_local bool configured = false;
    if (configured) return;
    alignas(64) TileConfig config;
    for (int t = 0; t < 8; ++t) {
      config.bytes_per_row[t] = kRowBytes;
      config.rows[t] = 16;
    }
    // Not _tile_loadconfig: GCC 12's asm says it reads 8 bytes, so the stores of the other 56 may
    // be dropped and LDTILECFG reads stack garbage (#GP, or tiles left unconfigured: #UD).
    asm volatile("ldtilecfg %0" ::"m"(config));
    configured = true;
  }
  template <int T>
  __attribute__((target("amx-tile"))) void load(const void* base, int64_t stride) {
    asm volatile("" ::: "memory");
#define GPT_TILE_LOAD(t) \
  if constexpr (T == t) _tile_loadd(t, base, stride);
    GPT_TILE_CASES(GPT_TILE_LOAD)
#undef GPT_TILE_LOAD
  }
  template <int T>
  __attribute__((target("amx-tile"))) void zero() {
#define GPT_TILE_ZERO(t) \
  if constexpr (T == t) _tile_zero(t);
    GPT_TILE_CASES(GPT_TILE_ZERO)
#undef GPT_TILE_ZERO
  }
  template <int T>
  __attribute__((target("amx-tile"))) void store(void* base, int64_t stride) {
#define GPT_TILE_STORE(t) \
  if constexpr (T == t) _tile_stored(t, base, stride);
    GPT_TILE_CASES(GPT_TILE_STORE)
#undef GPT_TILE_STORE
    asm volatile("" ::: "memory");
  }
  template <int C, int A, int B>
  __attribute__((target("amx-tile,amx-bf16"))) void multiply_add() {
    static_assert(C < 4 && A == 4 && (B == 5 || B == 6), "the micro-kernel's registers");
#define GPT_TILE_DOT(t)                            \
  if constexpr (C == t) {                          \
    if constexpr (B == 5) _tile_dpbf16ps(t, 4, 5); \
    if constexpr (B == 6) _tile_dpbf16ps(t, 4, 6); \
  }
    GPT_TILE_DOT(0) GPT_TILE_DOT(1) GPT_TILE_DOT(2) GPT_TILE_DOT(3)
#undef GPT_TILE_DOT
  }
};
#undef GPT_TILE_CASES

bool hardware_supported() { return runs_amx_tiles(cpu_features()); }

}  // namespace

double amx_tile_chains(int64_t rounds) {
  HardwareTiles tiles;
  alignas(64) uint32_t operand[16 * 16];
  std::fill(operand, operand + 256, bfloat16_pair(1e-3f, 1e-3f));
  alignas(64) float result[16 * 16];
  tiles.zero<0>();
  tiles.zero<1>();
  tiles.zero<2>();
  tiles.zero<3>();
  tiles.load<4>(operand, kRowBytes);
  tiles.load<5>(operand, kRowBytes);
  tiles.load<6>(operand, kRowBytes);
  for (int64_t r = 0; r < rounds; ++r) {
    tiles.multiply_add<0, 4, 5>();
    tiles.multiply_add<1, 4, 6>();
    tiles.multiply_add<2, 4, 5>();
    tiles.multiply_add<3, 4, 6>();
  }
  tiles.store<0>(result, kRowBytes);
  return result[0];
}

constinit const KernelFamily<uint32_t> kAmxBf16{
    .name = kAmxKernel,
    .supported = hardware_supported,
    .MR = kMR,
    .NR = kNR,
    .vector_width = 16,
    .packed_a = amx::kernels<HardwareTiles>(std::make_index_sequence<kMR>()),
    .direct_a = {},
    .columns_a = {},
    .pack_a = amx::pack_a_avx512,
    .pack_b = amx::pack_b_avx512,
    .bfloat16_steps = true,
    .pair_multiple = kTilePairs};

}  // namespace gpt::gemm_detail
