// The gemm kernel against a plain double-precision reference on odd shapes, in all four
// transpose forms, with and without accumulation; every kernel this CPU can run against every
// other bit for bit (float32 and bfloat16; gemm, prepacked and column-split products, the one-row
// path); thread-count independence; kernels forced per thread, and products on two threads at
// once; products of many K chunks against one; special values through every bfloat16 packing. For
// bfloat16 inputs also a reference of the rounded inputs and the emulation of VDPBF16PS against the
// instruction.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/bfloat16.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/gemm/kernel_family.h"
#include "kernels/parallel.h"
#include "same_bits.h"
#include "thread_count.h"

#if GPT_X86_64
#include <immintrin.h>

#include "kernels/gemm/amx_packing.h"
#include "kernels/gemm/flush_subnormals.h"
#endif

namespace gpt {
namespace {

using testing::same_bits;

// The process's bfloat16 arithmetic while in scope.
class Bf16ArithmeticScope {
 public:
  explicit Bf16ArithmeticScope(Bf16Arithmetic arithmetic) : saved_(bf16_arithmetic()) {
    set_bf16_arithmetic(arithmetic);
  }
  ~Bf16ArithmeticScope() { set_bf16_arithmetic(saved_); }
  Bf16ArithmeticScope(const Bf16ArithmeticScope&) = delete;
  Bf16ArithmeticScope& operator=(const Bf16ArithmeticScope&) = delete;

 private:
  Bf16Arithmetic saved_;
};

std::vector<float> random_vector(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

struct Case {
  int64_t M, N, K;
};

std::vector<float> run(bool ta, bool tb, const Case& c, const std::vector<float>& A, const std::vector<float>& B,
                       const std::vector<float>& C0, bool accumulate, Dtype inputs = Dtype::float32) {
  std::vector<float> C = C0;
  gemm(ta, tb, c.M, c.N, c.K, A.data(), ta ? c.M : c.K, B.data(), tb ? c.K : c.N, C.data(), c.N, accumulate, inputs);
  return C;
}

float rounded(float x, Dtype inputs) { return inputs == Dtype::bfloat16 ? bfloat16_to_float(round_to_bfloat16(x)) : x; }

// Every element against a double-precision sum of the (rounded) inputs' products.
void expect_matches_reference(Dtype inputs) {
  const Case cases[] = {{1, 1, 1},  {1, 384, 128}, {1, 65, 13},    {7, 5, 3},     {1, 65, 129},
                        {65, 1, 7}, {13, 17, 300}, {129, 65, 128}, {50, 130, 513}};
  for (const Case& c : cases)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int acc = 0; acc < 2; ++acc) {
          SCOPED_TRACE(std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
                       " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " acc=" + std::to_string(acc));
          auto A = random_vector(c.M * c.K, 1), B = random_vector(c.K * c.N, 2), C0 = random_vector(c.M * c.N, 3);
          auto C = run(ta, tb, c, A, B, C0, acc, inputs);
          for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) {
              double ref = acc ? C0[i * c.N + j] : 0.0, mag = std::fabs(ref);
              for (int64_t k = 0; k < c.K; ++k) {
                const double a = rounded(ta ? A[k * c.M + i] : A[i * c.K + k], inputs);
                const double b = rounded(tb ? B[j * c.K + k] : B[k * c.N + j], inputs);
                ref += a * b;
                mag += std::fabs(a * b);
              }
              // float32 summation error grows at most ~K eps |terms|; 2 eps K sum|a b| bounds it.
              ASSERT_NEAR(C[i * c.N + j], ref, 2 * 6e-8 * c.K * mag + 1e-6) << i << "," << j;
            }
        }
}

TEST(Gemm, MatchesReferenceOnOddShapes) { expect_matches_reference(Dtype::float32); }

TEST(GemmBfloat16, MatchesReferenceOfRoundedInputsOnOddShapes) {
  expect_matches_reference(Dtype::bfloat16);
  // And the rounding is really there: a product of unrounded inputs would differ.
  const Case c{4, 4, 64};
  auto A = random_vector(c.M * c.K, 1), B = random_vector(c.K * c.N, 2);
  const std::vector<float> zeros(c.M * c.N, 0.0f);
  EXPECT_FALSE(
      same_bits(run(false, false, c, A, B, zeros, false, Dtype::bfloat16), run(false, false, c, A, B, zeros, false)));
}

std::string describe(const char* kernel, const Case& c, int ta, int tb, int acc) {
  return std::string(kernel) + " " + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
         " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " acc=" + std::to_string(acc);
}

TEST(Gemm, KernelListsHoldWhatThisCpuRuns) {
  const auto has = [](Dtype inputs, std::string_view name) {
    for (const char* kernel : gemm_kernels(inputs))
      if (name == kernel) return true;
    return false;
  };
  const CpuFeatures& cpu = cpu_features();
  const bool amx_runs = cpu.amx_bf16 && cpu.avx512bf16;  // granted tiles, and the family's packing
#if GPT_AARCH64
  EXPECT_TRUE(cpu.neon) << "every aarch64 CPU has NEON";
#endif
  EXPECT_EQ(has(Dtype::float32, "neon"), cpu.neon);
  EXPECT_EQ(has(Dtype::float32, "avx512"), cpu.avx512f);
  EXPECT_EQ(has(Dtype::float32, "avx2-fma"), cpu.avx2 && cpu.fma);
  EXPECT_TRUE(has(Dtype::float32, "portable"));
  {
    const Bf16ArithmeticScope sequential(Bf16Arithmetic::sequential);
    EXPECT_EQ(has(Dtype::bfloat16, kVdpbf16psKernel), cpu.avx512bf16);
    EXPECT_EQ(has(Dtype::bfloat16, "avx512-fma-bf16"), cpu.avx512f);
    EXPECT_EQ(has(Dtype::bfloat16, "avx2-fma-bf16"), cpu.avx2 && cpu.fma);
    EXPECT_TRUE(has(Dtype::bfloat16, "portable-bf16"));
    EXPECT_FALSE(has(Dtype::bfloat16, kPortableAmxKernel));
  }
  {
    const Bf16ArithmeticScope tiles(Bf16Arithmetic::tiles);
    EXPECT_EQ(has(Dtype::bfloat16, kAmxKernel), amx_runs);
    EXPECT_TRUE(has(Dtype::bfloat16, kPortableAmxKernel));
    EXPECT_FALSE(has(Dtype::bfloat16, "portable-bf16"));
    EXPECT_STREQ(gemm_kernel_name(Dtype::bfloat16), amx_runs ? kAmxKernel : kPortableAmxKernel);
  }
  EXPECT_EQ(fastest_bf16_arithmetic(), amx_runs ? Bf16Arithmetic::tiles : Bf16Arithmetic::sequential);
  for (const Dtype inputs : {Dtype::float32, Dtype::bfloat16}) {
    bool automatic_listed = false;
    for (const char* kernel : gemm_kernels(inputs))
      automatic_listed |= std::string_view(gemm_kernel_name(inputs)) == kernel;
    EXPECT_TRUE(automatic_listed) << gemm_kernel_name(inputs);
  }
}

// Every kernel of `inputs` on the shapes (all transposes, with and without accumulation) against
// the portable kernel, bit for bit. Zero rows of A and signed zeros in C check the signs of zero.
void expect_every_kernel_gives_the_same_bits(Dtype inputs, const std::vector<Case>& cases, float scale) {
  const std::vector<const char*> kernels = gemm_kernels(inputs);
#if GPT_AARCH64
  if (inputs == Dtype::bfloat16) GTEST_SKIP() << "aarch64 runs bfloat16 products on the portable kernel alone";
#endif
  ASSERT_GE(kernels.size(), 2u) << "expected a SIMD kernel besides the portable one";
  for (const Case& c : cases) {
    auto A = random_vector(c.M * c.K, 4), B = random_vector(c.K * c.N, 5), C0 = random_vector(c.M * c.N, 6);
    for (auto* v : {&A, &B, &C0})
      for (float& x : *v) x *= scale;
    for (int64_t k = 0; k < c.K; ++k) A[k] = 0.0f;  // zero products
    for (int64_t j = 0; j < c.N; j += 2) C0[j] = -0.0f;
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int acc = 0; acc < 2; ++acc) {
          std::vector<float> reference;
          {
            const ForcedKernelScope portable(inputs, kernels.back());
            reference = run(ta, tb, c, A, B, C0, acc, inputs);
          }
          for (const char* kernel : kernels) {
            const ForcedKernelScope forced(inputs, kernel);
            ASSERT_TRUE(same_bits(run(ta, tb, c, A, B, C0, acc, inputs), reference))
                << describe(kernel, c, ta, tb, acc);
          }
        }
  }
}

// Odd shapes: partial row and column slivers, M = 1 (the one-row path for float32), K across
// several K blocks (256 values for float32, 512 for bfloat16), K = 1, and a product large enough
// for a parallel region.
const std::vector<Case> kOddShapes = {{37, 45, 301}, {1, 45, 301},  {64, 96, 512}, {19, 40, 1101},
                                      {5, 33, 1},    {13, 17, 300}, {130, 65, 260}};

TEST(Gemm, EveryFloat32KernelGivesTheSameBits) {
  expect_every_kernel_gives_the_same_bits(Dtype::float32, kOddShapes, 1.0f);
}

// From kPackedTransposedAMinK on, A^T is packed also by the families that read it in place at
// shorter K (partial slivers of every MR, a short last K block): every kernel's bits against one
// fused multiply-add per k in k order, the float32 arithmetic every family runs, written here
// without any of the packing code the kernels share.
TEST(Gemm, EveryFloat32KernelGivesSequentialFmaBitsWithALongK) {
  static_assert(gemm_detail::kPackedTransposedAMinK <= 4100);
  const Case c{50, 70, 4100};
  const auto A = random_vector(c.M * c.K, 7), B = random_vector(c.K * c.N, 8), C0 = random_vector(c.M * c.N, 9);
  for (int ta = 0; ta < 2; ++ta) {
    std::vector<float> expected = C0;
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j)
        for (int64_t k = 0; k < c.K; ++k)
          expected[i * c.N + j] = std::fma(ta ? A[k * c.M + i] : A[i * c.K + k], B[k * c.N + j], expected[i * c.N + j]);
    for (const char* kernel : gemm_kernels(Dtype::float32)) {
      const ForcedKernelScope forced(Dtype::float32, kernel);
      EXPECT_TRUE(same_bits(run(ta, false, c, A, B, C0, true), expected)) << kernel << " ta=" << ta;
    }
  }
}

// A matrix stored transposed is the same matrix: a kernel reads op(A) in place in either storage
// order (float32: ARead::rows or ARead::columns) or packs it, and every element's sum runs in the
// same k order, so storing either operand transposed, or with a wider leading dimension
// (attention's blocks), changes no bit. With M = 1, A B^T takes the one-row path and is left out.
// The last case spans two K chunks and a one-row remainder of a row block, on 1 and 3 threads
// (the SIMD kernels only: the portable ones would take minutes under qemu).
// The rows x cols matrix m stored transposed (cols rows of ld, padded with NaN), or with rows of ld
// floats padded with `pad`.
std::vector<float> transposed(const std::vector<float>& m, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> t(cols * ld, std::nanf(""));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * ld + i] = m[i * cols + j];
  return t;
}
std::vector<float> widened(const std::vector<float>& m, int64_t rows, int64_t cols, int64_t ld, float pad) {
  std::vector<float> w(rows * ld, pad);
  for (int64_t i = 0; i < rows; ++i) std::copy_n(m.begin() + i * cols, cols, w.begin() + i * ld);
  return w;
}

TEST(Gemm, StorageOrderOfEitherOperandChangesNoBit) {
  const auto expect_same_bits = [&](Dtype inputs, const char* kernel, const Case& c, int threads) {
    const ForcedKernelScope forced(inputs, kernel);
    const auto A = random_vector(c.M * c.K, 61), B = random_vector(c.K * c.N, 62), C0 = random_vector(c.M * c.N, 63);
    const int64_t wide = c.M + 7;
    const auto At = transposed(A, c.M, c.K, c.M), Bt = transposed(B, c.K, c.N, c.K);
    const auto At_wide = transposed(A, c.M, c.K, wide);
    for (int acc = 0; acc < 2; ++acc) {
      const auto on = [&](auto product) { return testing::on_threads(threads, product); };
      const auto reference = on([&] { return run(false, false, c, A, B, C0, acc, inputs); });
      const std::string what = " on " + std::to_string(threads) + " threads";
      EXPECT_TRUE(same_bits(on([&] { return run(true, false, c, At, B, C0, acc, inputs); }), reference))
          << describe(kernel, c, 1, 0, acc) << what;
      const auto wide_lda = [&] {
        std::vector<float> C = C0;
        gemm(true, false, c.M, c.N, c.K, At_wide.data(), wide, B.data(), c.N, C.data(), c.N, acc, inputs);
        return C;
      };
      EXPECT_TRUE(same_bits(on(wide_lda), reference)) << describe(kernel, c, 1, 0, acc) << " lda " << wide << what;
      if (c.M == 1) continue;
      EXPECT_TRUE(same_bits(on([&] { return run(false, true, c, A, Bt, C0, acc, inputs); }), reference))
          << describe(kernel, c, 0, 1, acc) << what;
      EXPECT_TRUE(same_bits(on([&] { return run(true, true, c, At, Bt, C0, acc, inputs); }), reference))
          << describe(kernel, c, 1, 1, acc) << what;
    }
  };
  for (const Dtype inputs : {Dtype::float32, Dtype::bfloat16}) {
    const std::vector<const char*> kernels = gemm_kernels(inputs);
    for (const char* kernel : kernels)
      for (const Case& c : kOddShapes) expect_same_bits(inputs, kernel, c, 1);
    for (const char* kernel : kernels)
      if (kernel != kernels.back())
        for (const int threads : {1, 3}) expect_same_bits(inputs, kernel, {49, 1000, 800}, threads);
  }
}

// A^T B with a long K and more columns than rows runs as (B^T A)^T (runs_transposed). It gives A
// B's bits on every kernel, accumulating or not, with leading dimensions wider than the matrices
// (whose padding it leaves alone); the SIMD kernels also on 3 threads and on a larger case that
// transposes C in a parallel region.
constexpr Case kTransposedSmall = {2, 1040, 4100}, kTransposedParallel = {65, 1040, 4100};
static_assert(gemm_detail::runs_transposed(true, false, kTransposedSmall.M, kTransposedSmall.N, kTransposedSmall.K));
static_assert(!gemm_detail::runs_transposed(false, false, kTransposedSmall.M, kTransposedSmall.N, kTransposedSmall.K));
static_assert(!gemm_detail::runs_transposed(true, false, kTransposedSmall.N, kTransposedSmall.M, kTransposedSmall.K));
static_assert(!gemm_detail::runs_transposed(true, false, kTransposedSmall.M, kTransposedSmall.N, 800));
static_assert(!gemm_detail::runs_transposed(true, false, kTransposedSmall.M, 128, kTransposedSmall.K));
static_assert(kTransposedParallel.M * kTransposedParallel.N >= kParallelMinElementwise);

void expect_transposed_product_gives_the_same_bits(Dtype inputs, const char* kernel, const Case& c, int threads) {
  const ForcedKernelScope forced(inputs, kernel);
  const int64_t lda = c.M + 3, ldb = c.N + 5, ldc = c.N + 7;
  constexpr float kPadding = -1.5f;
  const auto A = random_vector(c.M * c.K, 71), B = random_vector(c.K * c.N, 72), C0 = random_vector(c.M * c.N, 73);
  const auto At = transposed(A, c.M, c.K, lda), B_wide = widened(B, c.K, c.N, ldb, std::nanf(""));
  const auto C0_wide = widened(C0, c.M, c.N, ldc, kPadding);
  for (int acc = 0; acc < 2; ++acc) {
    const auto reference = testing::on_threads(threads, [&] { return run(false, false, c, A, B, C0, acc, inputs); });
    const auto expected = widened(reference, c.M, c.N, ldc, kPadding);
    const auto product = testing::on_threads(threads, [&] {
      std::vector<float> C = C0_wide;
      gemm(true, false, c.M, c.N, c.K, At.data(), lda, B_wide.data(), ldb, C.data(), ldc, acc, inputs);
      return C;
    });
    EXPECT_TRUE(same_bits(product, expected)) << describe(kernel, c, 1, 0, acc) << " on " << threads << " threads";
  }
}

void expect_every_kernel_runs_transposed_with_the_same_bits(Dtype inputs) {
  const std::vector<const char*> kernels = gemm_kernels(inputs);
  for (const char* kernel : kernels) {
    expect_transposed_product_gives_the_same_bits(inputs, kernel, kTransposedSmall, 1);
    if (kernel == kernels.back()) continue;  // the portable kernel: slow under qemu
    expect_transposed_product_gives_the_same_bits(inputs, kernel, kTransposedSmall, 3);
    expect_transposed_product_gives_the_same_bits(inputs, kernel, kTransposedParallel, 3);
  }
}

TEST(Gemm, ALongWeightGradientRunsTransposedWithTheSameBits) {
  expect_every_kernel_runs_transposed_with_the_same_bits(Dtype::float32);
  const Bf16ArithmeticScope sequential(Bf16Arithmetic::sequential);
  expect_every_kernel_runs_transposed_with_the_same_bits(Dtype::bfloat16);
}

TEST(GemmTiles, ALongWeightGradientRunsTransposedWithTheSameBits) {
  const Bf16ArithmeticScope tiles(Bf16Arithmetic::tiles);
  expect_every_kernel_runs_transposed_with_the_same_bits(Dtype::bfloat16);
}

// A PackedMatrix product, whole and in column shares, has gemm()'s bits (the portable kernel's),
// under every kernel of `inputs`; the matrix keeps the kernel it was packed for when another one is
// forced later.
void expect_prepacked_products_give_gemm_bits(Dtype inputs, const std::vector<Case>& cases) {
  const std::vector<const char*> kernels = gemm_kernels(inputs);
  for (const char* kernel : kernels)
    for (const Case& c : cases)
      for (int tb = 0; tb < 2; ++tb) {
        SCOPED_TRACE(describe(kernel, c, 0, tb, 1));
        auto A = random_vector(c.M * c.K, 9), B = random_vector(c.K * c.N, 10), C0 = random_vector(c.M * c.N, 11);
        const auto expected = [&] {
          const ForcedKernelScope portable(inputs, kernels.back());
          return run(false, tb, c, A, B, C0, true, inputs);
        }();
        const ForcedKernelScope forced(inputs, kernel);
        const PackedMatrix packed(tb, c.K, c.N, B.data(), tb ? c.K : c.N, inputs);
        EXPECT_STREQ(packed.kernel_name(), kernel);
        auto whole = C0;
        gemm_prepacked(c.M, A.data(), c.K, packed, whole.data(), c.N, true);
        ASSERT_TRUE(same_bits(whole, expected));
        // Column shares of two slivers: partial row slivers and a ragged last column sliver.
        auto pieces = C0;
        for (int64_t j = 0; j < c.N; j += 2 * packed.nr())
          gemm_prepacked_columns(c.M, A.data(), c.K, packed, j, std::min(c.N, j + 2 * packed.nr()), pieces.data(), c.N,
                                 true);
        ASSERT_TRUE(same_bits(pieces, expected));
        // Repacked into the storage of a larger matrix, packed first.
        const auto larger = random_vector((c.K + 3) * (c.N + 40), 12);
        PackedMatrix reused(tb, c.K + 3, c.N + 40, larger.data(), tb ? c.K + 3 : c.N + 40, inputs);
        reused.pack(tb, c.K, c.N, B.data(), tb ? c.K : c.N, inputs);
        auto repacked = C0;
        gemm_prepacked(c.M, A.data(), c.K, reused, repacked.data(), c.N, true);
        ASSERT_TRUE(same_bits(repacked, expected)) << "repacked";
        const ForcedKernelScope other(inputs, kernels.front() == kernel ? kernels.back() : kernels.front());
        auto later = C0;
        gemm_prepacked(c.M, A.data(), c.K, packed, later.data(), c.N, true);
        ASSERT_TRUE(same_bits(later, expected)) << "after forcing another kernel";
      }
}

// M = 1 is absent for float32: its gemm() takes the one-row path, which sums in another order.
TEST(Gemm, PrepackedMatrixAndColumnSharesGiveGemmBitsOnEveryKernel) {
  expect_prepacked_products_give_gemm_bits(
      Dtype::float32, {{64, 384, 128}, {7, 65, 300}, {130, 33, 513}, {13, 130, 40}, {9, 70, 1101}});
}

// The one-row path on every kernel: the bits of the portable kernel's dot products, in pieces of
// any size (whole blocks of 8 rows, whose lanes the SIMD kernels add up 8 rows at a time, and a
// remainder of rows and of k).
TEST(Gemm, SerialRowTimesTransposedIsTheOneRowGemmOnEveryKernel) {
  const std::vector<const char*> kernels = gemm_kernels(Dtype::float32);
  for (const char* kernel : kernels)
    for (const Case c : {Case{1, 65, 128}, Case{1, 384, 37}, Case{1, 9, 3}}) {
      SCOPED_TRACE(describe(kernel, c, 0, 1, 1));
      auto a = random_vector(c.K, 15), B = random_vector(c.N * c.K, 16), C0 = random_vector(c.N, 17);
      std::vector<float> portable;
      {
        const ForcedKernelScope forced(Dtype::float32, kernels.back());
        portable = run(false, true, c, a, B, C0, true);
      }
      const ForcedKernelScope forced(Dtype::float32, kernel);
      const auto expected = run(false, true, c, a, B, C0, true);
      ASSERT_TRUE(same_bits(expected, portable));
      auto pieces = C0;
      for (int64_t j = 0; j < c.N; j += 8)  // any split gives the same bits
        row_times_transposed_serial(std::min<int64_t>(8, c.N - j), c.K, a.data(), B.data() + j * c.K, c.K,
                                    pieces.data() + j, true);
      ASSERT_TRUE(same_bits(pieces, expected));
      const std::vector<float> zeros(c.N, 0.0f);
      ASSERT_TRUE(same_bits(run(false, true, c, a, B, zeros, false), run(false, true, c, a, B, zeros, true)));
    }
}

// A product whose packed op(B) is larger than one K chunk (3 MB) runs chunk after chunk; narrow
// column shares of it fit one chunk. Every element's sum must be the same either way, on every
// kernel of both bfloat16 arithmetics (the tile families pad k to 16 pairs).
TEST(Gemm, ProductsOfManyKChunksGiveTheBitsOfOne) {
  const auto expect_chunks_give_one = [](Dtype inputs, const char* kernel) {
    const ForcedKernelScope forced(inputs, kernel);
    const Case c{2, 1000, inputs == Dtype::float32 ? 900 : 1700};
    auto A = random_vector(c.M * c.K, 51), B = random_vector(c.K * c.N, 52), C0 = random_vector(c.M * c.N, 53);
    for (const int transposed : {0, 1}) {  // both storage orders of both operands, overwriting or accumulating
      const bool ta = transposed, tb = transposed, acc = transposed;
      const std::vector<float> whole = run(ta, tb, c, A, B, C0, acc, inputs);
      std::vector<float> shares = C0;
      constexpr int64_t kShare = 96;
      for (int64_t j = 0; j < c.N; j += kShare) {
        const float* b = tb ? B.data() + j * c.K : B.data() + j;
        gemm(ta, tb, c.M, std::min(kShare, c.N - j), c.K, A.data(), ta ? c.M : c.K, b, tb ? c.K : c.N,
             shares.data() + j, c.N, acc, inputs);
      }
      ASSERT_TRUE(same_bits(shares, whole)) << describe(kernel, c, ta, tb, acc);
    }
  };
  for (const char* kernel : gemm_kernels(Dtype::float32)) expect_chunks_give_one(Dtype::float32, kernel);
  for (const Bf16Arithmetic arithmetic : {Bf16Arithmetic::sequential, Bf16Arithmetic::tiles})
    for (const char* kernel : bfloat16_kernels(arithmetic)) expect_chunks_give_one(Dtype::bfloat16, kernel);
}

TEST(Gemm, ResultDoesNotDependOnThreadCountOnEveryKernel) {
  const Case c{300, 200, 260};
  auto A = random_vector(c.M * c.K, 7), B = random_vector(c.K * c.N, 8);
  std::vector<float> C0(c.M * c.N, 0.0f);
  for (const Bf16Arithmetic arithmetic : {Bf16Arithmetic::sequential, Bf16Arithmetic::tiles})
    for (const Dtype inputs : {Dtype::float32, Dtype::bfloat16})
      for (const char* kernel : inputs == Dtype::float32 ? gemm_kernels(inputs) : bfloat16_kernels(arithmetic))
        for (int ta = 0; ta < 2; ++ta) {
          const ForcedKernelScope forced(inputs, kernel);
          const auto product = [&] { return run(ta, true, c, A, B, C0, false, inputs); };
          ASSERT_TRUE(same_bits(testing::on_threads(1, product), testing::on_threads(3, product)))
              << kernel << " ta=" << ta;
        }
}

TEST(Gemm, ForcedKernelsArePerThreadAndScoped) {
  const char* automatic = gemm_kernel_name(Dtype::float32);
  const char* automatic_bf16 = gemm_kernel_name(Dtype::bfloat16);
  {
    const ForcedKernelScope portable(Dtype::float32, "portable");
    EXPECT_STREQ(gemm_kernel_name(Dtype::float32), "portable");
    EXPECT_EQ(gemm_vector_width(), 1);
    EXPECT_STREQ(gemm_kernel_name(Dtype::bfloat16), automatic_bf16);
    const char* elsewhere = nullptr;
    std::thread([&] { elsewhere = gemm_kernel_name(Dtype::float32); }).join();
    EXPECT_STREQ(elsewhere, automatic);
    {
      const ForcedKernelScope back(Dtype::float32, nullptr);
      EXPECT_STREQ(gemm_kernel_name(Dtype::float32), automatic);
    }
    EXPECT_STREQ(gemm_kernel_name(Dtype::float32), "portable");
    const ForcedKernelScope bf16(Dtype::bfloat16, "portable-bf16");
    EXPECT_STREQ(gemm_kernel_name(Dtype::bfloat16), "portable-bf16");
    EXPECT_STREQ(gemm_kernel_name(Dtype::float32), "portable");
  }
  EXPECT_STREQ(gemm_kernel_name(Dtype::float32), automatic);
  EXPECT_THROW(ForcedKernelScope(Dtype::float32, "no-such-kernel"), InternalError);
  EXPECT_THROW(ForcedKernelScope(Dtype::float32, "portable-bf16"), InternalError);  // a bfloat16 kernel
  EXPECT_STREQ(gemm_kernel_name(Dtype::float32), automatic);
}

// One thread's share of the concurrency test: products with their own forced kernels, each
// checked against its bits computed alone.
struct ThreadProducts {
  struct Product {
    Dtype inputs;
    const char* kernel;
    bool trans_a, trans_b;
    Case shape;
    std::vector<float> A, B, expected;
  };
  std::vector<Product> products;
  int mismatches = 0;

  void add(Dtype inputs, const char* kernel, bool trans_a, bool trans_b, Case shape, uint64_t seed) {
    Product p{inputs,
              kernel,
              trans_a,
              trans_b,
              shape,
              random_vector(shape.M * shape.K, seed),
              random_vector(shape.K * shape.N, seed + 1),
              {}};
    const ForcedKernelScope forced(inputs, kernel);
    p.expected = run(trans_a, trans_b, shape, p.A, p.B, std::vector<float>(shape.M * shape.N, 1.0f), false, inputs);
    products.push_back(std::move(p));
  }
  void run_all(int rounds) {
    for (int round = 0; round < rounds; ++round)
      for (const Product& p : products) {
        const ForcedKernelScope forced(p.inputs, p.kernel);
        const std::vector<float> C0(p.shape.M * p.shape.N, static_cast<float>(round));  // overwritten
        if (!same_bits(run(p.trans_a, p.trans_b, p.shape, p.A, p.B, C0, false, p.inputs), p.expected)) ++mismatches;
      }
  }
};

TEST(Gemm, ProductsOnTwoThreadsAtOnceGiveTheirBitsAlone) {
  const auto f32 = gemm_kernels(Dtype::float32), bf16 = gemm_kernels(Dtype::bfloat16);
  // Different kernels, dtypes, transposes (packed and in-place A) and sizes, so that each thread's
  // scratch grows and its team runs while the other's does.
  ThreadProducts first, second;
  first.add(Dtype::float32, f32.front(), true, false, {97, 130, 300}, 30);
  first.add(Dtype::bfloat16, bf16.back(), false, true, {40, 70, 700}, 32);
  first.add(Dtype::float32, f32.front(), false, true, {1, 200, 90}, 34);
  second.add(Dtype::bfloat16, bf16.front(), false, false, {120, 96, 600}, 40);
  second.add(Dtype::float32, f32[f32.size() > 2 ? 1 : 0], false, false, {64, 300, 200}, 42);
  second.add(Dtype::float32, f32.back(), true, true, {33, 45, 301}, 44);
  std::thread a([&] { first.run_all(20); });
  std::thread b([&] { second.run_all(20); });
  a.join();
  b.join();
  EXPECT_EQ(first.mismatches, 0);
  EXPECT_EQ(second.mismatches, 0);
}

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

TEST(GemmBfloat16, RoundingIsNearestEvenAndFlushesSubnormals) {
  EXPECT_EQ(round_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(round_to_bfloat16(from_bits(0x3f808000)), 0x3f80);  // a tie rounds to the even 1.0
  EXPECT_EQ(round_to_bfloat16(from_bits(0x3f818000)), 0x3f82);  // a tie rounds to the even 0x3f82
  EXPECT_EQ(round_to_bfloat16(from_bits(0x3f808001)), 0x3f81);  // above the tie rounds up
  EXPECT_EQ(round_to_bfloat16(-2.0f), 0xc000);
  EXPECT_EQ(round_to_bfloat16(FLT_MIN / 2), 0x0000);  // subnormal -> zero of its sign
  EXPECT_EQ(round_to_bfloat16(-FLT_MIN / 2), 0x8000);
  EXPECT_EQ(round_to_bfloat16(FLT_MIN), 0x0080);
  EXPECT_EQ(round_to_bfloat16(FLT_MAX), 0x7f80);  // rounds up to infinity
  EXPECT_EQ(round_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  const uint16_t nan = round_to_bfloat16(from_bits(0x7f800001));  // signalling NaN -> quiet NaN
  EXPECT_TRUE(std::isnan(bfloat16_to_float(nan)));
  EXPECT_EQ(nan & 0x0040, 0x0040);
}

uint32_t to_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// Multiply-adds of bfloat16 values whose exact results lie just below FLT_MIN: {a, b, acc, what
// x86 returns under flush-to-zero}. It calls a result tiny after rounding it to 24 bits with an
// unbounded exponent (the step there is 2^-150), so exact results in [FLT_MIN - 2^-150, FLT_MIN -
// 2^-151) flush to zero, where rounding onto the subnormal grid (step 2^-149) would give FLT_MIN.
struct TinyMultiplyAdd {
  float a, b, acc, x86;
};
const TinyMultiplyAdd kTinyMultiplyAdds[] = {
    {0x1.8p-75f, -0x1p-76f, FLT_MIN, 0.0f},    // FLT_MIN - 1.5 2^-151: flushed
    {0x1p-74f, -0x1p-76f, FLT_MIN, 0.0f},      // FLT_MIN - 2^-150, the window's lower end: flushed
    {0x1.cp-75f, -0x1p-76f, FLT_MIN, 0.0f},    // FLT_MIN - 1.75 2^-151: flushed
    {0x1p-75f, -0x1p-76f, FLT_MIN, FLT_MIN},   // FLT_MIN - 2^-151, a tie that rounds to FLT_MIN
    {0x1.4p-74f, -0x1p-76f, FLT_MIN, 0.0f},    // FLT_MIN - 1.25 2^-150: below the window
    {0x1.8p-75f, 0x1p-76f, -FLT_MIN, -0.0f},   // the same, negative
    {0x1.8p-75f, 0x1p-76f, FLT_MIN, FLT_MIN},  // FLT_MIN + 1.5 2^-151: rounds down, not tiny
};

TEST(GemmBfloat16, TinyResultsFlushAsX86Decides) {
  for (const TinyMultiplyAdd& t : kTinyMultiplyAdds) {
    ASSERT_EQ(round_through_bfloat16(t.a), t.a);
    ASSERT_EQ(round_through_bfloat16(t.b), t.b);
    EXPECT_EQ(to_bits(bfloat16_multiply_add(t.a, t.b, t.acc)), to_bits(t.x86))
        << std::hexfloat << t.a << " * " << t.b << " + " << t.acc;
  }
}

// The same window met inside products, on every kernel of both arithmetics: k = 0 brings each
// sum (or each even-k chain) to FLT_MIN, k = 2 takes it into the window, k = 1 and 3 add zeros.
TEST(GemmBfloat16, EveryKernelFlushesTinyResultsAsX86Decides) {
  const Case c{5, 37, 4};
  std::vector<float> A(c.M * c.K, 0.0f), B(c.K * c.N, 0.0f);  // A [M, K], B [K, N]
  for (int64_t i = 0; i < c.M; ++i) {
    A[i * c.K] = 0x1p-63f;
    A[i * c.K + 2] = 0x1.8p-75f;
  }
  for (int64_t j = 0; j < c.N; ++j) {
    B[j] = 0x1p-63f;
    B[2 * c.N + j] = -0x1p-76f;
  }
  const std::vector<float> C0(c.M * c.N, 0.0f);
  for (const Bf16Arithmetic arithmetic : {Bf16Arithmetic::sequential, Bf16Arithmetic::tiles})
    for (const char* kernel : bfloat16_kernels(arithmetic)) {
      const ForcedKernelScope forced(Dtype::bfloat16, kernel);
      const std::vector<float> product = run(false, false, c, A, B, C0, false, Dtype::bfloat16);
      EXPECT_TRUE(std::all_of(product.begin(), product.end(), [](float x) { return to_bits(x) == 0; }))
          << kernel << ": " << std::hexfloat << product[0];
    }
}

#if GPT_X86_64

// A random bfloat16 of either sign with a biased exponent in [lo, hi].
uint16_t random_bfloat16(Rng& rng, uint32_t lo, uint32_t hi) {
  const uint32_t bits = static_cast<uint32_t>(rng.next_u64());
  const uint32_t exponent = lo + (bits >> 8) % (hi - lo + 1);
  return static_cast<uint16_t>((bits & 0x8000u) | (exponent << 7) | (bits & 0x7fu));
}

__attribute__((target("avx512f,avx512bf16"))) void instruction_pair_dots(const float* acc, const uint32_t* a,
                                                                         const uint32_t* b, float* out) {
  const __m512bh av = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a));
  const __m512bh bv = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b));
  _mm512_storeu_ps(out, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), av, bv));
}

// What VDPBF16PS computes for one lane, as two steps of the documented arithmetic: the pair's odd
// (high) half first.
float pair_steps(float acc, uint32_t a, uint32_t b) {
  const auto high = [](uint32_t pair) { return bfloat16_to_float(static_cast<uint16_t>(pair >> 16)); };
  const auto low = [](uint32_t pair) { return bfloat16_to_float(static_cast<uint16_t>(pair)); };
  return bfloat16_multiply_add(low(a), low(b), bfloat16_multiply_add(high(a), high(b), acc));
}

TEST(GemmBfloat16, ArithmeticIsTheInstructions) {
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  {
    alignas(64) float acc[16] = {}, out[16];
    alignas(64) uint32_t a[16] = {}, b[16] = {};
    for (std::size_t j = 0; j < std::size(kTinyMultiplyAdds); ++j) {
      const TinyMultiplyAdd& t = kTinyMultiplyAdds[j];
      acc[j] = t.acc;
      a[j] = static_cast<uint32_t>(round_to_bfloat16(t.a)) << 16;  // the high half, added first
      b[j] = static_cast<uint32_t>(round_to_bfloat16(t.b)) << 16;
    }
    instruction_pair_dots(acc, a, b, out);
    for (std::size_t j = 0; j < std::size(kTinyMultiplyAdds); ++j) {
      // The pair's low halves then add 0 x 0, which turns a -0 into +0.
      EXPECT_EQ(to_bits(out[j]), to_bits(kTinyMultiplyAdds[j].x86 + 0.0f)) << "the table's value, lane " << j;
      EXPECT_EQ(to_bits(pair_steps(acc[j], a[j], b[j])), to_bits(out[j])) << "lane " << j;
    }
  }
  Rng rng(21);
  // Exponents spanning products that cancel, round, grow large, and fall to the subnormal range.
  const std::pair<uint32_t, uint32_t> ranges[] = {{96, 159}, {1, 60}, {120, 135}, {150, 185}};
  for (const auto& [lo, hi] : ranges)
    for (int round = 0; round < 20000; ++round) {
      alignas(64) float acc[16], out[16];
      alignas(64) uint32_t a[16], b[16];
      for (int j = 0; j < 16; ++j) {
        acc[j] = flush_subnormal(bfloat16_to_float(random_bfloat16(rng, lo, hi)) *
                                 from_bits(0x3f800000u | static_cast<uint32_t>(rng.next_u64() & 0xffff)));
        a[j] = random_bfloat16(rng, lo, hi) | static_cast<uint32_t>(random_bfloat16(rng, lo, hi)) << 16;
        b[j] = random_bfloat16(rng, lo, hi) | static_cast<uint32_t>(random_bfloat16(rng, lo, hi)) << 16;
      }
      instruction_pair_dots(acc, a, b, out);
      for (int j = 0; j < 16; ++j)
        ASSERT_EQ(to_bits(pair_steps(acc[j], a[j], b[j])), to_bits(out[j]))
            << "acc " << acc[j] << " a " << std::hex << a[j] << " b " << b[j];
    }
}
#endif

TEST(GemmBfloat16, EveryKernelGivesTheSameBits) {
  const Bf16ArithmeticScope sequential(Bf16Arithmetic::sequential);
  expect_every_kernel_gives_the_same_bits(Dtype::bfloat16, kOddShapes, 1.0f);
  // Scaled by 1e-19 each, products fall around FLT_MIN: some sums are flushed, some not.
  expect_every_kernel_gives_the_same_bits(Dtype::bfloat16, kOddShapes, 1e-19f);
}

// Rounding special values while packing: a signalling NaN (quieted, not turned into infinity),
// a NaN with a payload, infinities, and the largest float (rounds up to infinity), in A's rows or
// in B's columns (one operand at a time, so that no output meets two NaNs, whose order would pick
// the payload), in every storage order, K odd; every kernel of both arithmetics against its
// arithmetic's portable one.
TEST(GemmBfloat16, EveryKernelRoundsSpecialValuesAlike) {
  const float specials[] = {from_bits(0x7f800001u), from_bits(0xffc12345u), INFINITY, -INFINITY, FLT_MAX};
  const Case c{19, 40, 71};
  const std::vector<float> C0(c.M * c.N, 0.0f);
  for (const Bf16Arithmetic arithmetic : {Bf16Arithmetic::sequential, Bf16Arithmetic::tiles})
    for (const bool in_a : {true, false}) {
      const std::vector<const char*> kernels = bfloat16_kernels(arithmetic);
      auto A = random_vector(c.M * c.K, 41), B = random_vector(c.K * c.N, 42);  // A [M, K], B [K, N]
      for (int64_t s = 0; s < 5; ++s) {
        if (in_a)
          A[(2 + 3 * s) * c.K + 7 * s + 1] = specials[s];  // row 2 + 3 s
        else
          B[(9 * s + 5) * c.N + 3 + 7 * s] = specials[s];  // column 3 + 7 s
      }
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          std::vector<float> a = A, b = B;  // the same values in the storage order of ta, tb
          if (ta)
            for (int64_t i = 0; i < c.M; ++i)
              for (int64_t k = 0; k < c.K; ++k) a[k * c.M + i] = A[i * c.K + k];
          if (tb)
            for (int64_t k = 0; k < c.K; ++k)
              for (int64_t j = 0; j < c.N; ++j) b[j * c.K + k] = B[k * c.N + j];
          const std::vector<float> reference = [&] {
            const ForcedKernelScope portable(Dtype::bfloat16, kernels.back());
            return run(ta, tb, c, a, b, C0, false, Dtype::bfloat16);
          }();
          EXPECT_TRUE(std::isnan(reference[in_a ? 2 * c.N : 3])) << "the NaN's row or column stays NaN";
          for (const char* kernel : kernels) {
            const ForcedKernelScope forced(Dtype::bfloat16, kernel);
            EXPECT_TRUE(same_bits(run(ta, tb, c, a, b, C0, false, Dtype::bfloat16), reference))
                << describe(kernel, c, ta, tb, 0) << (in_a ? " specials in A" : " specials in B");
          }
        }
    }
}

// Subnormal inputs become zeros when packed, including the largest ones, which rounding alone
// would carry up to FLT_MIN: one operand all subnormal (random below FLT_MIN, either sign), the
// other around 2^120, so that a single input rounded to FLT_MIN would leave a product near 2^-6.
// Every product is then zero, on every kernel, in every storage order.
TEST(GemmBfloat16, EveryKernelFlushesSubnormalInputs) {
  const Case c{19, 40, 71};
  const std::vector<float> C0(c.M * c.N, 0.0f);
  for (const Bf16Arithmetic arithmetic : {Bf16Arithmetic::sequential, Bf16Arithmetic::tiles})
    for (const bool in_a : {true, false}) {
      std::vector<float> tiny = random_vector(in_a ? c.M * c.K : c.K * c.N, 43);
      for (std::size_t i = 0; i < tiny.size(); ++i) {  // every third one the largest subnormal
        const auto mantissa = static_cast<uint32_t>(std::fabs(tiny[i]) * 0x1p22f) & 0x007fffffu;
        tiny[i] = std::copysign(from_bits(i % 3 == 0 ? 0x007fffffu : mantissa), tiny[i]);
      }
      std::vector<float> huge = random_vector(in_a ? c.K * c.N : c.M * c.K, 44);
      for (float& x : huge) x *= 0x1p120f;
      const std::vector<float>& A = in_a ? tiny : huge;
      const std::vector<float>& B = in_a ? huge : tiny;
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (const char* kernel : bfloat16_kernels(arithmetic)) {
            const ForcedKernelScope forced(Dtype::bfloat16, kernel);
            // The storage order does not matter here: every value of each operand is alike.
            const std::vector<float> product = run(ta, tb, c, A, B, C0, false, Dtype::bfloat16);
            EXPECT_TRUE(std::all_of(product.begin(), product.end(), [](float x) { return x == 0.0f; }))
                << describe(kernel, c, ta, tb, 0) << (in_a ? " subnormals in A" : " subnormals in B");
          }
    }
}

TEST(GemmBfloat16, PrepackedMatrixAndColumnSharesGiveGemmBitsOnEveryKernel) {
  const Bf16ArithmeticScope sequential(Bf16Arithmetic::sequential);
  expect_prepacked_products_give_gemm_bits(Dtype::bfloat16,
                                           {{64, 384, 128}, {7, 65, 301}, {9, 70, 1101}, {1, 130, 40}});
}

// The tiles arithmetic written out for one output: per 32 values of k from k = 0 (k past K counts
// as a zero, which can turn a flushed -0 into +0), a chain of fused multiply-adds over the even k
// and one over the odd k, each from +0, then c + (even + odd); the bfloat16 flushing rules at
// every step.
float tiles_sum(const std::vector<float>& a, const std::vector<float>& b, float c0, bool accumulate) {
  float c = accumulate ? flush_subnormal(c0) : 0.0f;
  const auto value = [](const std::vector<float>& v, std::size_t k) {
    return k < v.size() ? round_through_bfloat16(v[k]) : 0.0f;
  };
  for (std::size_t k0 = 0; k0 < a.size(); k0 += 32) {
    float sums[2] = {0.0f, 0.0f};
    for (std::size_t k = k0; k < k0 + 32; ++k)
      sums[k % 2] = bfloat16_multiply_add(value(a, k), value(b, k), sums[k % 2]);
    c = flush_subnormal(c + flush_subnormal(sums[0] + sums[1]));
  }
  return c;
}

// Shapes for the 16 x 64 tile block: partial row and column blocks, K off the 32-value groups and
// across K blocks of 512 values.
const std::vector<Case> kTileShapes = {{37, 45, 301}, {16, 64, 32},   {1, 130, 40}, {19, 70, 1101},
                                       {5, 33, 1},    {48, 128, 544}, {17, 65, 31}};

TEST(GemmTiles, EmulationSumsInTheTileInstructionsOrder) {
  const ForcedKernelScope emulated(Dtype::bfloat16, kPortableAmxKernel);
  for (const float scale : {1.0f, 1e-19f})  // 1e-19: products around FLT_MIN, some sums flushed
    for (const Case& c : kTileShapes) {
      auto A = random_vector(c.M * c.K, 31), B = random_vector(c.K * c.N, 32), C0 = random_vector(c.M * c.N, 33);
      for (auto* v : {&A, &B, &C0})
        for (float& x : *v) x *= scale;
      for (int64_t j = 0; j < c.N; j += 2) C0[j] = -0.0f;
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (int acc = 0; acc < 2; ++acc) {
            SCOPED_TRACE(describe(kPortableAmxKernel, c, ta, tb, acc) + " scale " + std::to_string(scale));
            const auto C = run(ta, tb, c, A, B, C0, acc, Dtype::bfloat16);
            std::vector<float> row(c.K), column(c.K);
            for (int64_t i = 0; i < c.M; ++i)
              for (int64_t j = 0; j < c.N; ++j) {
                for (int64_t k = 0; k < c.K; ++k) {
                  row[k] = ta ? A[k * c.M + i] : A[i * c.K + k];
                  column[k] = tb ? B[j * c.K + k] : B[k * c.N + j];
                }
                ASSERT_EQ(to_bits(C[i * c.N + j]), to_bits(tiles_sum(row, column, C0[i * c.N + j], acc)))
                    << i << "," << j;
              }
          }
    }
}

#if GPT_X86_64
// Two packings of one family's layout, compared word for word: both storage orders of A and B from
// a 300 x 200 matrix with rounding's special values spread through it (NaNs signalling and quiet,
// infinities, the largest float, a tie to even, zeros of both signs, the smallest normal,
// subnormals), k cut to the matrix from row or column 7 and the lines from column or row 5 on
// (k runs along the matrix's rows for A in order and for B transposed), with and without MXCSR's
// flushing, which products that flush subnormals pack under. The words past the packed size must
// be left alone.
template <typename Word>
struct TwoPackings {
  const gemm_detail::KernelFamily<Word>& family;  // its MR, NR and steps give the layout
  gemm_detail::PackA<Word> reference_a, candidate_a;
  gemm_detail::PackB<Word> reference_b, candidate_b;
};

template <typename Word>
void expect_the_same_packed_words(const TwoPackings<Word>& packings,
                                  const std::vector<std::pair<int64_t, int64_t>>& lines_and_kc) {
  constexpr int64_t kRows = 300, ld = 200, kPastTheEnd = 16;
  std::vector<float> matrix = random_vector(kRows * ld, 51);
  const float specials[] = {from_bits(0x7f800001u),
                            from_bits(0xffc00001u),
                            INFINITY,
                            -INFINITY,
                            FLT_MAX,
                            from_bits(0x3f818000u),
                            -0.0f,
                            FLT_MIN,
                            from_bits(0x007fffffu),
                            -FLT_MIN / 4};
  constexpr std::size_t kSpecials = std::size(specials);
  for (std::size_t s = 0; s < matrix.size(); s += 89) matrix[s] = specials[s % kSpecials];
  const gemm_detail::KernelFamily<Word>& family = packings.family;
  const uint32_t sentinel_bits = 0xdeadbeefu;
  Word sentinel;
  std::memcpy(&sentinel, &sentinel_bits, sizeof sentinel);
  const auto words = [&](int64_t lines, int64_t width, int64_t kc) {
    return std::vector<Word>((lines + width - 1) / width * width * family.steps(kc) + kPastTheEnd, sentinel);
  };
  const auto same_words = [](const Word* a, const Word* b, std::size_t n) {
    return std::memcmp(a, b, n * sizeof(Word)) == 0;
  };
  // Both packings' words equal, and those past the packed size still the sentinel.
  const auto expect_same = [&](const std::vector<Word>& reference, const std::vector<Word>& candidate,
                               const std::string& what) {
    EXPECT_TRUE(same_words(reference.data(), candidate.data(), reference.size())) << what;
    const std::vector<Word> sentinels(kPastTheEnd, sentinel);
    for (const std::vector<Word>* packed : {&reference, &candidate})
      EXPECT_TRUE(same_words(packed->data() + packed->size() - kPastTheEnd, sentinels.data(), kPastTheEnd))
          << what << ": written past the packed size";
  };
  for (const auto& [lines, kc] : lines_and_kc)
    for (const bool transposed : {false, true})
      for (const bool flushing : {false, true}) {
        const gemm_detail::FlushSubnormals flush(flushing);
        const auto fit = [&](bool k_along_rows) {
          return std::pair{std::min<int64_t>(kc, (k_along_rows ? ld : kRows) - 7),
                           std::min<int64_t>(lines, (k_along_rows ? kRows : ld) - 5)};
        };
        const auto describe_case = [&](const char* operand, int64_t k, int64_t l) {
          return std::string(operand) + ", lines " + std::to_string(l) + ", kc " + std::to_string(k) +
                 (transposed ? ", transposed" : ", in order") + (flushing ? ", flushing" : "");
        };
        const auto [ka, la] = fit(!transposed);
        auto a = words(la, family.MR, ka), a_candidate = a;
        packings.reference_a(family.MR, transposed, matrix.data(), ld, 5, la, 7, ka, a.data());
        packings.candidate_a(family.MR, transposed, matrix.data(), ld, 5, la, 7, ka, a_candidate.data());
        expect_same(a, a_candidate, describe_case("A", ka, la));
        const auto [kb, lb] = fit(transposed);
        auto b = words(lb, family.NR, kb), b_candidate = b;
        packings.reference_b(family.NR, transposed, matrix.data(), ld, 7, kb, 5, lb, b.data());
        packings.candidate_b(family.NR, transposed, matrix.data(), ld, 7, kb, 5, lb, b_candidate.data());
        expect_same(b, b_candidate, describe_case("B", kb, lb));
      }
}

// The hardware family packs with AVX-512 and the emulation with scalar loops: the same words, for
// partial slivers, k odd and across tiles. Run wherever AVX512_BF16 is, so the packing is checked
// without AMX.
TEST(GemmTiles, HardwarePackingWritesTheEmulationsWords) {
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "the AMX family's packing needs AVX512_BF16";
  using namespace gemm_detail::amx;
  expect_the_same_packed_words<uint32_t>({gemm_detail::kPortableAmxBf16, pack_a, pack_a_avx512, pack_b, pack_b_avx512},
                                         {{16, 32}, {5, 1}, {16, 31}, {13, 300}, {37, 64}, {3, 33}, {70, 130}, {1, 2}});
}

// avx512-fma-bf16 packs float32 and rounds it afterwards with VCVTNEPS2BF16 where the CPU has
// AVX512_BF16, and rounds inside its packing loops by integer arithmetic elsewhere: the same words,
// for runs of slivers (beyond the groups the conversion rounds at a time), partial slivers, kc odd
// and even. Run wherever AVX512_BF16 is, so that the integer rounding, which the family then never
// takes, stays tested.
TEST(GemmBfloat16, Avx512RoundedPackingGivesTheSameWordsByConversionAndByIntegers) {
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "the conversion needs AVX512_BF16";
  using namespace gemm_detail::avx512_rounded;
  expect_the_same_packed_words<float>(
      {gemm_detail::kAvx512Rounded, pack_a_by_integers, pack_a_by_conversion, pack_b_by_integers, pack_b_by_conversion},
      {{12, 32}, {5, 1}, {32, 31}, {13, 256}, {70, 64}, {3, 33}, {100, 131}, {1, 2}, {295, 128}});
}
#endif

TEST(GemmTiles, AreANumericFamilyOfTheirOwn) {
  const Case c{16, 64, 256};
  const auto A = random_vector(c.M * c.K, 34), B = random_vector(c.K * c.N, 35);
  const std::vector<float> zeros(c.M * c.N, 0.0f);
  const auto product = [&](const char* kernel) {
    const ForcedKernelScope forced(Dtype::bfloat16, kernel);
    return run(false, false, c, A, B, zeros, false, Dtype::bfloat16);
  };
  EXPECT_FALSE(same_bits(product(kPortableAmxKernel), product("portable-bf16")));
}

TEST(GemmTiles, EveryKernelGivesTheSameBits) {
  const Bf16ArithmeticScope tiles(Bf16Arithmetic::tiles);
  if (gemm_kernels(Dtype::bfloat16).size() < 2) GTEST_SKIP() << "no AMX here: only the emulation runs (tested above)";
  expect_every_kernel_gives_the_same_bits(Dtype::bfloat16, kTileShapes, 1.0f);
  expect_every_kernel_gives_the_same_bits(Dtype::bfloat16, kTileShapes, 1e-19f);
}

TEST(GemmTiles, PrepackedMatrixAndColumnSharesGiveGemmBitsOnEveryKernel) {
  const Bf16ArithmeticScope tiles(Bf16Arithmetic::tiles);
  expect_prepacked_products_give_gemm_bits(Dtype::bfloat16,
                                           {{64, 384, 128}, {7, 65, 301}, {9, 70, 1101}, {1, 130, 40}});
}

// dtype "auto": bfloat16 exactly where the products of the run's bfloat16 arithmetic run on
// bfloat16 instructions (AMX, or a VDPBF16PS faster than the FMAs), float32 elsewhere, and a cap
// counts as the CPU it leaves. A pure function of the features, so every case runs on any machine.
TEST(AutoDtype, BfloatSixteenOnlyWhereTheCpuMultipliesItNatively) {
  const CpuFeatures zen3{.avx2 = true, .fma = true};
  const CpuFeatures zen5{.avx2 = true, .fma = true, .avx512f = true, .avx512dq = true, .avx512bf16 = true};
  CpuFeatures sapphire_rapids = zen5;
  sapphire_rapids.amx_bf16 = true;
  const CpuFeatures graviton{.neon = true};
  const auto choose = [](const CpuFeatures& features, bool vdpbf16ps_fast,
                         Bf16Arithmetic arithmetic = Bf16Arithmetic::automatic,
                         std::optional<MaxIsa> cap = std::nullopt) {
    return choose_auto_dtype(cap ? capped(features, *cap) : features, arithmetic, vdpbf16ps_fast, cap);
  };
  const AutoDtype on_zen5 = choose(zen5, true);
  EXPECT_EQ(on_zen5.dtype, Dtype::bfloat16);
  EXPECT_EQ(on_zen5.reason, "this CPU multiplies bfloat16 natively: avx512_bf16");
  EXPECT_EQ(choose(zen5, true, Bf16Arithmetic::sequential).dtype, Dtype::bfloat16);
  const AutoDtype slow_pairs = choose(zen5, false);
  EXPECT_EQ(slow_pairs.dtype, Dtype::float32);
  EXPECT_NE(slow_pairs.reason.find("VDPBF16PS measured slower"), std::string::npos) << slow_pairs.reason;
  // Tiles without AMX would be emulated: no native products, however fast VDPBF16PS is.
  EXPECT_EQ(choose(zen5, true, Bf16Arithmetic::tiles).dtype, Dtype::float32);

  const AutoDtype on_amx = choose(sapphire_rapids, false);
  EXPECT_EQ(on_amx.dtype, Dtype::bfloat16);
  EXPECT_EQ(on_amx.reason, "this CPU multiplies bfloat16 natively: amx");
  EXPECT_EQ(choose(sapphire_rapids, false, Bf16Arithmetic::sequential).dtype, Dtype::float32);
  EXPECT_EQ(choose(sapphire_rapids, false, Bf16Arithmetic::automatic, MaxIsa::amx).dtype, Dtype::bfloat16);
  const AutoDtype below_amx = choose(sapphire_rapids, false, Bf16Arithmetic::automatic, MaxIsa::avx512_bf16);
  EXPECT_EQ(below_amx.dtype, Dtype::float32);
  EXPECT_NE(below_amx.reason.find("under GPT_MAX_ISA=avx512_bf16"), std::string::npos) << below_amx.reason;

  for (const MaxIsa cap : {MaxIsa::portable, MaxIsa::avx2, MaxIsa::avx512})
    for (const CpuFeatures& cpu : {zen5, sapphire_rapids}) {
      const AutoDtype chosen = choose(cpu, true, Bf16Arithmetic::automatic, cap);
      EXPECT_EQ(chosen.dtype, Dtype::float32) << max_isa_name(cap);
      EXPECT_EQ(chosen.reason, std::string("no native bfloat16 products under GPT_MAX_ISA=") + max_isa_name(cap));
    }
  EXPECT_EQ(choose(zen5, true, Bf16Arithmetic::automatic, MaxIsa::avx512_bf16).dtype, Dtype::bfloat16);

  const AutoDtype on_zen3 = choose(zen3, false);
  EXPECT_EQ(on_zen3.dtype, Dtype::float32);
  EXPECT_EQ(on_zen3.reason, "no native bfloat16 products on this CPU (no AVX512_BF16 or AMX)");
  const AutoDtype on_arm = choose(graviton, false);
  EXPECT_EQ(on_arm.dtype, Dtype::float32);
  EXPECT_NE(on_arm.reason.find("NEON"), std::string::npos) << on_arm.reason;
  EXPECT_EQ(choose(CpuFeatures{}, false).dtype, Dtype::float32);
}

}  // namespace
}  // namespace gpt
