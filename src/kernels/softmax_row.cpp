#include "kernels/softmax_row.h"

#include "kernels/fast_math.h"
#include "kernels/lane_sum.h"

namespace gpt {

GPT_VECTOR_CLONES void softmax_row(float* row, int64_t n, float scale) {
  // max(scale * x) = scale * max(x) for scale > 0 (attention's 1/sqrt(hs), the softmax op's 1).
  const float max = lane_max(row, n) * scale;
  for (int64_t j = 0; j < n; ++j) row[j] = fast_exp(row[j] * scale - max);
  const float inv = 1.0f / lane_sum(n, [row](int64_t j) { return row[j]; });
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

}  // namespace gpt
