// The activations' kernels and the one dispatch every caller goes through. GELU is the exact (erf)
// form, as PyTorch's nn.GELU() default (nanoGPT uses this form): d/dx = Phi(x) + x phi(x), with
// Phi the standard normal CDF and phi its density; erf and exp come from fast_math.h so loops
// vectorise. ReLU^2: relu(x)^2, d/dx = 2 relu(x).
#include "kernels/activation.h"

#include <algorithm>
#include <numbers>
#include <string>

#include "core/check.h"
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

GPT_VECTOR_CLONES void gelu_backward_accumulate_range(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * gelu_slope(x[i]);
}

GPT_VECTOR_CLONES void gelu_backward_overwrite_range(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * gelu_slope(x[i]);
}

// Parallel over fixed chunks so each thread runs a vectorised range.
constexpr int64_t kChunk = 4096;

void gelu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwiseTranscendental)
  for (int64_t c = 0; c < n; c += kChunk) gelu_forward_range(x + c, y + c, std::min(kChunk, n - c));
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n, GradWrite write) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwiseTranscendental)
  for (int64_t c = 0; c < n; c += kChunk) {
    if (write == GradWrite::accumulate)
      gelu_backward_accumulate_range(x + c, dy + c, dx + c, std::min(kChunk, n - c));
    else
      gelu_backward_overwrite_range(x + c, dy + c, dx + c, std::min(kChunk, n - c));
  }
}

GPT_VECTOR_CLONES void relu2_forward_range(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::max(x[i], 0.0f);
    y[i] = r * r;
  }
}

GPT_VECTOR_CLONES void relu2_backward_accumulate_range(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * (2.0f * std::max(x[i], 0.0f));
}

GPT_VECTOR_CLONES void relu2_backward_overwrite_range(const float* x, const float* dy, float* dx, int64_t n) {
  // 0 + : the bits of accumulating into zeros (dy * 0 may be -0).
  for (int64_t i = 0; i < n; ++i) dx[i] = 0.0f + dy[i] * (2.0f * std::max(x[i], 0.0f));
}

void relu2_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t c = 0; c < n; c += kChunk) relu2_forward_range(x + c, y + c, std::min(kChunk, n - c));
}

void relu2_backward(const float* x, const float* dy, float* dx, int64_t n, GradWrite write) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t c = 0; c < n; c += kChunk) {
    if (write == GradWrite::accumulate)
      relu2_backward_accumulate_range(x + c, dy + c, dx + c, std::min(kChunk, n - c));
    else
      relu2_backward_overwrite_range(x + c, dy + c, dx + c, std::min(kChunk, n - c));
  }
}

void identity_forward(const float* x, float* y, int64_t n) {
  if (y != x) std::copy(x, x + n, y);
}

void identity_backward(const float* dy, float* dx, int64_t n, GradWrite write) {
  if (write == GradWrite::overwrite) {
    if (dx != dy) std::copy(dy, dy + n, dx);
    return;
  }
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t i = 0; i < n; ++i) dx[i] += dy[i];
}

[[noreturn]] void unknown_activation(Activation act) {
  fail_check(__FILE__, __LINE__, "known activation", "activation " + std::to_string(static_cast<int>(act)));
}

}  // namespace

void activation_forward(Activation act, const float* x, float* y, int64_t n) {
  switch (act) {
    case Activation::none:
      return identity_forward(x, y, n);
    case Activation::gelu:
      return gelu_forward(x, y, n);
    case Activation::relu2:
      return relu2_forward(x, y, n);
  }
  unknown_activation(act);
}

void activation_backward(Activation act, const float* x, const float* dy, float* dx, int64_t n, GradWrite write) {
  switch (act) {
    case Activation::none:
      return identity_backward(dy, dx, n, write);
    case Activation::gelu:
      return gelu_backward(x, dy, dx, n, write);
    case Activation::relu2:
      return relu2_backward(x, dy, dx, n, write);
  }
  unknown_activation(act);
}

}  // namespace gpt
