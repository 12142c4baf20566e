#include "kernels/weighted_rows.h"

#include "kernels/cpu_features.h"

namespace gpt {

namespace {

// Vectorised over the columns by each path's target; -ffp-contract=off keeps the product and the
// sum two roundings in every one.
GPT_ALWAYS_INLINE void weighted_row_sum_body(int64_t rows, int64_t width, const float* weights, const float* x,
                                             int64_t ldx, float* out) {
  for (int64_t d = 0; d < width; ++d) out[d] = 0.0f;
  for (int64_t j = 0; j < rows; ++j) {
    const float w = weights[j];
    const float* row = x + j * ldx;
    for (int64_t d = 0; d < width; ++d) out[d] += w * row[d];
  }
}

#if GPT_X86_64
GPT_TARGET_AVX512 void weighted_row_sum_avx512(int64_t rows, int64_t width, const float* weights, const float* x,
                                               int64_t ldx, float* out) {
  weighted_row_sum_body(rows, width, weights, x, ldx, out);
}
GPT_TARGET_AVX2 void weighted_row_sum_avx2(int64_t rows, int64_t width, const float* weights, const float* x,
                                           int64_t ldx, float* out) {
  weighted_row_sum_body(rows, width, weights, x, ldx, out);
}
#elif GPT_AARCH64
void weighted_row_sum_neon(int64_t rows, int64_t width, const float* weights, const float* x, int64_t ldx, float* out) {
  weighted_row_sum_body(rows, width, weights, x, ldx, out);
}
#endif
void weighted_row_sum_baseline(int64_t rows, int64_t width, const float* weights, const float* x, int64_t ldx,
                               float* out) {
  weighted_row_sum_body(rows, width, weights, x, ldx, out);
}

}  // namespace

void weighted_row_sum(int64_t rows, int64_t width, const float* weights, const float* x, int64_t ldx, float* out) {
  GPT_VECTOR_PATH(weighted_row_sum)(rows, width, weights, x, ldx, out);
}

}  // namespace gpt
