#include "kernels/softmax_row.h"

#include "kernels/fast_math.h"

namespace gpt {

GPT_VECTOR_CLONES void softmax_row(float* row, int64_t n, float scale) {
  float max = row[0] * scale;
  for (int64_t j = 1; j < n; ++j) max = row[j] * scale > max ? row[j] * scale : max;
  for (int64_t j = 0; j < n; ++j) row[j] = fast_exp(row[j] * scale - max);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += row[j];
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

}  // namespace gpt
