// softmax over the last axis, and its backward dx = y (dy - sum(dy y)).
#include <cmath>
#include <limits>

#include "kernels/parallel.h"
#include "ops/ops.h"

namespace gpt {

namespace {

// Rows whose entries are all -inf (fully masked) produce zeros rather than NaN.
void softmax_forward(const float* x, float* y, int64_t rows, int64_t n) {
#pragma omp parallel for schedule(static) if (rows * n > kParallelMinRowReduction)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) max = std::fmax(max, xr[j]);
    if (max == -std::numeric_limits<float>::infinity()) {
      for (int64_t j = 0; j < n; ++j) yr[j] = 0.0f;
      continue;
    }
    float total = 0.0f;
    for (int64_t j = 0; j < n; ++j) total += (yr[j] = std::exp(xr[j] - max));  // max subtracted: no overflow
    const float inv = 1.0f / total;
    for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
  }
}

void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t n) {
#pragma omp parallel for schedule(static) if (rows * n > kParallelMinRowReduction)
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * n;
    const float* dyr = dy + r * n;
    float dot = 0.0f;
    for (int64_t j = 0; j < n; ++j) dot += dyr[j] * yr[j];
    for (int64_t j = 0; j < n; ++j) dx[r * n + j] += yr[j] * (dyr[j] - dot);
  }
}

}  // namespace

Tensor softmax(Graph& g, const Tensor& x) {
  const int64_t n = x.shape.last(), rows = x.shape.rows();
  Tensor out = g.make(x.shape, x.requires_grad());
  softmax_forward(x.data, out.data, rows, n);
  if (out.requires_grad())
    g.record(out, [=] { softmax_backward(out.data, out.grad(), x.grad_accumulator(), rows, n); });
  return out;
}

}  // namespace gpt
