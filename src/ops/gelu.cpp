// gelu: the exact (erf) GELU, as PyTorch's nn.GELU() default; nanoGPT uses this form.
// d/dx = Phi(x) + x phi(x), with Phi the standard normal CDF and phi its density.
// erf and exp come from kernels/fast_math.h so the loops vectorise.
#include <algorithm>
#include <numbers>

#include "kernels/fast_math.h"

#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace {

constexpr float kInvSqrt2 = static_cast<float>(std::numbers::sqrt2 / 2);

GPT_VECTOR_CLONES void gelu_forward_range(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + fast_erf(x[i] * kInvSqrt2));
}

// GELU'(x) = Phi(x) + x phi(x).
inline float gelu_slope(float x) {
  constexpr float inv_sqrt_2pi = static_cast<float>(0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2);
  const float cdf = 0.5f * (1.0f + fast_erf(x * kInvSqrt2));
  const float pdf = inv_sqrt_2pi * fast_exp(-0.5f * x * x);
  return cdf + x * pdf;
}

GPT_VECTOR_CLONES void gelu_backward_range(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * gelu_slope(x[i]);
}

GPT_VECTOR_CLONES void gelu_backward_in_place_range(const float* x, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = d[i] * gelu_slope(x[i]);
}

// Parallel over fixed chunks so each thread runs a vectorised range.
constexpr int64_t kChunk = 4096;

}  // namespace

namespace detail {

void gelu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 14))
  for (int64_t c = 0; c < n; c += kChunk) gelu_forward_range(x + c, y + c, std::min(kChunk, n - c));
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 14))
  for (int64_t c = 0; c < n; c += kChunk) gelu_backward_range(x + c, dy + c, dx + c, std::min(kChunk, n - c));
}

void gelu_backward_in_place(const float* x, float* d, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 14))
  for (int64_t c = 0; c < n; c += kChunk) gelu_backward_in_place_range(x + c, d + c, std::min(kChunk, n - c));
}

}  // namespace detail

Tensor gelu(Graph& g, const Tensor& x) {
  const int64_t n = x.numel();
  Tensor y = g.make(x.shape, x.requires_grad());
  detail::gelu_forward(x.data, y.data, n);
  if (y.requires_grad()) g.record(y, [=] { detail::gelu_backward(x.data, y.grad(), x.grad_accumulator(), n); });
  return y;
}

}  // namespace gpt
