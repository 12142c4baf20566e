// The tiles arithmetic's portable family: the AMX micro-kernel (kernels/gemm/amx_tiles.h) on tile
// registers emulated in C++. Any CPU runs it, with the hardware's bits and far slower: it is what
// lets a run trained on AMX continue bit for bit elsewhere, and what checks the AMX family's
// micro-kernel and blocking on a machine without AMX. Its scalar packing (amx_tiles.h) is the
// reference the hardware family's AVX-512 packing is tested against, word for word.
#include <utility>

#include "kernels/gemm.h"
#include "kernels/gemm/amx_tiles.h"
#include "kernels/gemm/kernel_family.h"

namespace gpt::gemm_detail {

namespace {

bool always() { return true; }

static_assert(kFitsTheDriver<amx::kMR, amx::kNR>,
              "MC a multiple of MR, MR <= kMaxMR, MR x NR <= kMaxTile (kernel_family.h)");

}  // namespace

constinit const KernelFamily<uint32_t> kPortableAmxBf16{
    .name = kPortableAmxKernel,
    .supported = always,
    .MR = amx::kMR,
    .NR = amx::kNR,
    .vector_width = 1,
    .packed_a = amx::kernels<amx::EmulatedTiles>(std::make_index_sequence<amx::kMR>()),
    .direct_a = {},
    .columns_a = {},
    .pack_a = amx::pack_a,
    .pack_b = amx::pack_b,
    .bfloat16_steps = true,
    .pair_multiple = amx::kTilePairs};

}  // namespace gpt::gemm_detail
