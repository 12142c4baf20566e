// The activations' kernels and the one dispatch every caller goes through. GELU is the exact (erf)
// form, as PyTorch's nn.GELU() default (nanoGPT uses this form): d/dx = Phi(x) + x phi(x), with
// Phi the standard normal CDF and phi its density; erf and exp come from fast_math.h so loops
// vectorise. ReLU^2: relu(x)^2, d/dx = 2 relu(x). SwiGLU: silu(g) u with silu(g) = g s(g), s the
// logistic sigmoid 1 / (1 + exp(-g)): d/du = silu(g), d/dg = u s(g) (1 + g (1 - s(g))).
#include "kernels/activation.h"

#include <algorithm>
#include <numbers>
#include <string>

#include "core/check.h"
#include "kernels/fast_math.h"
#include "kernels/parallel.h"
#include "kernels/row_sum.h"

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

// Parallel over fixed chunks so each thread runs a vectorised range; every value is computed on
// its own, so the split changes no bits.
constexpr int64_t kChunk = 4096;

// range(begin, count) over [0, n) in chunks of `chunk`, in parallel when n > parallel_above.
template <class Range>
void in_chunks(int64_t n, int64_t chunk, int64_t parallel_above, const Range& range) {
#pragma omp parallel for schedule(static) if (n > parallel_above)
  for (int64_t c = 0; c < n; c += chunk) range(c, std::min(chunk, n - c));
}

// An elementwise activation's forward and backward kernels over a range of n values.
using ForwardRange = void (*)(const float* x, float* y, int64_t n);
using BackwardRange = void (*)(const float* x, const float* dy, float* dx, int64_t n);

void elementwise_forward(ForwardRange forward, const float* x, float* y, int64_t n, int64_t parallel_above) {
  in_chunks(n, kChunk, parallel_above, [&](int64_t c, int64_t m) { forward(x + c, y + c, m); });
}

void elementwise_backward(BackwardRange accumulate, BackwardRange overwrite, const float* x, const float* dy, float* dx,
                          int64_t n, GradWrite write, int64_t parallel_above) {
  const BackwardRange backward = write == GradWrite::accumulate ? accumulate : overwrite;
  in_chunks(n, kChunk, parallel_above, [&](int64_t c, int64_t m) { backward(x + c, dy + c, dx + c, m); });
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

inline float sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

// gate, up: [n] (the two halves of one input row); y: [n].
GPT_VECTOR_CLONES void swiglu_forward_range(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

// The overwrite mode adds to 0 first: the bits of accumulating into zeros (dy * 0 may be -0).
template <GradWrite write>
GPT_VECTOR_CLONES void swiglu_backward_range(const float* gate, const float* up, const float* dy, float* dgate,
                                             float* dup, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i], s = sigmoid(g);
    const float d_gate = dy[i] * up[i] * (s * (1.0f + g * (1.0f - s))), d_up = dy[i] * (g * s);
    if constexpr (write == GradWrite::accumulate) {
      dgate[i] += d_gate;
      dup[i] += d_up;
    } else {
      dgate[i] = 0.0f + d_gate;
      dup[i] = 0.0f + d_up;
    }
  }
}

// One row per chunk: x's row r is [gate | up] at x + 2 r width.
void swiglu_forward(const float* x, float* y, int64_t rows, int64_t width) {
  GPT_CHECK(x != y, "swiglu cannot run in place");
  in_chunks(rows, 1, kParallelMinElementwiseTranscendental / std::max<int64_t>(width, 1), [&](int64_t r, int64_t) {
    swiglu_forward_range(x + 2 * r * width, x + (2 * r + 1) * width, y + r * width, width);
  });
}

void swiglu_backward(const float* x, const float* dy, float* dx, int64_t rows, int64_t width, GradWrite write) {
  GPT_CHECK(dx != dy, "swiglu's backward cannot run in place");
  in_chunks(rows, 1, kParallelMinElementwiseTranscendental / std::max<int64_t>(width, 1), [&](int64_t r, int64_t) {
    const float *gate = x + 2 * r * width, *up = gate + width, *d = dy + r * width;
    float *dgate = dx + 2 * r * width, *dup = dgate + width;
    if (write == GradWrite::accumulate)
      swiglu_backward_range<GradWrite::accumulate>(gate, up, d, dgate, dup, width);
    else
      swiglu_backward_range<GradWrite::overwrite>(gate, up, d, dgate, dup, width);
  });
}

void identity_forward(const float* x, float* y, int64_t n) {
  if (y != x) std::copy(x, x + n, y);
}

void identity_backward(const float* dy, float* dx, int64_t n, GradWrite write) {
  if (write == GradWrite::overwrite) {
    if (dx != dy) std::copy(dy, dy + n, dx);
    return;
  }
  accumulate(dy, dx, n);
}

[[noreturn]] void unknown_activation(Activation act) {
  fail_check(__FILE__, __LINE__, "known activation", "activation " + std::to_string(static_cast<int>(act)));
}

}  // namespace

void activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t width) {
  const int64_t n = rows * width;
  switch (act) {
    case Activation::none:
      return identity_forward(x, y, n);
    case Activation::gelu:
      return elementwise_forward(gelu_forward_range, x, y, n, kParallelMinElementwiseTranscendental);
    case Activation::relu2:
      return elementwise_forward(relu2_forward_range, x, y, n, kParallelMinElementwise);
    case Activation::swiglu:
      return swiglu_forward(x, y, rows, width);
  }
  unknown_activation(act);
}

void activation_backward(Activation act, const float* x, const float* dy, float* dx, int64_t rows, int64_t width,
                         GradWrite write) {
  const int64_t n = rows * width;
  switch (act) {
    case Activation::none:
      return identity_backward(dy, dx, n, write);
    case Activation::gelu:
      return elementwise_backward(gelu_backward_accumulate_range, gelu_backward_overwrite_range, x, dy, dx, n, write,
                                  kParallelMinElementwiseTranscendental);
    case Activation::relu2:
      return elementwise_backward(relu2_backward_accumulate_range, relu2_backward_overwrite_range, x, dy, dx, n, write,
                                  kParallelMinElementwise);
    case Activation::swiglu:
      return swiglu_backward(x, dy, dx, rows, width, write);
  }
  unknown_activation(act);
}

}  // namespace gpt
