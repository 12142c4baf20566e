#include "kernels/softmax_row.h"

#include "kernels/cpu_features.h"
#include "kernels/fast_math.h"
#include "kernels/lane_sum.h"

namespace gpt {

namespace {

GPT_ALWAYS_INLINE void exps_times(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats) {
  for (int64_t j = 0; j < width; ++j) row[j] = j < n ? fast_exp(row[j] * scale - stats.max) * stats.inv_sum : 0.0f;
}

GPT_ALWAYS_INLINE SoftmaxRowStats softmax_row_body(float* row, int64_t n, int64_t width, float scale) {
  // Positions n .. width-1 take part as row[0] (max: it never wins) and 0 (exp, sum): whole
  // vectors without remainder loops, and the same bits as the softmax of the first n values
  // alone (adding exact zeros to a lane changes nothing). max(scale * x) = scale * max(x) for
  // scale > 0.
  const float max = lane_max(width, [row, n](int64_t j) { return j < n ? row[j] : row[0]; }) * scale;
  for (int64_t j = 0; j < width; ++j) row[j] = j < n ? fast_exp(row[j] * scale - max) : 0.0f;
  const float inv = 1.0f / lane_sum(width, [row](int64_t j) { return row[j]; });
  for (int64_t j = 0; j < width; ++j) row[j] *= inv;
  return {max, inv};
}

#if GPT_X86_64
GPT_TARGET_AVX512 SoftmaxRowStats softmax_row_avx512(float* row, int64_t n, int64_t width, float scale) {
  return softmax_row_body(row, n, width, scale);
}
GPT_TARGET_AVX2 SoftmaxRowStats softmax_row_avx2(float* row, int64_t n, int64_t width, float scale) {
  return softmax_row_body(row, n, width, scale);
}
GPT_TARGET_AVX512 void softmax_again_avx512(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats) {
  exps_times(row, n, width, scale, stats);
}
GPT_TARGET_AVX2 void softmax_again_avx2(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats) {
  exps_times(row, n, width, scale, stats);
}
#elif GPT_AARCH64
SoftmaxRowStats softmax_row_neon(float* row, int64_t n, int64_t width, float scale) {
  return softmax_row_body(row, n, width, scale);
}
void softmax_again_neon(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats) {
  exps_times(row, n, width, scale, stats);
}
#endif
SoftmaxRowStats softmax_row_baseline(float* row, int64_t n, int64_t width, float scale) {
  return softmax_row_body(row, n, width, scale);
}
void softmax_again_baseline(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats) {
  exps_times(row, n, width, scale, stats);
}

}  // namespace

void softmax_row(float* row, int64_t n, int64_t width, float scale) {
  GPT_VECTOR_PATH(softmax_row)(row, n, width, scale);
}

SoftmaxRowStats softmax_row_with_stats(float* row, int64_t n, int64_t width, float scale) {
  return GPT_VECTOR_PATH(softmax_row)(row, n, width, scale);
}

void softmax_row_again(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats) {
  GPT_VECTOR_PATH(softmax_again)(row, n, width, scale, stats);
}

}  // namespace gpt
