// The small vector kernels: softmax rows (against double precision, and a causal row wider than
// its values bit for bit against the row of just its values) and fixed-lane sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "kernels/lane_sum.h"
#include "kernels/softmax_row.h"

namespace gpt {
namespace {

std::vector<float> random_row(int64_t n, uint64_t seed, float scale) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal()) * scale;
  return v;
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
      ASSERT_EQ(wide, plain) << "n " << n << " width " << width;
    }
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
  EXPECT_EQ(sum, lanes[0]);
  EXPECT_EQ(lane_max(static_cast<int64_t>(x.size()), [&](int64_t j) { return x[j]; }),
            *std::max_element(x.begin(), x.end()));
}

}  // namespace
}  // namespace gpt
