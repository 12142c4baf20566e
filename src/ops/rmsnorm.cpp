// RMSNorm over the last axis as an op: the kernels (kernels/rmsnorm.cpp) plus the tape record.
#include "kernels/rmsnorm.h"
#include "ops/ops.h"

namespace gpt {

Tensor rmsnorm(Graph& g, const Tensor& x, const Tensor& weight) {
  const int64_t C = x.shape.last(), rows = x.shape.rows();
  GPT_CHECK(weight.shape == Shape{C}, "rmsnorm weight " + weight.shape.str() + " for input " + x.shape.str());
  Tensor y = g.make(x.shape, detail::any_grad(x, weight));
  float* rstd = g.scratch(rows);
  rmsnorm_forward(x.data, weight.data, y.data, rstd, rows, C);
  if (y.requires_grad())
    g.record(y, [=] {
      rmsnorm_backward(x.data, weight.data, rstd, y.grad(), x.grad_accumulator(), weight.grad_accumulator(), rows, C);
    });
  return y;
}

}  // namespace gpt
