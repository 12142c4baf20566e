// gelu: the exact (erf) GELU, as PyTorch's nn.GELU() default; nanoGPT uses this form.
// d/dx = Phi(x) + x phi(x), with Phi the standard normal CDF and phi its density.
#include <cmath>
#include <numbers>

#include "ops/ops.h"

namespace gpt {

namespace {

void gelu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 14))
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * static_cast<float>(std::numbers::sqrt2 / 2)));
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  const float inv_sqrt_2pi = static_cast<float>(0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2);
#pragma omp parallel for schedule(static) if (n > (1 << 14))
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + std::erf(x[i] * static_cast<float>(std::numbers::sqrt2 / 2)));
    const float pdf = inv_sqrt_2pi * std::exp(-0.5f * x[i] * x[i]);
    dx[i] += dy[i] * (cdf + x[i] * pdf);
  }
}

}  // namespace

Tensor gelu(Graph& g, const Tensor& x) {
  const int64_t n = x.numel();
  Tensor y = g.make(x.shape, x.requires_grad());
  gelu_forward(x.data, y.data, n);
  if (y.grad) g.record([=] { gelu_backward(x.data, y.grad, x.grad, n); });
  return y;
}

}  // namespace gpt
