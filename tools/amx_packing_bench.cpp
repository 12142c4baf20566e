// The AMX family's packing on one thread: its AVX-512 loops (kernels/gemm/amx_packing.h, what the
// hardware family runs) against the emulation's scalar loops (amx_tiles.h, the reference), on the
// 10.7M recipe's operands as the GEMM driver packs them: a 16384 x 384 activation as A (a forward
// product's), a 1152 x 16384 dy^T as A (a weight gradient's), a 384 x 1152 weight as B, in both
// storage orders. Needs AVX512_BF16, not AMX. Built on request (cmake --build build --target
// amx_packing_bench); prints a Markdown table of medians.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm/amx_packing.h"
#include "median_seconds.h"

namespace {

using namespace gpt::gemm_detail::amx;

using PackA = void (*)(int64_t, bool, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, uint32_t*);
using PackB = void (*)(int64_t, bool, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, uint32_t*);

}  // namespace

int main() {
  if (!gpt::cpu_features().avx512bf16) {
    std::fprintf(stderr, "amx_packing_bench: this CPU has no AVX512_BF16\n");
    return 1;
  }
  constexpr int64_t kBlock = 512;  // k values per K block, as the family packs them
  const int64_t rows = 16384, width = 384, cols = 1152;
  gpt::Rng rng(1);
  std::vector<float> activation(rows * width), gradient(rows * cols), weight(width * cols);
  for (auto* v : {&activation, &gradient, &weight})
    for (float& x : *v) x = static_cast<float>(rng.normal());
  std::vector<uint32_t> out(std::max(rows, cols) * padded_pairs(kBlock) + 64 * padded_pairs(kBlock));
  std::printf("| operand | storage | emulation's loops ms | AVX-512 ms | speed-up |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  // op(A) in rows: the activation of a forward product; transposed: a weight gradient's dy^T
  // (dy 16384 x 1152), 48 rows of it times K blocks of tokens per work item.
  for (const bool transposed : {false, true}) {
    const int64_t M = transposed ? cols : rows, K = transposed ? rows : width, lda = transposed ? cols : width;
    const float* A = transposed ? gradient.data() : activation.data();
    const auto time_a = [&](PackA pack) {
      return 1e3 * median_seconds(
                       [&] {
                         for (int64_t p0 = 0; p0 < K; p0 += kBlock)
                           for (int64_t i0 = 0; i0 < M; i0 += 48)
                             pack(kMR, transposed, A, lda, i0, 48, p0, std::min(kBlock, K - p0), out.data());
                       },
                       9);
    };
    const double scalar = time_a(pack_a), vector = time_a(pack_a_avx512);
    std::printf("| A %lld x %lld | %s | %.2f | %.2f | %.1fx |\n", static_cast<long long>(M), static_cast<long long>(K),
                transposed ? "transposed" : "rows", scalar, vector, scalar / vector);
  }
  for (const bool transposed : {false, true}) {
    const int64_t ldb = transposed ? width : cols;
    const auto time_b = [&](PackB pack) {
      return 1e3 * median_seconds([&] { pack(kNR, transposed, weight.data(), ldb, 0, width, 0, cols, out.data()); }, 9);
    };
    const double scalar = time_b(pack_b), vector = time_b(pack_b_avx512);
    std::printf("| B %lld x %lld | %s | %.2f | %.2f | %.1fx |\n", static_cast<long long>(width),
                static_cast<long long>(cols), transposed ? "transposed" : "rows", scalar, vector, scalar / vector);
  }
}
