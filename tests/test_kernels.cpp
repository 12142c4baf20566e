// The small vector kernels: softmax rows (against double precision, and a causal row wider than
// its values bit for bit against the row of just its values), fixed-lane sums, layernorm rows and
// dropout masks (every instruction set's path this CPU runs against the others, or against the
// definition, bit for bit), and the activations' backward in each of its write modes. Also
// GPT_MAX_ISA's values and the features each cap leaves (tests/test_cli.cpp runs gpt under it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <omp.h>

#include "core/rng.h"
#include "kernels/activation.h"
#include "kernels/cpu_features.h"
#include "kernels/dropout_mask.h"
#include "kernels/lane_sum.h"
#include "kernels/layernorm.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax_row.h"
#include "kernels/weighted_rows.h"
#include "same_bits.h"

namespace gpt {
namespace {

using testing::same_bits;

// The instruction sets this CPU runs: the baseline and, on any x86-64 CPU of the last decade, a
// vector one.
std::vector<VectorIsa> supported_isas() {
  std::vector<VectorIsa> isas;
  for (VectorIsa isa : kVectorIsas)
    if (cpu_supports(isa)) isas.push_back(isa);
  return isas;
}

std::vector<float> random_row(int64_t n, uint64_t seed, float scale) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal()) * scale;
  return v;
}

TEST(ActivationKernels, EveryActivationIsNamedAndListedOnce) {
  const std::vector<Activation> all = all_activations();
  ASSERT_GE(all.size(), 2u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(all[i]), i);
    EXPECT_NE(activation_name(all[i]), nullptr);
  }
  EXPECT_STREQ(activation_name(Activation::gelu), "gelu");
}

// Overwriting, in place (elementwise activations) or not, gives the bits of accumulating into
// zeros; accumulating adds.
TEST(ActivationKernels, BackwardWriteModesAgree) {
  const int64_t rows = 70, width = 1000;  // above the parallel threshold, with a partial last chunk
  for (Activation act : all_activations()) {
    SCOPED_TRACE(activation_name(act));
    const int64_t n = rows * width, n_in = rows * activation_input_width(act, width);
    const std::vector<float> x = random_row(n_in, 7, 3.0f), dy = random_row(n, 8, 1.0f);
    std::vector<float> accumulated(n_in, 0.0f), overwritten(n_in, 5.0f), twice(n_in, 0.0f);
    activation_backward(act, x.data(), dy.data(), accumulated.data(), rows, width);
    activation_backward(act, x.data(), dy.data(), overwritten.data(), rows, width, GradWrite::overwrite);
    activation_backward(act, x.data(), dy.data(), twice.data(), rows, width);
    activation_backward(act, x.data(), dy.data(), twice.data(), rows, width);
    EXPECT_TRUE(same_bits(overwritten, accumulated));
    if (!is_gated(act)) {
      std::vector<float> in_place = dy;
      activation_backward(act, x.data(), in_place.data(), in_place.data(), rows, width, GradWrite::overwrite);
      EXPECT_TRUE(same_bits(in_place, accumulated));
    }
    std::vector<float> doubled(n_in);
    for (int64_t i = 0; i < n_in; ++i) doubled[i] = accumulated[i] + accumulated[i];
    EXPECT_TRUE(same_bits(twice, doubled));
  }
}

// SwiGLU against its definition in double precision: silu(gate) * up for rows [gate | up].
TEST(ActivationKernels, SwigluIsSiluOfGateTimesUp) {
  const int64_t rows = 3, width = 37;
  const std::vector<float> x = random_row(rows * 2 * width, 9, 4.0f);
  std::vector<float> y(rows * width);
  activation_forward(Activation::swiglu, x.data(), y.data(), rows, width);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < width; ++j) {
      const double g = x[r * 2 * width + j], u = x[r * 2 * width + width + j];
      EXPECT_NEAR(y[r * width + j], g / (1 + std::exp(-g)) * u, 1e-5 * (1 + std::abs(g * u)));
    }
}

TEST(SoftmaxRow, MatchesDoublePrecision) {
  for (int64_t n : {1, 2, 15, 16, 17, 63, 64, 65, 300}) {
    std::vector<float> row = random_row(n, static_cast<uint64_t>(n), 4.0f);
    const std::vector<float> x = row;
    const float scale = 0.37f;
    softmax_row(row.data(), n, n, scale);
    double max = -std::numeric_limits<double>::infinity(), sum = 0.0;
    for (float v : x) max = std::max(max, double(v) * scale);
    for (float v : x) sum += std::exp(double(v) * scale - max);
    for (int64_t j = 0; j < n; ++j)
      EXPECT_NEAR(row[j], std::exp(double(x[j]) * scale - max) / sum, 2e-6) << n << " " << j;
  }
}

TEST(SoftmaxRow, WiderRowIsTheSoftmaxOfItsFirstValuesThenZeros) {
  for (int64_t n = 1; n <= 70; ++n)
    for (int64_t width : {n, n + 1, n + 15, (n + 15) / 16 * 16, n + 33}) {
      std::vector<float> plain = random_row(width, static_cast<uint64_t>(1000 + n), 3.0f);
      std::vector<float> wide = plain;
      softmax_row(plain.data(), n, n, 0.5f);
      for (int64_t j = n; j < width; ++j) plain[j] = 0.0f;
      softmax_row(wide.data(), n, width, 0.5f);
      ASSERT_TRUE(same_bits(wide, plain)) << "n " << n << " width " << width;
    }
}

TEST(SoftmaxRow, EveryInstructionSetGivesTheSameBits) {
  // A spread of 400 sends scale x - max below exp's clamp at -87.
  for (float spread : {4.0f, 400.0f})
    for (int64_t n : {1, 7, 16, 17, 63, 64, 65, 300})
      for (int64_t width : {n, n + 9, (n + 15) / 16 * 16}) {
        const std::vector<float> x = random_row(width, static_cast<uint64_t>(2000 + n), spread);
        std::vector<float> reference = x;
        {
          const ForcedVectorIsaScope baseline(VectorIsa::baseline);
          softmax_row(reference.data(), n, width, 0.37f);
        }
        for (VectorIsa isa : supported_isas()) {
          const ForcedVectorIsaScope forced(isa);
          std::vector<float> row = x;
          softmax_row(row.data(), n, width, 0.37f);
          ASSERT_TRUE(same_bits(row, reference)) << vector_isa_name(isa) << " n " << n << " width " << width;
        }
      }
}

// What attention's backward relies on to redo its rows' probabilities in one pass.
TEST(SoftmaxRow, AgainFromItsStatsGivesTheSameBitsOnEveryInstructionSet) {
  for (VectorIsa isa : supported_isas()) {
    const ForcedVectorIsaScope forced(isa);
    for (int64_t n : {1, 7, 16, 17, 64, 65, 300})
      for (int64_t width : {n, n + 9, (n + 15) / 16 * 16}) {
        const std::vector<float> x = random_row(width, static_cast<uint64_t>(3000 + n), 4.0f);
        std::vector<float> plain = x, with_stats = x, again = x;
        softmax_row(plain.data(), n, width, 0.37f);
        const SoftmaxRowStats stats = softmax_row_with_stats(with_stats.data(), n, width, 0.37f);
        softmax_row_again(again.data(), n, width, 0.37f, stats);
        ASSERT_TRUE(same_bits(with_stats, plain)) << vector_isa_name(isa) << " n " << n << " width " << width;
        ASSERT_TRUE(same_bits(again, plain)) << vector_isa_name(isa) << " n " << n << " width " << width;
      }
  }
}

// One query's attention output while sampling: every path gives the plain loop's bits (a product,
// then a sum, in row order), at widths that end mid-vector and with rows apart by a stride.
TEST(WeightedRowSum, EveryInstructionSetGivesTheLoopsBits) {
  for (int64_t width : {1, 7, 16, 32, 33, 64})
    for (int64_t rows : {1, 5, 64}) {
      const int64_t ldx = width + 3;
      const std::vector<float> weights = random_row(rows, static_cast<uint64_t>(rows), 1.0f);
      const std::vector<float> x = random_row(rows * ldx, static_cast<uint64_t>(width), 3.0f);
      std::vector<float> expected(static_cast<std::size_t>(width), 0.0f);
      for (int64_t j = 0; j < rows; ++j)
        for (int64_t d = 0; d < width; ++d) {
          const float term = weights[j] * x[j * ldx + d];
          expected[d] = expected[d] + term;
        }
      for (VectorIsa isa : supported_isas()) {
        const ForcedVectorIsaScope forced(isa);
        std::vector<float> out(static_cast<std::size_t>(width), -1.0f);
        weighted_row_sum(rows, width, weights.data(), x.data(), ldx, out.data());
        ASSERT_TRUE(same_bits(out, expected)) << vector_isa_name(isa) << " width " << width << " rows " << rows;
      }
    }
}

TEST(Layernorm, EveryInstructionSetGivesTheSameBits) {
  for (int64_t C : {1, 15, 16, 17, 64, 65, 384})
    for (bool bias : {false, true}) {
      const int64_t rows = 97;  // enough for a parallel region at C = 384
      const auto x = random_row(rows * C, 1, 2.0f), w = random_row(C, 2, 1.0f), b = random_row(C, 3, 1.0f);
      const auto dy = random_row(rows * C, 4, 1.0f), dx0 = random_row(rows * C, 5, 1.0f);
      struct Result {
        std::vector<float> y, mean, rstd, dx, dw, db;
      };
      const auto run = [&](VectorIsa isa) {
        const ForcedVectorIsaScope forced(isa);
        Result r{std::vector<float>(rows * C), std::vector<float>(rows),    std::vector<float>(rows), dx0,
                 std::vector<float>(C, 0.5f),  std::vector<float>(C, -0.5f)};
        layernorm_forward(x.data(), w.data(), bias ? b.data() : nullptr, r.y.data(), r.mean.data(), r.rstd.data(), rows,
                          C);
        layernorm_backward(x.data(), w.data(), r.mean.data(), r.rstd.data(), dy.data(), r.dx.data(), r.dw.data(),
                           r.db.data(), rows, C);
        return r;
      };
      const Result reference = run(VectorIsa::baseline);
      for (VectorIsa isa : supported_isas()) {
        const Result r = run(isa);
        const std::string where = std::string(vector_isa_name(isa)) + " C " + std::to_string(C);
        EXPECT_TRUE(same_bits(r.y, reference.y)) << where;
        EXPECT_TRUE(same_bits(r.mean, reference.mean)) << where;
        EXPECT_TRUE(same_bits(r.rstd, reference.rstd)) << where;
        EXPECT_TRUE(same_bits(r.dx, reference.dx)) << where;
        EXPECT_TRUE(same_bits(r.dw, reference.dw)) << where;
        EXPECT_TRUE(same_bits(r.db, reference.db)) << where;
      }
    }
}

TEST(Rmsnorm, EveryInstructionSetAndThreadCountGivesTheSameBits) {
  for (int64_t C : {1, 15, 16, 17, 64, 65, 384}) {
    const int64_t rows = 97;  // enough for a parallel region at C = 384
    const auto x = random_row(rows * C, 1, 2.0f), w = random_row(C, 2, 1.0f);
    const auto dy = random_row(rows * C, 4, 1.0f), dx0 = random_row(rows * C, 5, 1.0f);
    struct Result {
      std::vector<float> y, rstd, dx, dw;
    };
    const auto run = [&](VectorIsa isa, int threads) {
      const ForcedVectorIsaScope forced(isa);
      const int before = omp_get_max_threads();
      omp_set_num_threads(threads);
      Result r{std::vector<float>(rows * C), std::vector<float>(rows), dx0, std::vector<float>(C, 0.5f)};
      rmsnorm_forward(x.data(), w.data(), r.y.data(), r.rstd.data(), rows, C);
      rmsnorm_backward(x.data(), w.data(), r.rstd.data(), dy.data(), r.dx.data(), r.dw.data(), rows, C);
      omp_set_num_threads(before);
      return r;
    };
    const Result reference = run(VectorIsa::baseline, 1);
    for (VectorIsa isa : supported_isas())
      for (int threads : {1, 2, 3}) {
        const Result r = run(isa, threads);
        const std::string where =
            std::string(vector_isa_name(isa)) + " C " + std::to_string(C) + " threads " + std::to_string(threads);
        EXPECT_TRUE(same_bits(r.y, reference.y)) << where;
        EXPECT_TRUE(same_bits(r.rstd, reference.rstd)) << where;
        EXPECT_TRUE(same_bits(r.dx, reference.dx)) << where;
        EXPECT_TRUE(same_bits(r.dw, reference.dw)) << where;
      }
  }
}

// QK-norm's kernel: each head vector of a row normalised as rmsnorm with a unit weight would (the
// same bits: x * s * 1 is x * s), the rest of the row untouched, on every instruction set and
// thread count.
TEST(HeadRmsnorm, EqualsUnitWeightRmsnormPerHeadOnEveryInstructionSetAndThreadCount) {
  for (int64_t hs : {4, 17, 64}) {
    const int64_t rows = 97, heads = 3, stride = heads * hs + 5;
    const auto x = random_row(rows * stride, 1, 2.0f), dy = random_row(rows * stride, 4, 1.0f);
    const auto dx0 = random_row(rows * stride, 5, 1.0f);
    // The reference: rmsnorm_forward/backward on each head with a weight of ones.
    std::vector<float> ref_y = x, ref_dx = dx0, ones(static_cast<std::size_t>(hs), 1.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t o = r * stride + h * hs;
        float rstd = 0;
        rmsnorm_forward(x.data() + o, ones.data(), ref_y.data() + o, &rstd, 1, hs);
        rmsnorm_backward(x.data() + o, ones.data(), &rstd, dy.data() + o, ref_dx.data() + o, nullptr, 1, hs);
      }
    for (VectorIsa isa : supported_isas())
      for (int threads : {1, 2, 3}) {
        const ForcedVectorIsaScope forced(isa);
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        std::vector<float> y = x, dx = dx0, rstd(static_cast<std::size_t>(rows * heads));
        head_rmsnorm_forward(x.data(), y.data(), rstd.data(), rows, stride, heads, hs);
        head_rmsnorm_backward(x.data(), rstd.data(), dy.data(), dx.data(), rows, stride, heads, hs);
        std::vector<float> in_place = x;  // the sampler normalises in place, without saving 1/rms
        head_rmsnorm_forward(in_place.data(), in_place.data(), nullptr, rows, stride, heads, hs);
        omp_set_num_threads(before);
        const std::string where =
            std::string(vector_isa_name(isa)) + " hs " + std::to_string(hs) + " threads " + std::to_string(threads);
        EXPECT_TRUE(same_bits(y, ref_y)) << where;
        EXPECT_TRUE(same_bits(in_place, ref_y)) << where;
        EXPECT_TRUE(same_bits(dx, ref_dx)) << where;
      }
  }
}

// RoPE: the table is cos/sin of pos * theta^(-2i/hs) rounded once to float; the rotation keeps
// each pair's length, is the identity at position 0, its backward is the inverse rotation, and
// a rotated query and key score depends on their distance only.
TEST(Rope, TableRotationAndRelativePositions) {
  const int64_t hs = 8, positions = 50;
  const RopeTable t = make_rope_table(positions, hs, 10000.0);
  for (int64_t p : {0, 1, 7, 49})
    for (int64_t i = 0; i < hs / 2; ++i) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / hs);
      EXPECT_EQ(t.cos[static_cast<std::size_t>(p * hs / 2 + i)], static_cast<float>(std::cos(angle)));
      EXPECT_EQ(t.sin[static_cast<std::size_t>(p * hs / 2 + i)], static_cast<float>(std::sin(angle)));
    }
  const auto q = random_row(2 * hs, 1, 1.0f), k = random_row(2 * hs, 2, 1.0f);  // two heads
  std::vector<float> y(q.size());
  rope_rotate(t, 0, q.data(), y.data(), 2);
  EXPECT_TRUE(same_bits(y, q));
  rope_rotate(t, 13, q.data(), y.data(), 2);
  std::vector<float> back(q.size(), 0.0f);
  rope_rotate_backward(t, 13, y.data(), back.data(), 2);
  for (std::size_t j = 0; j < q.size(); ++j) EXPECT_NEAR(back[j], q[j], 1e-6);
  for (int64_t i = 0; i < hs / 2; ++i)
    EXPECT_NEAR(std::hypot(y[i], y[i + hs / 2]), std::hypot(q[i], q[i + hs / 2]), 1e-6);
  auto score = [&](int64_t pq, int64_t pk) {
    std::vector<float> rq(hs), rk(hs);
    rope_rotate(t, pq, q.data(), rq.data(), 1);
    rope_rotate(t, pk, k.data(), rk.data(), 1);
    double dot = 0;
    for (int64_t j = 0; j < hs; ++j) dot += static_cast<double>(rq[j]) * rk[j];
    return dot;
  };
  EXPECT_NEAR(score(9, 4), score(45, 40), 1e-5);
  EXPECT_GT(std::fabs(score(9, 4) - score(9, 8)), 1e-3);
}

TEST(LaneSum, IsAccurateAndUsesTheDocumentedOrder) {
  const std::vector<float> x = random_row(1001, 5, 1.0f);
  double exact = 0.0;
  for (float v : x) exact += v;
  const float sum = lane_sum(static_cast<int64_t>(x.size()), [&](int64_t j) { return x[j]; });
  EXPECT_NEAR(sum, exact, 1e-4);
  // The same order written out: lane j % 16, then the lanes halved pairwise.
  float lanes[16] = {};
  for (std::size_t j = 0; j < x.size(); ++j) lanes[j % 16] += x[j];
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  EXPECT_TRUE(same_bits(sum, lanes[0]));
  EXPECT_TRUE(same_bits(lane_max(static_cast<int64_t>(x.size()), [&](int64_t j) { return x[j]; }),
                        *std::max_element(x.begin(), x.end())));
}

// The definition: splitmix64's output at step index + 1 from `seed`, its top 24 bits as a
// uniform number in [0, 1), kept when >= p.
bool kept_by_definition(uint64_t seed, uint64_t index, float p) {
  const uint64_t z = splitmix64_mix(seed + (index + 1) * kSplitmixIncrement);
  return static_cast<float>(z >> 40) * 0x1.0p-24f >= p;
}

TEST(DropoutMaskKernel, EveryLoopGivesTheDefinitionsDecisionsBitForBit) {
  const std::vector<float> d = random_row(301, 5, 1.0f);
  std::vector<float> acc0 = random_row(301, 6, 1.0f);
  acc0[7] = -0.0f;  // a dropped element leaves the accumulator as it is, sign of zero included
  ASSERT_GE(supported_isas().size(), 2u) << "the baseline and at least one vector loop";
  for (VectorIsa isa : supported_isas()) {
    const ForcedVectorIsaScope forced(isa);
    for (float p : {1e-7f, 0.1f, 0.2f, 1.0f / 3.0f, 0.5f, 0.9f, 0.9999f}) {
      for (uint64_t first : {uint64_t{0}, uint64_t{5}, (uint64_t{1} << 40) + 3}) {
        for (int64_t n : {0, 1, 3, 4, 5, 15, 16, 17, 64, 301}) {
          const DropoutKeys keys = dropout_keys(0x1234567890abcdefull + first, p);
          std::vector<float> expected(n), expected_acc(acc0.begin(), acc0.begin() + n);
          for (int64_t j = 0; j < n; ++j) {
            const bool kept = kept_by_definition(keys.seed, first + j, p);
            EXPECT_EQ(dropout_kept(keys, first + j), kept);
            expected[j] = kept ? d[j] * keys.keep_scale : 0.0f;
            if (kept) expected_acc[j] += d[j] * keys.keep_scale;
          }
          std::vector<float> out(n, 99.0f), in_place(d.begin(), d.begin() + n), acc(acc0.begin(), acc0.begin() + n);
          dropout_apply_range(keys, first, d.data(), out.data(), n);
          dropout_apply_range(keys, first, in_place.data(), in_place.data(), n);
          dropout_accumulate_range(keys, first, d.data(), acc.data(), n);
          const std::string where = std::string(vector_isa_name(isa)) + ", p " + std::to_string(p) + ", first " +
                                    std::to_string(first) + ", n " + std::to_string(n);
          EXPECT_TRUE(same_bits(out, expected)) << where;
          EXPECT_TRUE(same_bits(in_place, expected)) << where;
          EXPECT_TRUE(same_bits(acc, expected_acc)) << where;
        }
      }
    }
  }
}

// On the boundary: p equal to an element's own uniform number keeps it; the next float above drops it.
TEST(DropoutMaskKernel, AnElementWhoseNumberEqualsPIsKept) {
  const uint64_t seed = 77, first = 9;
  const std::vector<float> ones(17, 1.0f);
  for (VectorIsa isa : supported_isas()) {
    const ForcedVectorIsaScope forced(isa);
    for (int64_t j = 0; j < 17; ++j) {
      const float own = static_cast<float>(dropout_hash_bits(seed, first + j)) * 0x1.0p-24f;
      for (float p : {own, std::nextafter(own, 1.0f)}) {
        std::vector<float> out(17);
        dropout_apply_range(dropout_keys(seed, p), first, ones.data(), out.data(), 17);
        EXPECT_EQ(out[j] != 0.0f, kept_by_definition(seed, first + j, p)) << j << " " << p;
        EXPECT_EQ(out[j] != 0.0f, p == own) << j << " " << p;
      }
    }
  }
}

TEST(DropoutMaskKernel, KeepsOneMinusPOfTheElements) {
  const int64_t n = 1 << 20;
  const std::vector<float> ones(n, 1.0f);
  std::vector<float> out(n);
  for (float p : {0.1f, 0.2f, 0.5f}) {
    const DropoutKeys keys = dropout_keys(42, p);
    dropout_apply_range(keys, 0, ones.data(), out.data(), n);
    const double kept = static_cast<double>(std::count_if(out.begin(), out.end(), [](float v) { return v != 0.0f; }));
    EXPECT_NEAR(kept / n, 1.0 - p, 0.003) << p;  // about 6 standard deviations
    EXPECT_TRUE(same_bits(*std::max_element(out.begin(), out.end()), keys.keep_scale));
  }
}

TEST(MaxIsa, EveryNameParsesInAnyCaseAndUnsetOrEmptyIsNoCap) {
  for (const MaxIsa cap : kMaxIsas) {
    EXPECT_EQ(parse_max_isa(max_isa_name(cap)).cap, cap) << max_isa_name(cap);
    std::string upper = max_isa_name(cap);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const MaxIsaSetting parsed = parse_max_isa(upper.c_str());
    EXPECT_EQ(parsed.cap, cap) << upper;
    EXPECT_EQ(parsed.error, "") << upper;
  }
  for (const char* none : {static_cast<const char*>(nullptr), ""}) {
    EXPECT_EQ(parse_max_isa(none).cap, std::nullopt);
    EXPECT_EQ(parse_max_isa(none).error, "");
  }
}

TEST(MaxIsa, AnUnknownNameIsAnErrorNamingTheVariableTheValueAndEveryValidName) {
  for (const char* bad : {"bogus", "avx", "avx-512", " avx2"}) {
    const MaxIsaSetting parsed = parse_max_isa(bad);
    EXPECT_EQ(parsed.cap, std::nullopt) << bad;
    EXPECT_NE(parsed.error.find(std::string("GPT_MAX_ISA=") + bad), std::string::npos) << parsed.error;
    for (const MaxIsa cap : kMaxIsas)
      EXPECT_NE(parsed.error.find(max_isa_name(cap)), std::string::npos) << parsed.error;
  }
}

// Each cap clears the features above it and keeps those below; a level of the other architecture
// caps nothing.
TEST(MaxIsa, ACapClearsExactlyTheFeaturesAboveIt) {
  const CpuFeatures all{
      .avx2 = true, .fma = true, .avx512f = true, .avx512dq = true, .avx512bf16 = true, .amx_bf16 = true, .neon = true};
  const auto flags = [](const CpuFeatures& f) {
    return std::vector<bool>{f.avx2, f.fma, f.avx512f, f.avx512dq, f.avx512bf16, f.amx_bf16, f.neon};
  };
  EXPECT_EQ(flags(capped(all, MaxIsa::portable)), flags(CpuFeatures{}));
  EXPECT_EQ(flags(capped(all, MaxIsa::avx2)), (std::vector<bool>{true, true, false, false, false, false, true}));
  EXPECT_EQ(flags(capped(all, MaxIsa::avx512)), (std::vector<bool>{true, true, true, true, false, false, true}));
  EXPECT_EQ(flags(capped(all, MaxIsa::avx512_bf16)), (std::vector<bool>{true, true, true, true, true, false, true}));
  EXPECT_EQ(flags(capped(all, MaxIsa::amx)), flags(all));
  EXPECT_EQ(flags(capped(all, MaxIsa::neon)), flags(all));
  const CpuFeatures avx2_only{.avx2 = true, .fma = true};
  EXPECT_EQ(flags(capped(avx2_only, MaxIsa::avx512)), flags(avx2_only));
}

}  // namespace
}  // namespace gpt
