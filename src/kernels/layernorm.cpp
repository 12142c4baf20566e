// layernorm over the last axis: y = (x - mean) / sqrt(var + eps) * w + b, eps = 1e-5, biased
// variance (as PyTorch). Forward saves mean and 1/std per row; backward recomputes x-hat from them.
// Row reductions run in fixed lanes (kernels/lane_sum.h) so they vectorise with the same bits on
// every instruction set's path.
#include "kernels/layernorm.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu_features.h"
#include "kernels/lane_sum.h"
#include "kernels/parallel.h"

namespace gpt {

namespace {

constexpr float kEps = 1e-5f;

GPT_ALWAYS_INLINE void layernorm_row(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                                     int64_t C) {
  const float m = lane_sum(C, [x](int64_t j) { return x[j]; }) / static_cast<float>(C);
  // Two passes: no cancellation.
  const float v = lane_sum(C, [x, m](int64_t j) { return (x[j] - m) * (x[j] - m); }) / static_cast<float>(C);
  const float s = 1.0f / std::sqrt(v + kEps);
  if (b)
    for (int64_t j = 0; j < C; ++j) y[j] = (x[j] - m) * s * w[j] + b[j];
  else
    for (int64_t j = 0; j < C; ++j) y[j] = (x[j] - m) * s * w[j] + 0.0f;
  *mean = m;
  *rstd = s;
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w.
GPT_ALWAYS_INLINE void layernorm_row_backward(const float* x, const float* w, float m, float s, const float* dy,
                                              float* dx, int64_t C) {
  const float g_mean = lane_sum(C, [dy, w](int64_t j) { return dy[j] * w[j]; }) / static_cast<float>(C);
  const float gx_mean =
      lane_sum(C, [dy, w, x, m, s](int64_t j) { return dy[j] * w[j] * (x[j] - m) * s; }) / static_cast<float>(C);
  for (int64_t j = 0; j < C; ++j) dx[j] += s * (dy[j] * w[j] - g_mean - (x[j] - m) * s * gx_mean);
}

// Each instruction set's rows (kernels/cpu_features.h: VectorIsa).
#if GPT_X86_64
GPT_TARGET_AVX512 void layernorm_row_avx512(const float* x, const float* w, const float* b, float* y, float* mean,
                                            float* rstd, int64_t C) {
  layernorm_row(x, w, b, y, mean, rstd, C);
}
GPT_TARGET_AVX2 void layernorm_row_avx2(const float* x, const float* w, const float* b, float* y, float* mean,
                                        float* rstd, int64_t C) {
  layernorm_row(x, w, b, y, mean, rstd, C);
}
GPT_TARGET_AVX512 void layernorm_row_backward_avx512(const float* x, const float* w, float m, float s, const float* dy,
                                                     float* dx, int64_t C) {
  layernorm_row_backward(x, w, m, s, dy, dx, C);
}
GPT_TARGET_AVX2 void layernorm_row_backward_avx2(const float* x, const float* w, float m, float s, const float* dy,
                                                 float* dx, int64_t C) {
  layernorm_row_backward(x, w, m, s, dy, dx, C);
}
#elif GPT_AARCH64
void layernorm_row_neon(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t C) {
  layernorm_row(x, w, b, y, mean, rstd, C);
}
void layernorm_row_backward_neon(const float* x, const float* w, float m, float s, const float* dy, float* dx,
                                 int64_t C) {
  layernorm_row_backward(x, w, m, s, dy, dx, C);
}
#endif
void layernorm_row_baseline(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                            int64_t C) {
  layernorm_row(x, w, b, y, mean, rstd, C);
}
void layernorm_row_backward_baseline(const float* x, const float* w, float m, float s, const float* dy, float* dx,
                                     int64_t C) {
  layernorm_row_backward(x, w, m, s, dy, dx, C);
}

}  // namespace

void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t rows,
                       int64_t C) {
  const auto row = GPT_VECTOR_PATH(layernorm_row);
#pragma omp parallel for schedule(static) if (rows * C > kParallelMinRowReduction)
  for (int64_t r = 0; r < rows; ++r) row(x + r * C, w, b, y + r * C, mean + r, rstd + r, C);
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w; dw += sum dy*xhat; db += sum dy.
void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                        float* dx, float* dw, float* db, int64_t rows, int64_t C) {
  if (dx) {
    const auto row = GPT_VECTOR_PATH(layernorm_row_backward);
#pragma omp parallel for schedule(static) if (rows * C > kParallelMinRowReduction)
    for (int64_t r = 0; r < rows; ++r) row(x + r * C, w, mean[r], rstd[r], dy + r * C, dx + r * C, C);
  }
  if (!dw && !db) return;
  const int64_t blocks = column_blocks(C);
#pragma omp parallel for schedule(static) if (rows * C > kParallelMinRowReduction && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const auto [j0, j1] = column_block(blk, C);
    float acc_w[kColumnBlock] = {}, acc_b[kColumnBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * C;
      const float* dyr = dy + r * C;
      for (int64_t j = j0; j < j1; ++j) {
        acc_w[j - j0] += dyr[j] * (xr[j] - mean[r]) * rstd[r];
        acc_b[j - j0] += dyr[j];
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      if (dw) dw[j] += acc_w[j - j0];
      if (db) db[j] += acc_b[j - j0];
    }
  }
}

}  // namespace gpt
