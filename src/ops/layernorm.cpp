// layernorm over the last axis: y = (x - mean) / sqrt(var + eps) * w + b, eps = 1e-5, biased
// variance (as PyTorch). Forward saves mean and 1/std per row; backward recomputes x-hat from them.
#include <algorithm>
#include <cmath>

#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace detail {

namespace {
constexpr float kEps = 1e-5f;
}  // namespace

void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t rows,
                       int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    float m = 0.0f;
    for (int64_t j = 0; j < C; ++j) m += xr[j];
    m /= static_cast<float>(C);
    float v = 0.0f;
    for (int64_t j = 0; j < C; ++j) v += (xr[j] - m) * (xr[j] - m);  // two passes: no cancellation
    v /= static_cast<float>(C);
    const float s = 1.0f / std::sqrt(v + kEps);
    float* yr = y + r * C;
    for (int64_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * s * w[j] + (b ? b[j] : 0.0f);
    mean[r] = m;
    rstd[r] = s;
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w; dw += sum dy*xhat; db += sum dy.
void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy, float* dx,
                        float* dw, float* db, int64_t rows, int64_t C) {
  if (dx) {
#pragma omp parallel for schedule(static) if (rows * C > (1 << 15))
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * C;
      const float* dyr = dy + r * C;
      const float m = mean[r], s = rstd[r];
      float g_mean = 0.0f, gx_mean = 0.0f;
      for (int64_t j = 0; j < C; ++j) {
        const float gj = dyr[j] * w[j];
        g_mean += gj;
        gx_mean += gj * (xr[j] - m) * s;
      }
      g_mean /= static_cast<float>(C);
      gx_mean /= static_cast<float>(C);
      float* dxr = dx + r * C;
      for (int64_t j = 0; j < C; ++j) dxr[j] += s * (dyr[j] * w[j] - g_mean - (xr[j] - m) * s * gx_mean);
    }
  }
  if (!dw && !db) return;
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * C > (1 << 15) && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kBlock, j1 = std::min(C, j0 + kBlock);
    float acc_w[kBlock] = {}, acc_b[kBlock] = {};
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

}  // namespace detail

Tensor layernorm(Graph& g, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t C = x.shape.last(), rows = x.shape.rows();
  GPT_CHECK(weight.shape == Shape{C}, "layernorm weight " + weight.shape.str() + " for input " + x.shape.str());
  if (defined(bias)) GPT_CHECK(bias.shape == Shape{C}, "layernorm bias " + bias.shape.str());
  Tensor y = g.make(x.shape, detail::any_grad(x, weight) || bias.requires_grad());
  float* mean = g.scratch(rows);
  float* rstd = g.scratch(rows);
  detail::layernorm_forward(x.data, weight.data, bias.data, y.data, mean, rstd, rows, C);
  if (y.requires_grad())
    g.record(y, [=] {
      detail::layernorm_backward(x.data, weight.data, mean, rstd, y.grad(), x.grad_accumulator(), weight.grad_accumulator(),
                         bias.grad_accumulator(), rows, C);
    });
  return y;
}

}  // namespace gpt
