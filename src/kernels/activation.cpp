// The exact (erf) GELU, as PyTorch's nn.GELU() default (nanoGPT uses this form), and the
// activation dispatch both executors of the model call. d/dx = Phi(x) + x phi(x), with Phi the
// standard normal CDF and phi its density; erf and exp come from fast_math.h so loops vectorise.
#include "kernels/activation.h"

#include <algorithm>
#include <numbers>

#include "kernels/fast_math.h"
#include "kernels/parallel.h"

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

void gelu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwiseTranscendental)
  for (int64_t c = 0; c < n; c += kChunk) gelu_forward_range(x + c, y + c, std::min(kChunk, n - c));
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwiseTranscendental)
  for (int64_t c = 0; c < n; c += kChunk) gelu_backward_range(x + c, dy + c, dx + c, std::min(kChunk, n - c));
}

void gelu_backward_in_place(const float* x, float* d, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwiseTranscendental)
  for (int64_t c = 0; c < n; c += kChunk) gelu_backward_in_place_range(x + c, d + c, std::min(kChunk, n - c));
}

void activation_forward(Activation act, const float* x, float* y, int64_t n) {
  switch (act) {
    case Activation::none:
      std::copy(x, x + n, y);
      return;
    case Activation::gelu:
      gelu_forward(x, y, n);
      return;
  }
}

void activation_backward(Activation act, const float* x, const float* dy, float* dx, int64_t n) {
  switch (act) {
    case Activation::none:
      for (int64_t i = 0; i < n; ++i) dx[i] += dy[i];
      return;
    case Activation::gelu:
      gelu_backward(x, dy, dx, n);
      return;
  }
}

void activation_backward_in_place(Activation act, const float* x, float* d, int64_t n) {
  switch (act) {
    case Activation::none:
      return;
    case Activation::gelu:
      gelu_backward_in_place(x, d, n);
      return;
  }
}

}  // namespace gpt
