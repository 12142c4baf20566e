// The gemm kernel against a plain double-precision reference on odd shapes, in all four
// transpose forms, with and without accumulation; the portable and AVX2 paths bit for bit; and
// thread-count independence. The same for bfloat16 inputs, against a reference of the rounded
// inputs, and the emulation of VDPBF16PS against the instruction.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "kernels/bfloat16.h"
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
  EXPECT_NE(run(false, false, c, A, B, zeros, false, Dtype::bfloat16), run(false, false, c, A, B, zeros, false));
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
  for (const Dtype inputs : {Dtype::float32, Dtype::bfloat16})
    for (int ta = 0; ta < 2; ++ta) {
      const auto product = [&] { return run(ta, true, c, A, B, C0, false, inputs); };
      ASSERT_EQ(testing::on_threads(1, product), testing::on_threads(3, product)) << dtype_name(inputs);
    }
}

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
uint32_t to_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
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
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "this CPU has no AVX512_BF16";
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

TEST(GemmBfloat16, EveryKernelGivesTheSameBits) {
  const std::vector<const char*> kernels = gemm_bfloat16_kernels();
  ASSERT_GE(kernels.size(), 2u) << "expected a SIMD kernel besides the portable one";
  // Scaled by 1e-19 each, products fall around FLT_MIN: some sums are flushed, some not.
  for (const float scale : {1.0f, 1e-19f})
    for (const Case c : {Case{37, 45, 301}, Case{1, 45, 301}, Case{64, 96, 512}, Case{19, 40, 1101}, Case{5, 33, 1}}) {
      auto A = random_vector(c.M * c.K, 4), B = random_vector(c.K * c.N, 5), C0 = random_vector(c.M * c.N, 6);
      for (auto* v : {&A, &B, &C0})
        for (float& x : *v) x *= scale;
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (int acc = 0; acc < 2; ++acc) {
            const auto automatic = run(ta, tb, c, A, B, C0, acc, Dtype::bfloat16);
            for (const char* kernel : kernels) {
              gemm_force_bfloat16_kernel(kernel);
              const auto forced = run(ta, tb, c, A, B, C0, acc, Dtype::bfloat16);
              gemm_force_bfloat16_kernel(nullptr);
              ASSERT_EQ(forced, automatic)
                  << kernel << " " << c.M << "x" << c.N << "x" << c.K << " ta=" << ta << " tb=" << tb;
              for (std::size_t i = 0; i < forced.size(); ++i) ASSERT_EQ(to_bits(forced[i]), to_bits(automatic[i]));
            }
          }
    }
}

TEST(GemmBfloat16, PrepackedMatrixAndColumnSharesGiveGemmBits) {
  for (const Case c : {Case{64, 384, 128}, Case{7, 65, 301}, Case{9, 70, 1101}, Case{1, 130, 40}})
    for (int tb = 0; tb < 2; ++tb) {
      auto A = random_vector(c.M * c.K, 9), B = random_vector(c.K * c.N, 10), C0 = random_vector(c.M * c.N, 11);
      const auto expected = run(false, tb, c, A, B, C0, true, Dtype::bfloat16);
      const PackedMatrix packed(tb, c.K, c.N, B.data(), tb ? c.K : c.N, Dtype::bfloat16);
      auto whole = C0;
      gemm_prepacked(c.M, A.data(), c.K, packed, whole.data(), c.N, true);
      ASSERT_EQ(whole, expected) << c.M << "x" << c.N << "x" << c.K << " tb=" << tb;
      auto pieces = C0;
      for (int64_t j = 0; j < c.N; j += 2 * packed.nr())
        gemm_prepacked_columns(c.M, A.data(), c.K, packed, j, std::min(c.N, j + 2 * packed.nr()), pieces.data(), c.N,
                               true);
      ASSERT_EQ(pieces, expected) << c.M << "x" << c.N << "x" << c.K << " tb=" << tb;
    }
}

}  // namespace
}  // namespace gpt
