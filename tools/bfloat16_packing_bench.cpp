// The bfloat16 packings that have two implementations, timed against each other on one thread:
// the AMX family's AVX-512 loops (kernels/gemm/amx_packing.h, what the hardware family runs)
// against the emulation's scalar loops (amx_tiles.h, the reference), and avx512-fma-bf16's
// float32 packing rounded by VCVTNEPS2BF16 (its choice on AVX512_BF16 CPUs) against its rounding
// by integers inside the packing loops (its choice elsewhere). Operands of the 10.7M recipe as the
// GEMM driver packs them: a 16384 x 384 activation as A (a forward product's), a 1152 x 16384 dy^T
// as A (a weight gradient's), a 384 x 1152 weight as B, in both storage orders. Needs
// AVX512_BF16, not AMX. Built on request (cmake --build build --target bfloat16_packing_bench);
// prints a Markdown table of medians.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm/amx_packing.h"
#include "kernels/gemm/kernel_family.h"
#include "median_seconds.h"

namespace {

using gpt::gemm_detail::PackA;
using gpt::gemm_detail::PackB;

struct Operands {
  int64_t rows = 16384, width = 384, cols = 1152;
  std::vector<float> activation, gradient, weight;
  Operands() : activation(rows * width), gradient(rows * cols), weight(width * cols) {
    gpt::Rng rng(1);
    for (auto* v : {&activation, &gradient, &weight})
      for (float& x : *v) x = static_cast<float>(rng.normal());
  }
};

// One packing's two implementations, as the driver calls them: A in work items of MC rows per K
// block, B per K block, every sliver at once; `layout` is the family whose slivers both write.
template <typename Packed>
struct Packing {
  const char* family;
  const char* reference;  // what the faster form is measured against
  const gpt::gemm_detail::KernelFamily<Packed>& layout;
  PackA<Packed> reference_a, fast_a;
  PackB<Packed> reference_b, fast_b;
};

template <typename Packed>
void print_rows(const Operands& m, const Packing<Packed>& packing) {
  using gpt::gemm_detail::MC;
  const auto& layout = packing.layout;
  const int64_t block = layout.kc_values();
  const auto whole_slivers = [](int64_t lines, int64_t width) { return (lines + width - 1) / width * width; };
  std::vector<Packed> out(std::max(whole_slivers(MC, layout.MR), whole_slivers(m.cols, layout.NR)) *
                          layout.steps(block));
  const auto row = [&](const char* operand, int64_t first, int64_t second, bool transposed, double reference,
                       double fast) {
    std::printf("| %s | %s %lld x %lld | %s | %s | %.2f | %.2f | %.1fx |\n", packing.family, operand,
                static_cast<long long>(first), static_cast<long long>(second), transposed ? "transposed" : "rows",
                packing.reference, reference, fast, reference / fast);
  };
  // op(A) in rows: the activation of a forward product; transposed: a weight gradient's dy^T
  // (dy 16384 x 1152), MC rows of it times K blocks of tokens per work item.
  for (const bool transposed : {false, true}) {
    const int64_t M = transposed ? m.cols : m.rows, K = transposed ? m.rows : m.width;
    const int64_t lda = transposed ? m.cols : m.width;
    const float* A = transposed ? m.gradient.data() : m.activation.data();
    const auto time_a = [&](PackA<Packed> pack) {
      return 1e3 * median_seconds(
                       [&] {
                         for (int64_t p0 = 0; p0 < K; p0 += block)
                           for (int64_t i0 = 0; i0 < M; i0 += MC)
                             pack(layout.MR, transposed, A, lda, i0, MC, p0, std::min(block, K - p0), out.data());
                       },
                       9);
    };
    row("A", M, K, transposed, time_a(packing.reference_a), time_a(packing.fast_a));
  }
  for (const bool transposed : {false, true}) {
    const int64_t ldb = transposed ? m.width : m.cols;
    const auto time_b = [&](PackB<Packed> pack) {
      return 1e3 * median_seconds(
                       [&] {
                         for (int64_t p0 = 0; p0 < m.width; p0 += block)
                           pack(layout.NR, transposed, m.weight.data(), ldb, p0, std::min(block, m.width - p0), 0,
                                m.cols, out.data());
                       },
                       101);  // a tenth of a millisecond: more runs to see past the host's noise
    };
    row("B", m.width, m.cols, transposed, time_b(packing.reference_b), time_b(packing.fast_b));
  }
}

}  // namespace

int main() {
  if (!gpt::cpu_features().avx512bf16) {
    std::fprintf(stderr, "bfloat16_packing_bench: this CPU has no AVX512_BF16\n");
    return 1;
  }
  namespace amx = gpt::gemm_detail::amx;
  namespace rounded = gpt::gemm_detail::avx512_rounded;
  const Operands operands;
  std::printf("| family | operand | storage | reference | reference ms | faster form ms | speed-up |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  print_rows(operands, Packing<uint32_t>{"amx-bf16", "emulation's loops", gpt::gemm_detail::kPortableAmxBf16,
                                         amx::pack_a, amx::pack_a_avx512, amx::pack_b, amx::pack_b_avx512});
  print_rows(operands, Packing<float>{"avx512-fma-bf16", "by integers", gpt::gemm_detail::kAvx512Rounded,
                                      rounded::pack_a_by_integers, rounded::pack_a_by_conversion,
                                      rounded::pack_b_by_integers, rounded::pack_b_by_conversion});
}
