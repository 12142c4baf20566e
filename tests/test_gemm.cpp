// The gemm kernel against a plain double-precision reference on odd shapes, in all four
// transpose forms, with and without accumulation; the portable and AVX2 paths bit for bit; and
// thread-count independence.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernels/gemm.h"
#include "thread_count.h"

namespace gpt {
namespace {

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
                       const std::vector<float>& C0, bool accumulate) {
  std::vector<float> C = C0;
  gemm(ta, tb, c.M, c.N, c.K, A.data(), ta ? c.M : c.K, B.data(), tb ? c.K : c.N, C.data(), c.N, accumulate);
  return C;
}

TEST(Gemm, MatchesReferenceOnOddShapes) {
  const Case cases[] = {{1, 1, 1},  {1, 384, 128}, {1, 65, 13},    {7, 5, 3},     {1, 65, 129},
                        {65, 1, 7}, {13, 17, 300}, {129, 65, 128}, {50, 130, 513}};
  for (const Case& c : cases)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int acc = 0; acc < 2; ++acc) {
          SCOPED_TRACE(std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
                       " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " acc=" + std::to_string(acc));
          auto A = random_vector(c.M * c.K, 1), B = random_vector(c.K * c.N, 2), C0 = random_vector(c.M * c.N, 3);
          auto C = run(ta, tb, c, A, B, C0, acc);
          for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) {
              double ref = acc ? C0[i * c.N + j] : 0.0, mag = std::fabs(ref);
              for (int64_t k = 0; k < c.K; ++k) {
                const double a = ta ? A[k * c.M + i] : A[i * c.K + k];
                const double b = tb ? B[j * c.K + k] : B[k * c.N + j];
                ref += a * b;
                mag += std::fabs(a * b);
              }
              // float32 summation error grows at most ~K eps |terms|; 2 eps K sum|a b| bounds it.
              ASSERT_NEAR(C[i * c.N + j], ref, 2 * 6e-8 * c.K * mag + 1e-6) << i << "," << j;
            }
        }
}

TEST(Gemm, PortablePathIsBitIdenticalToSimdPath) {
  for (const Case c : {Case{37, 45, 301}, Case{1, 45, 301}}) {
    auto A = random_vector(c.M * c.K, 4), B = random_vector(c.K * c.N, 5), C0 = random_vector(c.M * c.N, 6);
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        auto fast = run(ta, tb, c, A, B, C0, true);
        gemm_force_portable(true);
        auto portable = run(ta, tb, c, A, B, C0, true);
        gemm_force_portable(false);
        ASSERT_EQ(fast, portable) << "kernel " << gemm_kernel_name() << " M=" << c.M;
      }
  }
}

TEST(Gemm, PrepackedMatrixGivesTheSameBits) {
  for (const Case c : {Case{64, 384, 128}, Case{7, 65, 300}, Case{130, 33, 513}})
    for (int tb = 0; tb < 2; ++tb) {
      auto A = random_vector(c.M * c.K, 9), B = random_vector(c.K * c.N, 10), C0 = random_vector(c.M * c.N, 11);
      const auto expected = run(false, tb, c, A, B, C0, true);
      const PackedMatrix packed(tb, c.K, c.N, B.data(), tb ? c.K : c.N);
      auto C = C0;
      gemm_prepacked(c.M, A.data(), c.K, packed, C.data(), c.N, true);
      ASSERT_EQ(C, expected) << c.M << "x" << c.N << "x" << c.K << " tb=" << tb;
    }
}

TEST(Gemm, ColumnSharesOfAPrepackedProductGiveItsBits) {
  // Partial row slivers (M = 7, 13, 64) and a ragged last column sliver (N = 65).
  for (const Case c : {Case{64, 384, 128}, Case{7, 65, 300}, Case{13, 130, 40}}) {
    auto A = random_vector(c.M * c.K, 12), B = random_vector(c.K * c.N, 13), C0 = random_vector(c.M * c.N, 14);
    const PackedMatrix packed(true, c.K, c.N, B.data(), c.K);
    auto whole = C0;
    gemm_prepacked(c.M, A.data(), c.K, packed, whole.data(), c.N, true);
    auto pieces = C0;
    for (int64_t j = 0; j < c.N; j += 2 * packed.nr())
      gemm_prepacked_columns(c.M, A.data(), c.K, packed, j, std::min(c.N, j + 2 * packed.nr()), pieces.data(), c.N,
                             true);
    ASSERT_EQ(pieces, whole) << c.M << "x" << c.N << "x" << c.K;
  }
}

TEST(Gemm, SerialRowTimesTransposedIsTheOneRowGemm) {
  for (const Case c : {Case{1, 65, 128}, Case{1, 384, 37}, Case{1, 9, 3}}) {
    auto a = random_vector(c.K, 15), B = random_vector(c.N * c.K, 16), C0 = random_vector(c.N, 17);
    const auto expected = run(false, true, c, a, B, C0, true);
    auto pieces = C0;
    for (int64_t j = 0; j < c.N; j += 8)  // any split gives the same bits
      row_times_transposed_serial(std::min<int64_t>(8, c.N - j), c.K, a.data(), B.data() + j * c.K, c.K,
                                  pieces.data() + j, true);
    ASSERT_EQ(pieces, expected) << c.N << "x" << c.K;
    const std::vector<float> zeros(c.N, 0.0f);
    ASSERT_EQ(run(false, true, c, a, B, zeros, false), run(false, true, c, a, B, zeros, true));
  }
}

TEST(Gemm, ResultDoesNotDependOnThreadCount) {
  const Case c{300, 200, 260};
  auto A = random_vector(c.M * c.K, 7), B = random_vector(c.K * c.N, 8);
  std::vector<float> C0(c.M * c.N, 0.0f);
  const auto product = [&] { return run(false, true, c, A, B, C0, false); };
  ASSERT_EQ(testing::on_threads(1, product), testing::on_threads(3, product));
}

}  // namespace
}  // namespace gpt
