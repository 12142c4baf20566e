#include "kernels/softmax_row.h"

#include "kernels/fast_math.h"
#include "kernels/lane_sum.h"

namespace gpt {

GPT_VECTOR_CLONES void softmax_row_in_width(float* row, int64_t n, int64_t width, float scale) {
  // Positions n .. width-1 take part as -inf (max) and 0 (exp, sum): whole vectors without
  // remainder loops, and the same bits as the softmax of the first n values alone (adding exact
  // zeros to a lane changes nothing). max(scale * x) = scale * max(x) for scale > 0.
  float lanes[kSumLanes];
  for (int l = 0; l < kSumLanes; ++l) lanes[l] = row[0];
  int64_t j = 0;
  for (; j + kSumLanes <= width; j += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l) {
      const float x = j + l < n ? row[j + l] : row[0];
      lanes[l] = x > lanes[l] ? x : lanes[l];
    }
  for (int l = 0; j + l < width; ++l) {
    const float x = j + l < n ? row[j + l] : row[0];
    lanes[l] = x > lanes[l] ? x : lanes[l];
  }
  for (int w = kSumLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] = lanes[l + w] > lanes[l] ? lanes[l + w] : lanes[l];
  const float max = lanes[0] * scale;
  for (int64_t k = 0; k < width; ++k) row[k] = k < n ? fast_exp(row[k] * scale - max) : 0.0f;
  const float inv = 1.0f / lane_sum(width, [row](int64_t k) { return row[k]; });
  for (int64_t k = 0; k < width; ++k) row[k] *= inv;
}

void softmax_row(float* row, int64_t n, float scale) { softmax_row_in_width(row, n, n, scale); }

}  // namespace gpt
