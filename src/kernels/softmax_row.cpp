#include "kernels/softmax_row.h"

#include <algorithm>

#include "kernels/cpu_features.h"
#include "kernels/fast_math.h"
#include "kernels/lane_sum.h"

#if GPT_X86_64
#include <immintrin.h>

#include "kernels/avx512_lanes.h"
#endif

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
// GCC 12 reports the masked loads' undefined source vectors as maybe uninitialized (bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// AVX-512 by hand: GCC's vectorisation of the loops above keeps the lanes on the stack and peels
// scalar iterations, which made softmax a third of attention's forward. The same operations in
// the same order (fast_exp op for op, one register as the 16 lanes), so the same bits.
GPT_TARGET_AVX512 GPT_ALWAYS_INLINE __m512 fast_exp_avx512(__m512 x) {
  const __mmask16 low = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
  const __mmask16 high = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.0f), _CMP_GT_OQ);
  x = _mm512_mask_blend_ps(high, x, _mm512_set1_ps(88.0f));
  x = _mm512_mask_blend_ps(low, x, _mm512_set1_ps(-87.0f));
  const __m512 shifter = _mm512_set1_ps(12582912.0f);
  const __m512 n =
      _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), shifter), shifter);
  __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(0.693145751953125f)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(1.428606765330187045e-06f)));
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  for (const float c : {1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(c));
  const __m512i exponent = _mm512_slli_epi32(_mm512_cvttps_epi32(n), 23);
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), exponent));
}

GPT_TARGET_AVX512 GPT_ALWAYS_INLINE float combine_max_lanes(__m512 v) {
  alignas(64) float lanes[kSumLanes];
  _mm512_store_ps(lanes, v);
  for (int width = kSumLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lanes[l] = lanes[l + width] > lanes[l] ? lanes[l + width] : lanes[l];
  return lanes[0];
}

GPT_TARGET_AVX512 GPT_ALWAYS_INLINE float combine_sum_lanes(__m512 v) {
  alignas(64) float lanes[kSumLanes];
  _mm512_store_ps(lanes, v);
  return combine_lanes(lanes);
}

// row[j] <- 0 for the vectors that start at or past n (their lanes would add zeros to the sums and
// lose to row[0] in the max: nothing to compute), j < width.
GPT_TARGET_AVX512 GPT_ALWAYS_INLINE void zero_masked_vectors(float* row, int64_t n, int64_t width) {
  for (int64_t j = (n + 15) / 16 * 16; j < width; j += 16)
    _mm512_mask_storeu_ps(row + j, first_lanes(width - j), _mm512_setzero_ps());
}

// row[j] <- j < n ? fast_exp(row[j] scale - max) times `factor` (when given) : 0, for j < width;
// returns the lanes' sums of the values before the factor.
template <bool kTimesFactor>
GPT_TARGET_AVX512 GPT_ALWAYS_INLINE __m512 exps_avx512(float* row, int64_t n, int64_t width, float scale, float max,
                                                       float factor) {
  const __m512 vscale = _mm512_set1_ps(scale), vmax = _mm512_set1_ps(max), vfactor = _mm512_set1_ps(factor);
  __m512 sums = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 stored = first_lanes(width - j), live = first_lanes(n - j);
    const __m512 x = _mm512_maskz_loadu_ps(stored, row + j);
    __m512 e = _mm512_maskz_mov_ps(live, fast_exp_avx512(_mm512_sub_ps(_mm512_mul_ps(x, vscale), vmax)));
    sums = _mm512_mask_add_ps(sums, stored, sums, e);
    if constexpr (kTimesFactor) e = _mm512_mul_ps(e, vfactor);
    _mm512_mask_storeu_ps(row + j, stored, e);
  }
  zero_masked_vectors(row, n, width);
  return sums;
}

GPT_TARGET_AVX512 SoftmaxRowStats softmax_row_avx512(float* row, int64_t n, int64_t width, float scale) {
  const __m512 first = _mm512_set1_ps(row[0]);
  __m512 maxima = first;
  for (int64_t j = 0; j < n; j += 16) {
    const __m512 x = _mm512_mask_loadu_ps(first, first_lanes(n - j), row + j);  // row[0] stands in past n
    maxima = _mm512_mask_max_ps(maxima, first_lanes(width - j), x, maxima);
  }
  const float max = combine_max_lanes(maxima) * scale;
  const float inv = 1.0f / combine_sum_lanes(exps_avx512<false>(row, n, width, scale, max, 1.0f));
  const __m512 vinv = _mm512_set1_ps(inv);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 stored = first_lanes(width - j);
    _mm512_mask_storeu_ps(row + j, stored, _mm512_mul_ps(_mm512_maskz_loadu_ps(stored, row + j), vinv));
  }
  return {max, inv};
}
GPT_TARGET_AVX2 SoftmaxRowStats softmax_row_avx2(float* row, int64_t n, int64_t width, float scale) {
  return softmax_row_body(row, n, width, scale);
}
GPT_TARGET_AVX512 void softmax_again_avx512(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats) {
  exps_avx512<true>(row, n, width, scale, stats.max, stats.inv_sum);
}
#pragma GCC diagnostic pop
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
