// sum and mean of all elements to a scalar; summed in index order (double accumulator) so the
// result is deterministic and accurate for large tensors.
#include "ops/ops.h"

namespace gpt {

namespace {

Tensor scaled_sum(Graph& g, const Tensor& x, double factor) {
  const int64_t n = x.numel();
  Tensor out = g.make(Shape{}, x.requires_grad());
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += x.data[i];
  out.data[0] = static_cast<float>(total * factor);
  if (out.requires_grad())
    g.record(out, [=] {
      const float d = static_cast<float>(out.grad()[0] * factor);
      float* dx = x.grad_accumulator();
      for (int64_t i = 0; i < n; ++i) dx[i] += d;
    });
  return out;
}

}  // namespace

Tensor sum(Graph& g, const Tensor& x) { return scaled_sum(g, x, 1.0); }
Tensor mean(Graph& g, const Tensor& x) { return scaled_sum(g, x, 1.0 / static_cast<double>(x.numel())); }

}  // namespace gpt
