// RMSNorm over the last axis: y = x * s * w with s = 1 / sqrt(mean(x^2) + eps), eps = 1e-5.
// Forward saves s per row. Row reductions run in fixed lanes (kernels/lane_sum.h) so they
// vectorise with the same bits on every instruction set's path; the weight gradient sums rows in
// order per column block, so every thread count gives the same bits.
#include "kernels/rmsnorm.h"

#include <cmath>

#include "kernels/cpu_features.h"
#include "kernels/lane_sum.h"
#include "kernels/parallel.h"

namespace gpt {

namespace {

constexpr float kEps = 1e-5f;

// w == nullptr: no weight (QK-norm); y may be x; rstd may be null.
GPT_ALWAYS_INLINE void rmsnorm_row(const float* x, const float* w, float* y, float* rstd, int64_t C) {
  const float ms = lane_sum(C, [x](int64_t j) { return x[j] * x[j]; }) / static_cast<float>(C);
  const float s = 1.0f / std::sqrt(ms + kEps);
  if (w)
    for (int64_t j = 0; j < C; ++j) y[j] = x[j] * s * w[j];
  else
    for (int64_t j = 0; j < C; ++j) y[j] = x[j] * s;
  if (rstd) *rstd = s;
}

// ds/dx_j = -s^3 x_j / C, so dx += s * (g - x * s^2 * mean(g * x)) with g = dy * w (g = dy without w).
GPT_ALWAYS_INLINE void rmsnorm_row_backward(const float* x, const float* w, float s, const float* dy, float* dx,
                                            int64_t C) {
  if (!w) {
    const float gx_mean = lane_sum(C, [dy, x](int64_t j) { return dy[j] * x[j]; }) / static_cast<float>(C);
    const float k = s * s * gx_mean;
    for (int64_t j = 0; j < C; ++j) dx[j] += s * (dy[j] - x[j] * k);
    return;
  }
  const float gx_mean = lane_sum(C, [dy, w, x](int64_t j) { return dy[j] * w[j] * x[j]; }) / static_cast<float>(C);
  const float k = s * s * gx_mean;
  for (int64_t j = 0; j < C; ++j) dx[j] += s * (dy[j] * w[j] - x[j] * k);
}

// Each instruction set's rows (kernels/cpu_features.h: VectorIsa).
#if GPT_X86_64
GPT_TARGET_AVX512 void rmsnorm_row_avx512(const float* x, const float* w, float* y, float* rstd, int64_t C) {
  rmsnorm_row(x, w, y, rstd, C);
}
GPT_TARGET_AVX2 void rmsnorm_row_avx2(const float* x, const float* w, float* y, float* rstd, int64_t C) {
  rmsnorm_row(x, w, y, rstd, C);
}
GPT_TARGET_AVX512 void rmsnorm_row_backward_avx512(const float* x, const float* w, float s, const float* dy, float* dx,
                                                   int64_t C) {
  rmsnorm_row_backward(x, w, s, dy, dx, C);
}
GPT_TARGET_AVX2 void rmsnorm_row_backward_avx2(const float* x, const float* w, float s, const float* dy, float* dx,
                                               int64_t C) {
  rmsnorm_row_backward(x, w, s, dy, dx, C);
}
#elif GPT_AARCH64
void rmsnorm_row_neon(const float* x, const float* w, float* y, float* rstd, int64_t C) {
  rmsnorm_row(x, w, y, rstd, C);
}
void rmsnorm_row_backward_neon(const float* x, const float* w, float s, const float* dy, float* dx, int64_t C) {
  rmsnorm_row_backward(x, w, s, dy, dx, C);
}
#endif
void rmsnorm_row_baseline(const float* x, const float* w, float* y, float* rstd, int64_t C) {
  rmsnorm_row(x, w, y, rstd, C);
}
void rmsnorm_row_backward_baseline(const float* x, const float* w, float s, const float* dy, float* dx, int64_t C) {
  rmsnorm_row_backward(x, w, s, dy, dx, C);
}

}  // namespace

void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, int64_t rows, int64_t C) {
  const auto row = GPT_VECTOR_PATH(rmsnorm_row);
#pragma omp parallel for schedule(static) if (rows * C > kParallelMinRowReduction)
  for (int64_t r = 0; r < rows; ++r) row(x + r * C, w, y + r * C, rstd + r, C);
}

// dw += sum over rows of dy * x * s.
void rmsnorm_backward(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw,
                      int64_t rows, int64_t C) {
  if (dx) {
    const auto row = GPT_VECTOR_PATH(rmsnorm_row_backward);
#pragma omp parallel for schedule(static) if (rows * C > kParallelMinRowReduction)
    for (int64_t r = 0; r < rows; ++r) row(x + r * C, w, rstd[r], dy + r * C, dx + r * C, C);
  }
  if (!dw) return;
  const int64_t blocks = column_blocks(C);
#pragma omp parallel for schedule(static) if (rows * C > kParallelMinRowReduction && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const auto [j0, j1] = column_block(blk, C);
    float acc_w[kColumnBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * C;
      const float* dyr = dy + r * C;
      for (int64_t j = j0; j < j1; ++j) acc_w[j - j0] += dyr[j] * xr[j] * rstd[r];
    }
    for (int64_t j = j0; j < j1; ++j) dw[j] += acc_w[j - j0];
  }
}

// Each row holds `heads` vectors of size hs, then other values (stride - heads * hs of them),
// which are left alone.
void head_rmsnorm_forward(const float* x, float* y, float* rstd, int64_t rows, int64_t stride, int64_t heads,
                          int64_t hs) {
  const auto row = GPT_VECTOR_PATH(rmsnorm_row);
#pragma omp parallel for schedule(static) if (rows * heads * hs > kParallelMinRowReduction)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      row(x + r * stride + h * hs, nullptr, y + r * stride + h * hs, rstd ? rstd + r * heads + h : nullptr, hs);
}

void head_rmsnorm_backward(const float* x, const float* rstd, const float* dy, float* dx, int64_t rows, int64_t stride,
                           int64_t heads, int64_t hs) {
  const auto row = GPT_VECTOR_PATH(rmsnorm_row_backward);
#pragma omp parallel for schedule(static) if (rows * heads * hs > kParallelMinRowReduction)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t o = r * stride + h * hs;
      row(x + o, nullptr, rstd[r * heads + h], dy + o, dx + o, hs);
    }
}

}  // namespace gpt
